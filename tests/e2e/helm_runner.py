"""``helm`` against the e2e control plane for the upgrade tests (``test_chart_upgrade.py``):
a runner that reports every call, the report it writes (helm's output and the Job tables),
and what the tests read back from the cluster (the chart's Jobs and CronJobs, the
controller's environment).

Kept apart from the tests so they read as the upgrade steps they take.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from tests.e2e.helpers import batch_api, core_api
from tests.support.wait import eventually


@dataclass
class Report:
    """What the closing note quotes: helm's output and the Job tables, step by step."""

    lines: list[str] = field(default_factory=list)

    def add(self, title: str, text: str) -> None:
        self.lines += [f"### {title}", text.rstrip(), ""]

    def table(self, title: str, objects: dict[str, dict[str, str]]) -> None:
        rows = [("KIND", "NAME", "UID", "helm.sh/chart", "pods")]
        rows += [
            (o["kind"], name, o["uid"], o["chart"], o["pods"])
            for name, o in sorted(objects.items())
        ]
        widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
        text = "\n".join(
            "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) for r in rows
        )
        self.add(title, text)

    def flush(self, name: str) -> None:
        print("\n".join([f"===== {name}", *self.lines]))
        target = os.environ.get("AUTOROLL_E2E_UPGRADE_REPORT")
        if target:
            with open(target, "a", encoding="utf-8") as out:
                out.write("\n".join([f"===== {name}", *self.lines, ""]))


class Helm:
    """``helm`` against the e2e control plane in one namespace; every call is reported."""

    def __init__(
        self, binary: str, kubeconfig: Path, namespace: str, workdir: Path, release: str
    ) -> None:
        self.binary = binary
        self.kubeconfig = kubeconfig
        self.namespace = namespace
        self.workdir = workdir
        self.release = release  # one per test: the chart's ClusterRole is named after it
        self.count = 0
        workdir.mkdir(parents=True, exist_ok=True)

    def run(self, *args: str, vals: dict[str, Any]) -> subprocess.CompletedProcess[str]:
        self.count += 1
        path = self.workdir / f"values-{self.count}.yaml"
        path.write_text(yaml.safe_dump(vals), encoding="utf-8")
        command = [self.binary, *args, "--kubeconfig", str(self.kubeconfig), "-n", self.namespace]
        command += ["-f", str(path)]
        return subprocess.run(command, capture_output=True, text=True, timeout=180, check=False)

    def ok(self, report: Report, *args: str, vals: dict[str, Any]) -> str:
        done = self.run(*args, vals=vals)
        shown = " ".join(a if "/" not in a else Path(a).name for a in args)
        report.add(f"$ helm {shown} -f values.yaml  (exit {done.returncode})", done.stdout)
        assert done.returncode == 0, f"helm {' '.join(args)}: {done.stderr}"
        return done.stdout


def live_jobs(kube: Any, namespace: str) -> dict[str, dict[str, str]]:
    """name -> {kind, uid, chart label, pods created} of every Job and CronJob in the namespace
    (the ones the chart renders carry autoroll.aethnet.se/job-group)."""
    batch = batch_api(kube)
    selector = "autoroll.aethnet.se/job-group"
    pods: dict[str, int] = {}
    for pod in core_api(kube).list_namespaced_pod(namespace).items:
        owner = (pod.metadata.labels or {}).get("batch.kubernetes.io/job-name")
        if owner:
            pods[owner] = pods.get(owner, 0) + 1
    found = {}
    for kind, items in (
        ("Job", batch.list_namespaced_job(namespace, label_selector=selector).items),
        ("CronJob", batch.list_namespaced_cron_job(namespace, label_selector=selector).items),
    ):
        for item in items:
            found[item.metadata.name] = {
                "kind": kind,
                "uid": item.metadata.uid,
                "chart": (item.metadata.labels or {}).get("helm.sh/chart", ""),
                "pods": str(pods.get(item.metadata.name, 0)) if kind == "Job" else "-",
            }
    return found


def uids(objects: dict[str, dict[str, str]]) -> dict[str, str]:
    return {name: o["uid"] for name, o in objects.items()}


def jobs_completed(kube: Any, namespace: str, names: list[str]) -> None:
    batch = batch_api(kube)
    for name in names:
        job = batch.read_namespaced_job(name, namespace)
        assert (job.status.succeeded or 0) >= 1, f"Job {name} has not succeeded yet"


def job_names(objects: dict[str, dict[str, str]]) -> list[str]:
    return sorted(name for name, o in objects.items() if o["kind"] == "Job")


def once_completed(
    kube: Any, namespace: str, objects: dict[str, dict[str, str]], *, what: str
) -> dict[str, dict[str, str]]:
    """Wait until every Job of ``objects`` has succeeded; the Jobs and CronJobs live then
    (each Job's pod count included)."""
    eventually(lambda: jobs_completed(kube, namespace, job_names(objects)), timeout=90, what=what)
    return live_jobs(kube, namespace)


def documents(manifest: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(manifest) if d]


def deployment_env(kube: Any, namespace: str, release: str) -> dict[str, str]:
    from kubernetes import client as k8s

    apps = k8s.AppsV1Api(kube)
    deployment: Any = apps.read_namespaced_deployment(f"{release}-autoroll", namespace)
    [container] = deployment.spec.template.spec.containers
    return {e.name: e.value for e in container.env or [] if e.value is not None}
