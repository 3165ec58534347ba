"""Issue 7 scenario 10: the chart on the real API server, with real ``helm``.

The controller and a job group (a Job and a CronJob) are installed together, with every
optional built-in kind switched on: Ingress and NetworkPolicy, plus ServiceMonitor and
HTTPRoute through minimal stand-ins for their CRDs (the real ones are large and not needed to
show that the chart's objects are accepted: kind, group, version and scope must match).

What is shown:
- every rendered object passes a strict server-side dry run (unknown fields are errors), and
  ``helm install`` creates every one of them;
- ``helm upgrade`` with the same values keeps every Job (same names, same UIDs);
- a tag bump gives the Job and CronJob new names and Helm prunes the old ones;
- the fail-fast guard (hashSuffix + a hook-succeeded delete policy) fails ``helm install``
  with its message, and nothing is installed;
- ``jobhash names`` predicts exactly the Job and CronJob names found in the cluster.
"""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import require_tool
from tests.e2e.helpers import batch_api
from tests.support.wait import eventually

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]
CHART = REPO / "charts" / "autoroll"
RELEASE = "e2e"
GUARD_MESSAGE = "hashSuffix is true and hooks.helm.deletePolicy contains hook-succeeded"

# Minimal CRDs: the served group/version/kind/scope of the real ones, any content accepted.
STAND_IN_CRDS = [
    ("monitoring.coreos.com", "v1", "ServiceMonitor", "servicemonitors"),
    ("gateway.networking.k8s.io", "v1", "HTTPRoute", "httproutes"),
]


def values(*, job_tag: str = "v1") -> dict[str, Any]:
    """Controller + one job group, every optional kind on (names are documentation ones)."""
    return {
        "forgejo": {"host": "forgejo.e2e.example", "user": "autoroll-bot"},
        "image": {"repository": "forgejo.e2e.example/ops/autoroll"},
        "secret": {"forgejoToken": "e2e-token-not-secret", "webhookSecret": "w" * 32},
        "ingress": {"enabled": True, "host": "hooks.e2e.example"},
        "networkPolicy": {
            "enabled": True,
            "registry": {"cidrs": ["192.0.2.10/32"]},
            "apiServer": {"cidrs": ["198.51.100.0/28"]},
        },
        "serviceMonitor": {"enabled": True},
        "httpRoute": {"enabled": True, "parentRefs": [{"name": "public"}]},
        "jobGroups": {
            "db": {
                "image": {"repository": "forgejo.e2e.example/ops/migrator", "tag": job_tag},
                "jobs": {
                    "migrate": {"command": "./migrate.sh"},
                    "vacuum": {"schedule": "30 3 * * *", "command": ["./vacuum.sh"]},
                },
            }
        },
    }


class Helm:
    """``helm`` against the e2e control plane, in one namespace."""

    def __init__(self, binary: str, kubeconfig: Path, namespace: str, workdir: Path) -> None:
        self.binary = binary
        self.kubeconfig = kubeconfig
        self.namespace = namespace
        self.workdir = workdir

    def values_file(self, vals: dict[str, Any]) -> Path:
        path = self.workdir / f"values-{len(list(self.workdir.iterdir()))}.yaml"
        path.write_text(yaml.safe_dump(vals))
        return path

    def run(
        self, *args: str, vals: dict[str, Any] | None = None
    ) -> subprocess.CompletedProcess[str]:
        command = [self.binary, *args, "--kubeconfig", str(self.kubeconfig), "-n", self.namespace]
        if vals is not None:
            command += ["-f", str(self.values_file(vals))]
        return subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)

    def ok(self, *args: str, vals: dict[str, Any] | None = None) -> str:
        done = self.run(*args, vals=vals)
        assert done.returncode == 0, f"helm {' '.join(args)}: {done.stderr}"
        return done.stdout


def documents(manifest: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(manifest) if d]


@pytest.fixture(scope="module")
def stand_in_crds(kube: Any) -> None:
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException

    api: Any = client.ApiextensionsV1Api(kube)
    for group, version, kind, plural in STAND_IN_CRDS:
        body = {
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {
                "name": f"{plural}.{group}",
                # *.k8s.io groups are protected; the real Gateway API CRDs carry this too.
                "annotations": {
                    "api-approved.kubernetes.io": "https://github.com/kubernetes-sigs/gateway-api/pull/1538"
                }
                if group.endswith(".k8s.io")
                else {},
            },
            "spec": {
                "group": group,
                "scope": "Namespaced",
                "names": {"kind": kind, "plural": plural, "singular": kind.lower()},
                "versions": [
                    {
                        "name": version,
                        "served": True,
                        "storage": True,
                        "schema": {
                            "openAPIV3Schema": {
                                "type": "object",
                                "x-kubernetes-preserve-unknown-fields": True,
                            }
                        },
                    }
                ],
            },
        }
        try:
            api.create_custom_resource_definition(body)
        except ApiException as exc:
            if exc.status != 409:
                raise

    def established() -> None:
        for group, _, _, plural in STAND_IN_CRDS:
            crd = api.read_custom_resource_definition(f"{plural}.{group}")
            conditions = {c.type: c.status for c in (crd.status.conditions or [])}
            assert conditions.get("Established") == "True", (plural, conditions)

    eventually(established, timeout=30, what="the stand-in CRDs to be established")


