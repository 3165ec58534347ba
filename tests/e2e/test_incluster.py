"""The user's install, for real: ``helm install`` of the chart with the controller image built
from the Dockerfile, the controller running as a pod on the real node (``incluster.py``).

What a pod gives that a local process cannot: the chart's Deployment, ServiceAccount, RBAC,
security context, in-cluster configuration and the image itself, all together. What the
installed pod then does (a push rolled one pod at a time, the signed webhook, dry-run, ...)
is shown by every real-node scenario, each on an install of its own (``start_autoroll``).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.e2e.controller import Autoroll, ControllerError, StartAutoroll
from tests.e2e.helpers import core_api
from tests.e2e.incluster import POD_SELECTOR, RELEASE
from tests.e2e.node import Node
from tests.e2e.scenario import metric
from tests.support.wait import eventually

# The first test here may build the controller image cold (tests/support/image.py allows
# 1200 s): a session fixture's setup counts against the test that first asks for it, and this
# file is collected before test_scenarios.py, whose tests then reuse the image.
pytestmark = [pytest.mark.e2e, pytest.mark.timeout(1500)]

POLL = 5


@pytest.fixture
def in_cluster(start_autoroll: StartAutoroll) -> Autoroll:
    """The chart's install (``start_autoroll``), polling every ``POLL`` seconds."""
    return start_autoroll(poll=POLL)


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
    in_cluster.wait_for_line(r"autoroll|gunicorn")  # the pod's log is read from the node
    assert metric(in_cluster, "autoroll_ticks_total", {"outcome": "ok"}) >= 1


def test_helm_test_asks_readyz_through_the_service_and_passes(
    in_cluster: Autoroll, kube: Any, namespace: str, node: Node
) -> None:
    # The chart's own `helm test`, as a user runs it after the install: its pod resolves the
    # Service's name with the cluster's DNS and reaches the controller through kube-proxy.
    assert in_cluster.helm is not None
    try:
        report = in_cluster.helm("test", RELEASE, "--timeout", "120s")
    except ControllerError as exc:
        printed = "".join(
            f.read_text() for f in node.pod_logs.glob(f"{namespace}_*-test_*/*/*.log")
        )
        raise AssertionError(f"{exc}\nthe test pod printed:\n{printed}") from exc
    assert "Phase:" in report and "Succeeded" in report, report
    # `hook-succeeded`: the passed test pod is gone; only the controller's pod is left.
    listed = core_api(kube).list_namespaced_pod(namespace, _preload_content=False)
    items = json.loads(listed.data)["items"]
    names = [p["metadata"]["name"] for p in items if "deletionTimestamp" not in p["metadata"]]
    assert not [n for n in names if n.endswith("-test")], names
