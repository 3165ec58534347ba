"""``KubeCluster`` and the Nodes: one read of a Node for a DaemonSet, and with platform
awareness the Nodes' metadata listed once per pass.
"""

from __future__ import annotations

import json

import pytest

from autoroll.core.model import NodeView
from autoroll.kube.cluster import KubeCluster
from autoroll.kube.errors import ClusterApiError, ClusterForbiddenError
from tests.support.fake_api_client import status_body
from tests.support.kube_models import k8s_deployment
from tests.support.kube_rest import FakeRest, NodesRest, bound

NODE_READY = json.dumps(
    {"metadata": {"name": "n1"}, "status": {"conditions": [{"type": "Ready", "status": "True"}]}}
).encode()


def test_a_node_is_read_with_one_get() -> None:
    rest = FakeRest(nodes={"n1": (200, NODE_READY)})
    cluster = KubeCluster(label_selector="x", rest=rest)
    assert cluster.node("n1") == NodeView("n1", True)
    assert cluster.requests == 1


def test_a_node_that_does_not_exist_is_not_ready() -> None:
    cluster = KubeCluster(label_selector="x", rest=FakeRest())
    assert cluster.node("gone") == NodeView("gone", False, "the Node does not exist")


def test_a_forbidden_node_read_names_nodes_get_and_the_daemonset_kind() -> None:
    rest = FakeRest(nodes={"n1": (403, status_body(403))})
    cluster = KubeCluster(label_selector="x", rest=rest)
    with pytest.raises(
        ClusterForbiddenError,
        match=r"get node n1: 403 .*nodes: get \(WORKLOAD_KINDS lists daemonset\)",
    ):
        cluster.node("n1")


def test_a_node_answer_that_is_not_json_is_a_clear_api_error() -> None:
    cluster = KubeCluster(label_selector="x", rest=FakeRest(nodes={"n1": (200, b"<html>")}))
    with pytest.raises(ClusterApiError, match="get node n1: not JSON"):
        cluster.node("n1")


# --- platform awareness: the Nodes' metadata, once per pass -----------------------------------


def test_platform_aware_lists_node_metadata_once_and_gives_pods_their_platform() -> None:
    rest = NodesRest([k8s_deployment("web")], [bound("web-1", "amd"), bound("web-2", "arm")])
    cluster = KubeCluster(label_selector="x", rest=rest, platform_aware=True)
    [enrolled] = cluster.snapshot()
    assert {p.name: p.platform for p in enrolled.pods} == {
        "web-1": "linux/amd64",
        "web-2": "linux/arm64",
    }
    [request] = rest.node_requests
    # metadata only: a Node's status lists every image on it; labels are all a pass reads
    assert request["header_params"]["Accept"].startswith(
        "application/json;as=PartialObjectMetadataList"
    )
    assert request["method"] == "GET"
    assert cluster.requests == len(cluster.kinds) + 1 + 1  # the kinds, the nodes, one namespace


def test_without_platform_awareness_no_node_is_listed() -> None:
    rest = NodesRest([k8s_deployment("web")], [bound("web-1", "amd")])
    [enrolled] = KubeCluster(label_selector="x", rest=rest).snapshot()
    assert rest.node_requests == []
    assert enrolled.pods[0].platform is None


def test_nothing_enrolled_lists_no_nodes() -> None:
    rest = NodesRest()
    assert KubeCluster(label_selector="x", rest=rest, platform_aware=True).snapshot() == ()
    assert rest.node_requests == []


def test_a_forbidden_node_list_names_the_rule_and_the_setting() -> None:
    rest = NodesRest([k8s_deployment("web")], [bound("web-1", "amd")], nodes=403)
    with pytest.raises(ClusterForbiddenError, match=r"nodes: list \(PLATFORM_AWARE=true\)"):
        KubeCluster(label_selector="x", rest=rest, platform_aware=True).snapshot()
