"""The whole pipeline for every entry: a mirror of ``autoroll.jobGroupPlan`` (``_jobs.tpl``).

``plan()`` is what ``helm template`` decides about jobGroups: which entries render, as which
kind, under which name, from which hashed spec, or which ``fail`` stops the render first.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from jobhash.errors import RenderError
from jobhash.gojson import GoValue
from jobhash.gotemplate import GoMap, go_default, go_empty, go_get, go_kind
from jobhash.guards import (
    controller_service_account,
    job_group_guard,
    job_group_service_account_guard,
)
from jobhash.layers import job_group_values
from jobhash.names import fullname, job_group_name
from jobhash.spec import job_group_hash, job_group_job_spec, job_group_spec, valid_key
from jobhash.writable import check_writable


@dataclass(frozen=True)
class PlanItem:
    """One rendered Job or CronJob."""

    group: str
    job: str
    kind: str
    name: str
    hash: str
    spec: str
    values: GoMap

    @property
    def sha8(self) -> str:
        return self.hash[:8]

    def job_spec(self) -> GoMap:
        """The Job ``.spec`` (or the CronJob's ``jobTemplate.spec``) exactly as rendered."""
        spec: GoMap = job_group_job_spec(
            spec_json=self.spec,
            hash_hex=self.hash,
            values=self.values,
            group=self.group,
            job=self.job,
        )
        return spec


def _sorted_keys(mapping: Mapping[str, GoValue]) -> list[str]:
    return sorted(mapping, key=lambda key: key.encode("utf-8"))


def plan(values: Mapping[str, GoValue], *, release: str, chart_name: str) -> list[PlanItem]:
    """``autoroll.jobGroupPlan``: every enabled entry, sorted by group then job.

    Raises :class:`RenderError` with the first ``fail`` the template would hit, in the same
    order. Keep in sync with ``_jobs.tpl`` autoroll.jobGroupPlan.
    """
    groups = go_default(go_get(values, "jobGroups"), {})
    if not isinstance(groups, dict):
        raise RenderError(
            "jobGroups: must be a map of group name to group settings, got " + go_kind(groups)
        )
    check_writable(values)
    prefix: str | None = None  # the template computes it only inside jobGroupName
    items: list[PlanItem] = []
    seen: dict[tuple[str, str], str] = {}  # (kind, name) -> the entry that has it
    for group in _sorted_keys(groups):
        if not valid_key(group):
            raise RenderError(
                f"jobGroups.{group}: a group key must be a DNS-1123 label (lowercase letters, "
                "digits and '-', starting and ending with a letter or digit, at most 63 "
                "characters)"
            )
        group_values = groups[group]
        if not isinstance(group_values, dict):
            raise RenderError(
                f"jobGroups.{group}: must be a map of group settings and jobs, "
                f"got {go_kind(group_values)}"
            )
        jobs = go_default(go_get(group_values, "jobs"), {})
        if not isinstance(jobs, dict):
            raise RenderError(
                f"jobGroups.{group}.jobs: must be a map of job name to job settings, "
                f"got {go_kind(jobs)}"
            )
        for job in _sorted_keys(jobs):
            if not valid_key(job):
                raise RenderError(
                    f"jobGroups.{group}.jobs.{job}: a job key must be a DNS-1123 label "
                    "(lowercase letters, digits and '-', starting and ending with a letter or "
                    "digit, at most 63 characters)"
                )
            effective = job_group_values(values, group, job)
            if go_empty(go_get(effective, "enabled")):
                continue
            job_group_guard(effective, group, job)
            if prefix is None:
                prefix = fullname(values, release, chart_name)
            job_group_service_account_guard(
                effective, group, job, controller_service_account(values, prefix)
            )
            kind = "Job" if go_empty(go_get(effective, "schedule")) else "CronJob"
            spec = job_group_spec(effective, group, job)
            hash_hex = job_group_hash(spec)
            hash_suffix = go_get(effective, "hashSuffix")
            if prefix is None:
                prefix = fullname(values, release, chart_name)
            name = job_group_name(
                fullname=prefix,
                group=group,
                job=job,
                hash_hex=hash_hex,
                hash_suffix=not go_empty(hash_suffix),
                kind=kind,
            )
            other = seen.setdefault((kind, name), f"jobGroups.{group}.jobs.{job}")
            if other != f"jobGroups.{group}.jobs.{job}":
                raise RenderError(
                    f'jobGroups.{group}.jobs.{job}: its {kind} name "{name}" is also the name '
                    f"of {other}; only the first 8 characters of a group key enter the name, so "
                    "rename one of the two groups so that their first 8 characters differ (or "
                    "rename one of the jobs)",
                    fix="rename one of the two groups so that their first 8 characters differ",
                )
            items.append(PlanItem(group, job, kind, name, hash_hex, spec, effective))
    return items