@pytest.fixture
def helm(kubeconfig: Path, namespace: str, tmp_path: Path, stand_in_crds: None) -> Iterator[Helm]:
    runner = Helm(require_tool("helm"), kubeconfig, namespace, tmp_path)
    yield runner
    runner.run("uninstall", RELEASE, "--wait=false")


def dynamic(kube: Any) -> Any:
    from kubernetes import dynamic as kube_dynamic

    new_client: Any = kube_dynamic.DynamicClient
    return new_client(kube)


def resource_path(dyn: Any, doc: dict[str, Any], namespace: str) -> tuple[Any, str]:
    resource = dyn.resources.get(api_version=doc["apiVersion"], kind=doc["kind"])
    return resource, resource.path(namespace=namespace if resource.namespaced else None)


def jobs_and_cronjobs(kube: Any, namespace: str) -> dict[str, str]:
    """name → uid of every Job and CronJob of the release."""
    batch = batch_api(kube)
    selector = f"app.kubernetes.io/instance={RELEASE}"
    found = {}
    for item in [
        *batch.list_namespaced_job(namespace, label_selector=selector).items,
        *batch.list_namespaced_cron_job(namespace, label_selector=selector).items,
    ]:
        found[item.metadata.name] = item.metadata.uid
    return found


def jobhash_names(helm: Helm, vals: dict[str, Any]) -> list[str]:
    """``jobhash names`` for the release: the Job and CronJob names it predicts, sorted."""
    args = ["names", "--release", RELEASE, "--chart", str(CHART), "-o", "json"]
    done = subprocess.run(
        [sys.executable, "-m", "jobhash", *args, "-f", str(helm.values_file(vals))],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return sorted(entry["name"] for entry in json.loads(done.stdout))


def test_chart_installs_upgrades_and_prunes_jobs_on_the_real_api(
    helm: Helm, kube: Any, namespace: str
) -> None:
    dyn = dynamic(kube)
    rendered = documents(helm.ok("template", RELEASE, str(CHART), vals=values()))
    kinds = sorted({d["kind"] for d in rendered})
    for kind in ("CronJob", "Deployment", "HTTPRoute", "Ingress", "Job", "NetworkPolicy"):
        assert kind in kinds, kinds
    assert "ServiceMonitor" in kinds, kinds

    # Strict server-side dry run: the API server validates each object as it would store it,
    # and an unknown or misspelt field is an error rather than a silently dropped warning.
    rejected = {}
    for doc in rendered:
        _, path = resource_path(dyn, doc, namespace)
        try:
            dyn.request(
                "POST",
                path,
                body=doc,
                query_params=[("dryRun", "All"), ("fieldValidation", "Strict")],
            )
        except Exception as exc:
            rejected[f"{doc['kind']}/{doc['metadata']['name']}"] = str(exc)[:400]
    assert rejected == {}

    helm.ok("install", RELEASE, str(CHART), vals=values())
    installed = documents(helm.ok("get", "manifest", RELEASE))
    # Hooks (the `helm test` pod) are not part of the release's manifest.
    released = [d for d in rendered if "helm.sh/hook" not in d["metadata"].get("annotations", {})]
    assert sorted((d["kind"], d["metadata"]["name"]) for d in installed) == sorted(
        (d["kind"], d["metadata"]["name"]) for d in released
    )
    for doc in installed:
        resource, _ = resource_path(dyn, doc, namespace)
        kwargs = {"namespace": namespace} if resource.namespaced else {}
        live = resource.get(name=doc["metadata"]["name"], **kwargs)
        assert live.metadata.uid, f"{doc['kind']}/{doc['metadata']['name']} not in the cluster"

    first = jobs_and_cronjobs(kube, namespace)
    assert len(first) == 2, first
    assert jobhash_names(helm, values()) == sorted(first)

    # Same values: the same Jobs, not new ones (a new Job would run the migration again).
    helm.ok("upgrade", RELEASE, str(CHART), vals=values())
    assert jobs_and_cronjobs(kube, namespace) == first

    # A tag bump is a new spec: new names; Helm prunes the old ones.
    helm.ok("upgrade", RELEASE, str(CHART), vals=values(job_tag="v2"))
    bumped = documents(helm.ok("get", "manifest", RELEASE))
    expected = sorted(d["metadata"]["name"] for d in bumped if d["kind"] in ("Job", "CronJob"))
    assert not set(expected) & set(first), "the tag bump did not rename the Job and CronJob"

    def pruned() -> None:
        assert sorted(jobs_and_cronjobs(kube, namespace)) == expected

    eventually(pruned, timeout=30, what="the old Job and CronJob to be pruned")
    assert jobhash_names(helm, values(job_tag="v2")) == expected


def test_fail_fast_guard_fails_helm_install_with_its_message(
    helm: Helm, kube: Any, namespace: str
) -> None:
    bad = copy.deepcopy(values())
    bad["jobGroups"]["db"]["jobs"]["migrate"]["hooks"] = {
        "helm": {"hook": "pre-upgrade", "deletePolicy": "hook-succeeded"}
    }
    done = helm.run("install", RELEASE, str(CHART), vals=bad)
    assert done.returncode != 0
    assert "jobGroups.db.jobs.migrate: " + GUARD_MESSAGE in done.stderr, done.stderr
    assert "Traceback" not in done.stderr
    status = helm.run("status", RELEASE)
    assert status.returncode != 0 and "not found" in status.stderr, "a release was recorded"
    assert jobs_and_cronjobs(kube, namespace) == {}
