"""Resource names: ``autoroll.fullname`` (``_helpers.tpl``) and ``autoroll.jobGroupName``.

Sprig's ``trunc`` cuts bytes, not characters, and ``trimSuffix "-"`` removes one dash; both are
reproduced. Keep in sync with ``charts/autoroll/templates/_helpers.tpl`` (autoroll.fullname) and
``_jobs.tpl`` (autoroll.jobGroupName).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from jobhash.errors import RenderError, UnmirrorableError
from jobhash.gojson import GoValue
from jobhash.gotemplate import go_empty

JOB_LIMIT = 63
"""A Job's name becomes the ``job-name`` label of its pods: a 63-character label value."""
CRONJOB_LIMIT = 52
"""The CronJob controller appends ``-<11 digits>`` to name the Jobs it creates."""

RELEASE_NAME = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
RELEASE_NAME_MAX = 53
DNS1123_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")


def trunc(count: int, text: str) -> str:
    """Sprig ``trunc`` for ``count >= 0``: the first ``count`` bytes.

    The schema keeps nameOverride and fullnameOverride ASCII and Helm validates release
    names, so a cut inside a character cannot happen after schema validation; the refusal
    stays for callers that skip it.
    """
    data = text.encode("utf-8")
    if len(data) <= count:
        return text
    try:
        return data[:count].decode("utf-8")
    except UnicodeDecodeError as err:
        raise UnmirrorableError(
            f"truncating {text!r} to {count} bytes splits a character; Helm would write "
            "invalid UTF-8 into the name",
            fix="use ASCII for the release name, nameOverride and fullnameOverride",
        ) from err


def trim_suffix(text: str, suffix: str = "-") -> str:
    """Sprig ``trimSuffix``: remove one trailing ``suffix``."""
    return text.removesuffix(suffix)


def validate_release_name(release: str) -> str | None:
    """Helm's ``ValidateReleaseName``: None when valid, else Helm's message."""
    if not release:
        return "no name provided"
    if len(release) > RELEASE_NAME_MAX or not RELEASE_NAME.fullmatch(release):
        return (
            "invalid release name, must match regex "
            r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
            " and the length must not be longer than 53"
        )
    return None


def fullname(values: Mapping[str, GoValue], release: str, chart_name: str) -> str:
    """``autoroll.fullname``: fullnameOverride, or ``<release>-<name>``, or the release name
    when it already contains the chart name; at most 63 bytes, one trailing ``-`` trimmed.

    Keep in sync with ``_helpers.tpl`` autoroll.fullname.
    """
    override = values.get("fullnameOverride")
    if not go_empty(override):
        if not isinstance(override, str):
            raise UnmirrorableError(
                "fullnameOverride must be a string for jobhash", fix="quote fullnameOverride"
            )
        return trim_suffix(trunc(63, override))
    name_override = values.get("nameOverride")
    name = chart_name if go_empty(name_override) else name_override
    if not isinstance(name, str):
        raise UnmirrorableError("nameOverride must be a string for jobhash", fix="quote it")
    if name in release:
        return trim_suffix(trunc(63, release))
    return trim_suffix(trunc(63, f"{release}-{name}"))


def name_limit(kind: str) -> int:
    """63 for a Job, 52 for a CronJob."""
    return CRONJOB_LIMIT if kind == "CronJob" else JOB_LIMIT


def job_group_name(
    *, fullname: str, group: str, job: str, hash_hex: str, hash_suffix: bool, kind: str
) -> str:
    """``autoroll.jobGroupName``: ``<fullname>-<group[:8]>-<job>[-<sha8>]`` within the limit.

    Every ``.`` of the fullname (a dotted release name) becomes ``-`` so the name stays a
    DNS-1123 label. Only the fullname part is shortened (``trunc`` to the budget, then
    ``trimSuffix "-"``); fails like the template when not one fullname byte fits.
    Keep in sync with ``_jobs.tpl`` autoroll.jobGroupName.
    """
    limit = name_limit(kind)
    suffix = f"-{trunc(8, group)}-{job}"
    if hash_suffix:
        suffix = f"{suffix}-{hash_hex[:8]}"
    budget = limit - len(suffix.encode())
    if budget < 1:
        raise RenderError(
            f'jobGroups.{group}.jobs.{job}: the name suffix "{suffix}" is '
            f"{len(suffix.encode())} characters, which leaves no room for the release name "
            f"within the {limit}-character {kind} name limit; use a shorter job key",
            fix="use a shorter job key (or group key); only the release part is shortened",
        )
    return trim_suffix(trunc(budget, fullname.replace(".", "-"))) + suffix


def name_problem(name: str, kind: str) -> str | None:
    """Why Kubernetes would reject this Job/CronJob name, or None (for ``jobhash check``)."""
    limit = name_limit(kind)
    if len(name) > limit:
        return f"is {len(name)} characters, over the {limit}-character {kind} limit"
    if not DNS1123_LABEL.fullmatch(name):
        return (
            "is not a DNS-1123 label (lowercase letters, digits and '-', starting and ending "
            "with a letter or digit)"
        )
    return None
