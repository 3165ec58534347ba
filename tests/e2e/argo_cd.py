"""Argo CD's sync with ServerSideApply=true, as the upgrade tests (``test_chart_upgrade.py``)
apply a chart's renders: the tracking annotation, a forced server-side apply with Argo CD's
field manager, the prune, and the Job pod templates compared across applies.

``run_argo_syncs`` is the Argo CD test's sequence of syncs with its checks, kept here with
the sync it drives so the test module reads as the upgrade steps it takes.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.e2e.chart_releases import values
from tests.e2e.helm_runner import (
    Helm,
    Report,
    documents,
    job_names,
    live_jobs,
    once_completed,
    uids,
)

ARGO_MANAGER = "argocd-controller"


class ArgoCD:
    """Argo CD's sync with ServerSideApply=true and Prune=true, for one Application.

    Desired state is `helm template <app> <chart> -n <ns> -f values`; each object gets the
    tracking annotation, is server-side applied with field manager argocd-controller and
    force (`kubectl apply --server-side --force-conflicts`), and what the app tracks but the
    manifest no longer has is deleted (prune).
    """

    def __init__(self, kube: Any, helm: Helm, namespace: str) -> None:
        from kubernetes import dynamic

        new_client: Any = dynamic.DynamicClient
        self.dyn = new_client(kube)
        self.helm = helm
        self.namespace = namespace
        self.app = "argo-app"

    def render(self, chart: Path, vals: dict[str, Any]) -> list[dict[str, Any]]:
        done = self.helm.run("template", self.app, str(chart), vals=vals)
        assert done.returncode == 0, done.stderr
        out = []
        for doc in documents(done.stdout):
            meta = doc["metadata"]
            group = doc["apiVersion"].rpartition("/")[0]
            where = f"{meta['namespace']}/" if "namespace" in meta else ""
            tracking = f"{self.app}:{group}/{doc['kind']}:{where}{meta['name']}"
            meta.setdefault("annotations", {})["argocd.argoproj.io/tracking-id"] = tracking
            out.append(doc)
        return out

    def delete_cluster_scoped(self, docs: list[dict[str, Any]]) -> None:
        """The namespace's deletion takes the rest; a ClusterRole would outlive the test."""
        for doc in docs:
            resource = self.resource(doc)
            if not resource.namespaced:
                resource.delete(name=doc["metadata"]["name"])

    def resource(self, doc: dict[str, Any]) -> Any:
        return self.dyn.resources.get(api_version=doc["apiVersion"], kind=doc["kind"])

    def apply(self, docs: list[dict[str, Any]], *, dry_run: bool = False) -> list[Any]:
        applied = []
        for doc in docs:
            resource = self.resource(doc)
            kwargs: dict[str, Any] = {"field_manager": ARGO_MANAGER, "force_conflicts": True}
            if dry_run:
                kwargs["dry_run"] = "All"
            if resource.namespaced:
                kwargs["namespace"] = self.namespace
            applied.append(self.dyn.server_side_apply(resource, body=doc, **kwargs))
        return applied

    def prune(self, docs: list[dict[str, Any]]) -> list[str]:
        """Delete the tracked Jobs/CronJobs that are not in ``docs``; return their names."""
        wanted = {(d["kind"], d["metadata"]["name"]) for d in docs}
        pruned = []
        for api_version, kind in (("batch/v1", "Job"), ("batch/v1", "CronJob")):
            resource = self.dyn.resources.get(api_version=api_version, kind=kind)
            for item in resource.get(namespace=self.namespace).items:
                annotations = dict(item.metadata.annotations or {})
                tracked = annotations.get("argocd.argoproj.io/tracking-id", "")
                if tracked.startswith(f"{self.app}:") and (kind, item.metadata.name) not in wanted:
                    resource.delete(
                        name=item.metadata.name,
                        namespace=self.namespace,
                        body={"propagationPolicy": "Background"},
                    )
                    pruned.append(item.metadata.name)
        return sorted(pruned)


def job_templates(docs: list[Any]) -> dict[str, str]:
    """name -> JSON of spec.template of every Job among applied (live or dry-run) objects."""
    out = {}
    for obj in docs:
        body = obj.to_dict() if hasattr(obj, "to_dict") else obj
        if body["kind"] == "Job":
            out[body["metadata"]["name"]] = json.dumps(body["spec"]["template"], sort_keys=True)
    return out


def run_argo_syncs(
    argo: ArgoCD,
    kube: Any,
    namespace: str,
    *,
    first: list[dict[str, Any]],
    bumped: Path,
    report: Report,
) -> None:
    live_first = argo.apply(first)
    before = live_jobs(kube, namespace)
    assert len(job_names(before)) == 2, before
    before = once_completed(kube, namespace, before, what="the synced Jobs to succeed")
    report.table("after an Argo CD sync of chart 0.2.0 (server-side apply)", before)

    second = argo.render(bumped, values())
    # Argo CD's diff with ServerSideApply: a server-side dry run of the desired state. The
    # Job pod templates come back exactly as they are live: nothing is OutOfSync there.
    dry = argo.apply(second, dry_run=True)
    assert job_templates(dry) == job_templates(live_first)
    argo.apply(second)  # no "field is immutable"
    assert argo.prune(second) == []
    after = live_jobs(kube, namespace)
    report.table("after an Argo CD sync of chart 0.2.1 / appVersion 0.2.1, same values", after)
    assert uids(after) == uids(before), "a Job was replaced"
    assert {o["chart"] for o in after.values()} == {"autoroll-0.2.1"}

    # A changed job: exactly one new Job; the old one is pruned, the others keep their UID.
    third = argo.render(bumped, values(migrator_tag="v2"))
    argo.apply(third)
    pruned = argo.prune(third)
    changed = live_jobs(kube, namespace)
    report.table("after a sync with jobGroups.db.image.tag v1 -> v2", changed)
    report.add("pruned", "\n".join(pruned))
    report.flush("Argo CD server-side apply across chart releases")
    new_jobs = set(job_names(changed)) - set(job_names(after))
    gone = set(after) - set(changed)
    assert len(new_jobs) == 1 and next(iter(new_jobs)).startswith("argo-app-autoroll-db-migrate-")
    # The CronJob of group db changes too (its job template is hashed the same way): renamed.
    assert gone == set(pruned), (gone, pruned)
    assert {n for n in gone if after[n]["kind"] == "Job"} == {
        n for n in job_names(after) if n.startswith("argo-app-autoroll-db-migrate-")
    }
    kept = [n for n in after if n.startswith("argo-app-autoroll-search-reindex-")]
    assert kept and all(changed[n]["uid"] == after[n]["uid"] for n in kept)
