"""Issue 18's platform awareness on the real control plane and registry: with it (and the
chart's own ClusterRole for it), a push of a multi-arch index that changes only the arm64
image restarts every arm64 pod and no amd64 pod: once with the amd64 pods on the real node
(kubelet + containerd) and the arm64 ones on a simulated arm64 node, and once with both on
simulated kubelets.

Split from ``test_guardrails.py`` (the budget and the window); the helpers both use are in
``guardrail_deployments.py``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.controlplane import ControlPlane
from tests.e2e.guardrail_deployments import all_on, at_least, enrolled, live, watched_autoroll
from tests.e2e.helpers import apps_api, core_api
from tests.e2e.images import APP_PORT, push_index
from tests.e2e.kubelet import SimulatedKubelet
from tests.e2e.kubelet_images import RegistryResolver
from tests.e2e.node import Node
from tests.e2e.rbac import delete_cluster_rules, service_account_kubeconfig
from tests.e2e.scenario import deletions
from tests.support.registry import ImagePusher, RegistryServer
from tests.support.wait import eventually

pytestmark = pytest.mark.e2e


# --- platform awareness -------------------------------------------------------------------------


@dataclass(frozen=True)
class Arm64Node:
    """A simulated arm64 node that binds only the pods sent to it (``nodeSelector``), and a
    kubeconfig for a ServiceAccount bound to the chart's ClusterRole rendered with
    ``platformAware: true``."""

    kubelet: SimulatedKubelet
    kubeconfig: Path
    resolver: RegistryResolver


@pytest.fixture
def arm64_node(
    control_plane: ControlPlane,
    namespace: str,
    docker_registry: RegistryServer,
    tmp_path: Path,
) -> Iterator[Arm64Node]:
    kube = control_plane.api_client()  # as admin, like the session's ``kube``
    resolver = RegistryResolver(auth=docker_registry.auth)
    arm = SimulatedKubelet(
        control_plane.api_client(),
        resolver,
        resolve_child=resolver.child,
        node_name=f"sim-arm64-{namespace[-5:]}",
        arch="arm64",
        bind_unselected=False,
    )
    # The controller as the chart deploys it: the rendered ClusterRole for platform
    # awareness (nodes: list), nothing more.
    kubeconfig = service_account_kubeconfig(
        control_plane,
        kube,
        namespace,
        tmp_path / "kubeconfig",
        values=("guardrails.platformAware=true",),
        lease_role=False,
    )
    arm.start()
    try:
        yield Arm64Node(arm, kubeconfig, resolver)
    finally:
        arm.stop()
        with contextlib.suppress(Exception):
            core_api(kube).delete_node(arm.node_name, grace_period_seconds=0)
        with contextlib.suppress(Exception):
            delete_cluster_rules(kube, namespace)
        assert not arm.errors, f"the simulated arm64 kubelet failed: {arm.errors}"


@dataclass(frozen=True)
class Pushed:
    digest: str
    children: tuple[str, ...]  # amd64, arm64


def only_arm64_changes(
    *,
    control_plane: ControlPlane,
    kube: Any,
    namespace: str,
    registry: RegistryServer,
    kubeconfig: Path,
    push: Callable[[str, str], Pushed],
    http_port: int | None = None,
    amd64_node: str | None = None,
) -> None:
    """Two Deployments on one multi-arch tag, one per arch; a push changes only the arm64
    child; with platform awareness every arm64 pod rolls, once, and no amd64 pod does."""
    old = push("1", "1")
    image = f"{registry.host}/e2e/{namespace}:latest"
    apps = apps_api(kube)
    for arch in ("amd64", "arm64"):
        manifest = enrolled(
            arch,
            image,
            namespace,
            replicas=2,
            node_selector={"kubernetes.io/arch": arch},
            http_port=http_port,
        )
        apps.create_namespaced_deployment(namespace, manifest)
    for arch in ("amd64", "arm64"):
        eventually(
            partial(all_on, kube, namespace, old.digest, 2, f"app={arch}"),
            timeout=120,
            what=f"{arch} pods Ready",
        )
    amd_before = {p.uid for p in live(kube, namespace, "app=amd64")}
    if amd64_node is not None:
        placed = core_api(kube).list_namespaced_pod(namespace, label_selector="app=amd64").items
        assert {p.spec.node_name for p in placed} == {amd64_node}
    watched = watched_autoroll(
        control_plane,
        kube,
        namespace,
        registry,
        tail=30,
        KUBECONFIG=str(kubeconfig),
        PLATFORM_AWARE="true",
    )
    with watched as (recorder, autoroll):
        autoroll.wait_for_line(rf"{namespace}/deployment/arm64 app: current", timeout=60)
        new = push("1", "2")
        assert new.children[0] == old.children[0]  # the amd64 image is the same
        assert new.children[1] != old.children[1]
        assert autoroll.webhook() == 202
        eventually(
            partial(all_on, kube, namespace, new.digest, 2, "app=arm64"),
            timeout=120,
            what="arm64 pods rolled",
        )
        # Two more passes after the arm64 roll: still nothing for amd64.
        current = (
            rf"{namespace}/deployment/amd64 app: current \(up-to-date\)"
            r".*only other platforms"
        )
        seen = len(autoroll.lines(current))
        eventually(
            lambda: at_least(autoroll.lines(current), seen + 2),
            timeout=60,
            what="two more passes calling amd64 current",
        )
    gone = {d.uid for d in deletions(recorder.pods())}
    assert not gone & amd_before  # no amd64 pod restarted
    assert {p.uid for p in live(kube, namespace, "app=amd64")} == amd_before
    assert len(gone) == 2  # both arm64 pods, once each


def test_a_push_changing_only_arm64_restarts_no_amd64_pod_on_simulated_kubelets(
    *,
    control_plane: ControlPlane,
    kube: Any,
    namespace: str,
    docker_registry: RegistryServer,
    kubelet: SimulatedKubelet,
    arm64_node: Arm64Node,
) -> None:
    """Both arches on simulated kubelets (the session's amd64 one and ``arm64_node``)."""
    kubelet.use_resolver(arm64_node.resolver, arm64_node.resolver.child)
    pusher = ImagePusher(docker_registry)

    def push(amd64: str, arm64: str) -> Pushed:
        index = pusher.push_index(
            f"e2e/{namespace}",
            "latest",
            contents={"amd64": f"amd64 build {amd64}".encode(), "arm64": f"arm64 {arm64}".encode()},
        )
        return Pushed(index.digest, tuple(index.children))

    only_arm64_changes(
        control_plane=control_plane,
        kube=kube,
        namespace=namespace,
        registry=docker_registry,
        kubeconfig=arm64_node.kubeconfig,
        push=push,
    )


def test_a_push_changing_only_arm64_restarts_no_amd64_pod_on_the_real_node(
    *,
    control_plane: ControlPlane,
    kube: Any,
    namespace: str,
    docker_registry: RegistryServer,
    node: Node,
    arm64_node: Arm64Node,
) -> None:
    """The amd64 pods run on the real node (kubelet + containerd pull the index and run its
    amd64 child); the arm64 pods on the simulated arm64 node, since this amd64 machine
    cannot run arm64 containers. The controller runs as a local process with the chart's
    ClusterRole (a ServiceAccount token), not as the chart's pod."""
    pusher = ImagePusher(docker_registry)

    def push(amd64: str, arm64: str) -> Pushed:
        index = push_index(
            pusher, f"e2e/{namespace}", build=amd64, builds={"amd64": amd64, "arm64": arm64}
        )
        return Pushed(index.digest, tuple(index.children))

    only_arm64_changes(
        control_plane=control_plane,
        kube=kube,
        namespace=namespace,
        registry=docker_registry,
        kubeconfig=arm64_node.kubeconfig,
        push=push,
        http_port=APP_PORT,
        amd64_node=node.name,
    )
