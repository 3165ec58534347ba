"""Job groups on the real node: the chart's spec-hash-named Jobs run real containers.

A migration Job (busybox printing a line and exiting 0) is installed with ``helm install``
(``controller.enabled: false``, so only the job group renders) and must:

- run to completion exactly once (one pod, ``succeeded: 1``);
- run nothing again on ``helm upgrade`` with the same values, nor on an upgrade to a new
  chart version (same Job object, no new pod);
- run the new Job once on a tag bump (one new pod; Helm prunes the old Job).

"Nothing again" is checked over a watch of every pod in the namespace, from before the install.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import require_tool
from tests.e2e.helpers import batch_api, core_api
from tests.e2e.images import push_job
from tests.e2e.scenario import Recorder
from tests.e2e.test_chart import CHART, Helm
from tests.support.registry import ImagePusher, RegistryServer
from tests.support.wait import eventually

pytestmark = pytest.mark.e2e

RELEASE = "jobs"
#: After an upgrade, how long "no new pod" is watched for. A Job the upgrade re-created has
#: a new UID, seen at once; this window is for a pod started by the Job controller, which
#: starts the install's pod within about a second here.
QUIET_SECONDS = 4.0


def job_values(registry: RegistryServer, repository: str, tag: str) -> dict[str, Any]:
    return {
        "controller": {"enabled": False},
        "jobGroups": {
            "db": {
                "image": {"repository": f"{registry.host}/{repository}", "tag": tag},
                # The image runs as root; the default restricted profile wants a non-root UID.
                "podSecurityContext": {"runAsUser": 65534},
                "jobs": {"migrate": {}},
            }
        },
    }


def release_jobs(kube: Any, namespace: str) -> dict[str, Any]:
    """name → Job of the release."""
    listed = batch_api(kube).list_namespaced_job(
        namespace, label_selector=f"app.kubernetes.io/instance={RELEASE}"
    )
    return {job.metadata.name: job for job in listed.items}


def job_pods(recorder: Recorder) -> dict[str, str]:
    """uid → job name of every Job pod the watch has seen."""
    found: dict[str, str] = {}
    for _, _, raw in list(recorder.events):
        labels = raw["metadata"].get("labels") or {}
        if "job-name" in labels:
            found[raw["metadata"]["uid"]] = labels["job-name"]
    return found


def completed_once(kube: Any, namespace: str, name: str) -> Any:
    def done() -> Any:
        job = batch_api(kube).read_namespaced_job_status(name, namespace)
        assert (job.status.succeeded or 0) == 1, job.status
        return job

    return eventually(done, timeout=120, interval=0.5, what=f"Job {name} to succeed")


def installed_once(helm: Helm, kube: Any, namespace: str, vals: dict[str, Any]) -> tuple[str, Any]:
    """``helm install`` with ``vals``: the release's one Job's name, and the Job once it has
    completed."""
    helm.ok("install", RELEASE, str(CHART), vals=vals)
    (name,) = release_jobs(kube, namespace)
    return name, completed_once(kube, namespace, name)


@pytest.fixture
def helm(kubeconfig: Path, namespace: str, tmp_path: Path) -> Iterator[Helm]:
    runner = Helm(require_tool("helm"), kubeconfig, namespace, tmp_path)
    yield runner
    runner.run("uninstall", RELEASE, "--wait=false")


def bumped_chart(tmp_path: Path) -> Path:
    """A copy of the chart with the next patch version: what a chart release is to Helm."""
    copy = tmp_path / "chart-next" / "autoroll"
    shutil.copytree(CHART, copy, ignore=shutil.ignore_patterns("tests"))
    meta = yaml.safe_load((copy / "Chart.yaml").read_text())
    major, minor, patch = (int(x) for x in str(meta["version"]).split("."))
    meta["version"] = f"{major}.{minor}.{patch + 1}"
    (copy / "Chart.yaml").write_text(yaml.safe_dump(meta, sort_keys=False))
    return copy


@pytest.mark.usefixtures("node")
def test_a_migration_job_runs_once_same_values_rerun_nothing_and_a_tag_bump_runs_once(
    helm: Helm, kube: Any, namespace: str, docker_registry: RegistryServer
) -> None:
    pusher = ImagePusher(docker_registry)
    repository = f"e2e/{namespace}-migrator"
    push_job(pusher, repository, "v1", build="v1")
    push_job(pusher, repository, "v2", build="v2")
    v1 = job_values(docker_registry, repository, "v1")

    with Recorder(core_api(kube).list_namespaced_pod, namespace) as pods:
        name, first = installed_once(helm, kube, namespace, v1)
        assert list(job_pods(pods).values()) == [name], "exactly one pod ran"

        helm.ok("upgrade", RELEASE, str(CHART), vals=v1)
        time.sleep(QUIET_SECONDS)  # a Job the upgrade re-created would have started a pod
        assert {n: j.metadata.uid for n, j in release_jobs(kube, namespace).items()} == {
            name: first.metadata.uid
        }
        assert list(job_pods(pods).values()) == [name], "the same values ran something"

        bumped = job_values(docker_registry, repository, "v2")
        helm.ok("upgrade", RELEASE, str(CHART), vals=bumped)

        def pruned() -> str:
            current = set(release_jobs(kube, namespace))
            assert name not in current and len(current) == 1, current
            return current.pop()

        new = eventually(pruned, timeout=30, what="the old Job pruned, the new one created")
        completed_once(kube, namespace, new)
        ran = list(job_pods(pods).values())
        assert ran == [name, new], f"pods per Job: {ran}"
    assert not pods.errors, pods.errors


@pytest.mark.usefixtures("node")
def test_an_upgrade_to_a_new_chart_version_runs_nothing_again(
    helm: Helm, kube: Any, namespace: str, docker_registry: RegistryServer, tmp_path: Path
) -> None:
    pusher = ImagePusher(docker_registry)
    repository = f"e2e/{namespace}-migrator"
    push_job(pusher, repository, "v1", build="v1")
    v1 = job_values(docker_registry, repository, "v1")

    with Recorder(core_api(kube).list_namespaced_pod, namespace) as pods:
        name, first = installed_once(helm, kube, namespace, v1)

        helm.ok("upgrade", RELEASE, str(bumped_chart(tmp_path)), vals=v1)
        time.sleep(QUIET_SECONDS)  # a Job the upgrade re-created would have started a pod
        jobs = release_jobs(kube, namespace)
        assert {n: j.metadata.uid for n, j in jobs.items()} == {name: first.metadata.uid}
        assert list(job_pods(pods).values()) == [name], "the new chart version ran the Job again"
    assert not pods.errors, pods.errors
