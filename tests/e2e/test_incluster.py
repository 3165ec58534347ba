"""The user's install, for real: ``helm install`` of the chart with the controller image built
from the Dockerfile, the controller running as a pod on the real node (``incluster.py``).

What a pod gives that a local process cannot: the chart's Deployment, ServiceAccount, RBAC,
security context, in-cluster configuration and the image itself, all together.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import require_tool
from tests.e2e.controller import Autoroll
from tests.e2e.controlplane import ControlPlane
from tests.e2e.helpers import core_api
from tests.e2e.incluster import POD_SELECTOR, installed_autoroll
from tests.e2e.node import Node
from tests.e2e.scenario import (
    App,
    Recorder,
    became_ready,
    decision_lines,
    deletions,
    label_selector,
    metric,
    unsettled_deletions,
)
from tests.support.registry import ImagePusher, RegistryServer
from tests.support.wait import eventually

# The first test here may build the controller image cold (tests/support/image.py allows
# 1200 s): a session fixture's setup counts against the test that first asks for it, and this
# file is collected before test_scenarios.py, whose tests then reuse the image.
pytestmark = [pytest.mark.e2e, pytest.mark.timeout(1500)]

POLL = 5
SLACK = 4.0


@pytest.fixture
def in_cluster(  # noqa: PLR0917 - pytest passes fixtures by name
    control_plane: ControlPlane,
    kube: Any,
    kubeconfig: Path,
    node: Node,
    docker_registry: RegistryServer,
    controller_image: str,
    namespace: str,
    tmp_path: Path,
) -> Iterator[Autoroll]:
    with installed_autoroll(
        helm=require_tool("helm"),
        kubeconfig=kubeconfig,
        kube=kube,
        plane=control_plane,
        node=node,
        registry=docker_registry,
        image=controller_image,
        namespace=namespace,
        workdir=tmp_path,
        poll_seconds=POLL,
        env={"LABEL_SELECTOR": label_selector(namespace)},
    ) as autoroll:
        yield autoroll
        print("--- autoroll pod output ---", *autoroll.output, sep="\n")


def _controller_pod(kube: Any, namespace: str) -> dict[str, Any]:
    listed = core_api(kube).list_namespaced_pod(
        namespace, label_selector=POD_SELECTOR, _preload_content=False
    )
    items: list[dict[str, Any]] = json.loads(listed.data)["items"]
    (pod,) = [p for p in items if "deletionTimestamp" not in p["metadata"]]
    return pod


def test_the_chart_runs_the_controller_image_as_a_restricted_pod_on_the_node(
    in_cluster: Autoroll, kube: Any, namespace: str, node: Node, controller_image: str
) -> None:
    def ready() -> dict[str, Any]:
        pod = _controller_pod(kube, namespace)
        assert pod["status"]["containerStatuses"][0]["ready"], "the chart's probe every 10 s"
        return pod

    pod = eventually(ready, timeout=30, what="the controller pod Ready")
    spec = pod["spec"]
    assert spec["nodeName"] == node.name
    assert spec["serviceAccountName"] == "autoroll"
    (container,) = spec["containers"]
    assert container["image"] == controller_image
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    assert container["securityContext"]["capabilities"] == {"drop": ["ALL"]}
    assert spec["securityContext"]["runAsUser"] == 10001
    status = pod["status"]["containerStatuses"][0]
    assert status["imageID"].startswith(controller_image.rpartition(":")[0])
    # In-cluster configuration: the ServiceAccount token, not a kubeconfig, reached the API.
    assert in_cluster.lines(r"autoroll|gunicorn"), "no output from the pod"
    assert metric(in_cluster, "autoroll_ticks_total", {"outcome": "ok"}) >= 1


def test_the_in_cluster_controller_rolls_a_push_one_pod_at_a_time_and_the_webhook_within_seconds(
    in_cluster: Autoroll, kube: Any, namespace: str, docker_registry: RegistryServer
) -> None:
    app = App(
        kube=kube,
        namespace=namespace,
        name="web",
        repository=f"e2e/{namespace}",
        pusher=ImagePusher(docker_registry),
        test=namespace,
        ready_after=2.0,
    )
    with Recorder(core_api(kube).list_namespaced_pod, namespace) as pods:
        old = app.push()
        app.deploy(replicas=3)
        app.wait_rolled(old, replicas=3, timeout=90)
        eventually(
            lambda: _nonempty(decision_lines(in_cluster, app, r": current \(")),
            timeout=2 * POLL + SLACK,
            what="the pod's first decision about the app",
        )
        generation = app.deployment()["metadata"]["generation"]
        new = app.push()
        sent = time.monotonic()
        assert in_cluster.webhook() == 202
        first = eventually(
            lambda: _nonempty(deletions(pods.pods()))[0],
            timeout=10,
            interval=0.05,
            what="a deletion",
        )
        assert first.at - sent <= 2.0, f"webhook to first deletion: {first.at - sent:.2f}s"
        app.wait_rolled(new, replicas=3, timeout=3 * (POLL + 2 + 2 * SLACK))
    history = [p for p in pods.pods() if p.name.startswith("web-")]
    assert [d.digest for d in deletions(history)] == [old] * 3
    assert unsettled_deletions(history, replicas=3) == []
    assert len(became_ready(history, new)) == 3
    assert app.deployment()["metadata"]["generation"] == generation
    assert metric(in_cluster, "autoroll_pod_deletions_total", {"mode": "real"}) == 3
    assert not [line for line in in_cluster.output if "Traceback" in line]


def _nonempty(items: list[Any]) -> list[Any]:
    assert items, "none yet"
    return items
