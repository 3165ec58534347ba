"""The guardrails' inputs the adapter reads: autoroll's annotations on the object, and the
platform of the Node a pod is bound to.
"""

from __future__ import annotations

from typing import Any

from autoroll.kube.nodes import node_platforms
from autoroll.kube.pods import pod_from_json
from autoroll.kube.workloads import deployment_from_json
from tests.support.kube_models import as_json, k8s_deployment, k8s_pod

# --- the guardrails' inputs: annotations on the object, the node's platform -------------------


def test_only_autoroll_annotations_of_the_object_are_kept() -> None:
    raw = as_json(k8s_deployment())
    raw["metadata"]["annotations"] = {
        "autoroll.aethnet.se/paused": "true",
        "autoroll.aethnet.se/window": "Sat 02:00-04:00 UTC",
        "kubectl.kubernetes.io/last-applied-configuration": "{" + "x" * 10000 + "}",
    }
    raw["spec"]["template"]["metadata"] = {"annotations": {"autoroll.aethnet.se/paused": "false"}}
    view, _ = deployment_from_json(raw)
    assert view.annotations == (
        ("autoroll.aethnet.se/paused", "true"),
        ("autoroll.aethnet.se/window", "Sat 02:00-04:00 UTC"),
    )


def node(name: str, labels: dict[str, str] | None) -> dict[str, Any]:
    """A Node as a metadata-only list returns it (PartialObjectMetadata)."""
    meta: dict[str, Any] = {"name": name}
    if labels is not None:
        meta["labels"] = labels
    return {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": meta}


def test_node_platforms_come_from_the_well_known_labels() -> None:
    nodes = [
        node("a", {"kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64"}),
        node("b", {"kubernetes.io/os": "linux", "kubernetes.io/arch": "arm64", "x": "y"}),
        node("c", {"kubernetes.io/os": "linux"}),  # no arch: unknown
        node("d", None),
        node("e", {"kubernetes.io/os": "linux", "kubernetes.io/arch": "arm/v7"}),  # not a label
    ]
    assert node_platforms(nodes) == {"a": "linux/amd64", "b": "linux/arm64"}


def test_a_pod_gets_the_platform_of_the_node_it_is_bound_to() -> None:
    raw = as_json(k8s_pod("web-1"))
    raw["spec"]["nodeName"] = "b"
    platforms = {"a": "linux/amd64", "b": "linux/arm64"}
    assert pod_from_json(raw, platforms=platforms).view.platform == "linux/arm64"
    assert pod_from_json(raw).view.platform is None  # not platform-aware
    raw["spec"]["nodeName"] = "gone"
    assert pod_from_json(raw, platforms=platforms).view.platform is None
    del raw["spec"]["nodeName"]  # not scheduled yet
    assert pod_from_json(raw, platforms=platforms).view.platform is None
