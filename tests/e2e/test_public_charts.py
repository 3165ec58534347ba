"""Workloads of charts other people wrote, installed with the real helm, enrolled and rolled
on the real node with no foreign pod touched (issue 23).

- ``helm create``'s scaffold, from the pinned helm itself: the starting point of a great many
  charts. Its ``helm test`` pod carries the Deployment's selector labels; ``helm test`` runs it
  for real (its ``busybox`` image is mirrored from the local registry, as an air-gapped
  cluster's containerd mirrors docker.io) and the pod is never touched.
- metrics-server's chart (``sigs.k8s.io/metrics-server``'s own ``charts/``, from its Go
  module: ``scripts/tools.sh`` exports ``AUTOROLL_METRICS_SERVER_CHART``), two replicas. Its
  image is pointed at the app image of this tier (a real metrics-server cannot serve here: the
  API server, on the host, cannot reach a pod to aggregate its API), so its port and probes
  are set by its own values to the app's, and the enrolment labels come from its
  ``commonLabels``: only values a user sets, the templates are the chart's.

Each is enrolled by labelling the Deployment *object*, as the README says, and rolled after a
push; the pod watch shows only its own original pods deleted, one at a time.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import IN_CI, require_tool
from tests.e2e.controller import StartAutoroll
from tests.e2e.deployment_pods import (
    ROLL_TIMEOUT,
    controlled_by,
    passes_about,
    raw_pods,
    wait_own,
)
from tests.e2e.enrolled_app import START_TIMEOUT, make_app, pass_done_now
from tests.e2e.helpers import apps_api, core_api
from tests.e2e.images import push_app
from tests.e2e.node import Node
from tests.e2e.scenario import (
    ENROLL_LABEL,
    TEST_LABEL,
    App,
    Recorder,
    deletions,
    unsettled_deletions,
)
from tests.support.registry import RegistryServer

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600)]


def helm(*args: str, kubeconfig: Path, check: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [require_tool("helm"), *args, "--kubeconfig", str(kubeconfig)],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    if check:
        assert done.returncode == 0, done.stderr
    return done


def enrol(kube: Any, namespace: str, deployment: str, test: str) -> None:
    """Label the Deployment object (not its template): enrolling rolls nothing by itself."""
    labels = {"metadata": {"labels": {ENROLL_LABEL: "true", TEST_LABEL: test}}}
    apps_api(kube).patch_namespaced_deployment(deployment, namespace, labels)


def as_app(app: App, name: str) -> App:
    """``app`` (its image and repository) as the workload a chart named ``name``."""
    app.name = name
    return app


def test_the_helm_create_scaffold_rolls_and_its_helm_test_pod_is_left_alone(
    *,
    kube: Any,
    namespace: str,
    docker_registry: RegistryServer,
    node: Node,
    start_autoroll: StartAutoroll,
    control_plane: Any,
    tmp_path: Path,
) -> None:
    kubeconfig = control_plane.kubeconfig
    helm("create", str(tmp_path / "scaffold"), kubeconfig=kubeconfig)
    app = make_app(kube, namespace, docker_registry, node)
    old = app.push()
    # `image: busybox` of its test pod: docker.io, mirrored from the local registry.
    node.mirror("docker.io", docker_registry.host, docker_registry.authorization)
    push_app(app.pusher, "library/busybox", build="busybox")
    values = {
        "replicaCount": 2,
        "image": {
            "repository": app.image.rsplit(":", 1)[0],
            "tag": "latest",
            "pullPolicy": "Always",
        },
        "service": {"port": 8080},  # the app serves there; the scaffold's probes ask it
    }
    (tmp_path / "values.yaml").write_text(yaml.safe_dump(values))
    release = "shop"
    helm(
        "install",
        release,
        str(tmp_path / "scaffold"),
        "-n",
        namespace,
        "-f",
        str(tmp_path / "values.yaml"),
        kubeconfig=kubeconfig,
    )
    web = as_app(app, f"{release}-scaffold")
    with Recorder(core_api(kube).list_namespaced_pod, namespace) as pods_of:
        wait_own(web, old, replicas=2, timeout=START_TIMEOUT, container_name="scaffold")
        enrol(kube, namespace, web.name, namespace)
        # The chart's own test, for real: a pod with the Deployment's selector labels. Its
        # `wget` is Debian's static busybox here, which dies of SIGSEGV before it connects
        # (static glibc without its NSS modules), so the test's verdict is not asserted; the
        # chart's own `helm test` passing on this node is test_incluster.py's.
        tested = helm(
            "test", release, "-n", namespace, "--timeout", "60s", kubeconfig=kubeconfig, check=False
        )
        test_pod = f"{web.name}-test-connection"
        assert test_pod in {p["metadata"]["name"] for p in raw_pods(kube, namespace, "")}, (
            tested.stderr
        )
        autoroll = start_autoroll()
        pass_done_now(autoroll, web)
        new = app.push()
        wait_own(web, new, replicas=2, timeout=ROLL_TIMEOUT, container_name="scaffold")
        passes_about(autoroll, web, 2, pattern=r": current \(")
    history = [p for p in pods_of.pods() if p.name != test_pod]
    deleted = deletions(history)
    assert len(deleted) == 2 and all(d.digest == old for d in deleted), deleted
    assert not [p for p in pods_of.pods() if p.name == test_pod and p.terminating]
    assert not unsettled_deletions(
        [p for p in history if p.name.startswith(f"{web.name}-") and p.name != test_pod], 2
    )


@contextlib.contextmanager
def uninstalled(release: str, namespace: str, kubeconfig: Path) -> Iterator[None]:
    """``helm uninstall`` the release afterwards, whatever happened."""
    try:
        yield
    finally:
        helm("uninstall", release, "-n", namespace, kubeconfig=kubeconfig, check=False)


def metrics_server_chart() -> Path:
    found = os.environ.get("AUTOROLL_METRICS_SERVER_CHART", "")
    if not found or not (Path(found) / "Chart.yaml").exists():
        message = "AUTOROLL_METRICS_SERVER_CHART is not set (run `make tools`)"
        if IN_CI:
            pytest.fail(message)
        pytest.skip(message)
    return Path(found)


def test_the_metrics_server_chart_rolls_one_pod_at_a_time(
    *,
    kube: Any,
    namespace: str,
    docker_registry: RegistryServer,
    node: Node,
    start_autoroll: StartAutoroll,
    control_plane: Any,
    tmp_path: Path,
) -> None:
    chart = metrics_server_chart()
    app = make_app(kube, namespace, docker_registry, node)
    old = app.push()
    served = {"httpGet": {"path": "/", "port": "https", "scheme": "HTTP"}, "periodSeconds": 1}
    values = {
        "image": {
            "repository": app.image.rsplit(":", 1)[0],
            "tag": "latest",
            "pullPolicy": "Always",
        },
        "replicas": 2,
        "containerPort": 8080,
        "readinessProbe": {**served, "initialDelaySeconds": 1},
        "livenessProbe": served,
        "priorityClassName": "",
        "apiService": {"create": False},  # no aggregated API to serve (the app is not one)
        "commonLabels": {ENROLL_LABEL: "true", TEST_LABEL: namespace},
    }
    (tmp_path / "values.yaml").write_text(yaml.safe_dump(values))
    kubeconfig = control_plane.kubeconfig
    helm(
        "install",
        "metrics",
        str(chart),
        "-n",
        namespace,
        "-f",
        str(tmp_path / "values.yaml"),
        kubeconfig=kubeconfig,
    )
    server = as_app(app, "metrics-metrics-server")
    with (
        Recorder(core_api(kube).list_namespaced_pod, namespace) as pods_of,
        uninstalled("metrics", namespace, kubeconfig),  # its ClusterRoles outlive the namespace
    ):
        wait_own(server, old, replicas=2, timeout=START_TIMEOUT, container_name="metrics-server")
        autoroll = start_autoroll()
        pass_done_now(autoroll, server)
        new = app.push()
        wait_own(server, new, replicas=2, timeout=ROLL_TIMEOUT, container_name="metrics-server")
        passes_about(autoroll, server, 2, pattern=r": current \(")
        # Before the uninstall (it deletes the pods): the roll's history alone.
        history = [p for p in pods_of.pods() if p.name.startswith(f"{server.name}-")]
    deleted = deletions(history)
    assert len(deleted) == 2 and all(d.digest == old for d in deleted), deleted
    assert not unsettled_deletions(history, 2)
    others = [p for p in raw_pods(kube, namespace, "") if not controlled_by(p, server.name)]
    assert all(not p["metadata"].get("deletionTimestamp") for p in others)
