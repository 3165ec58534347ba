"""The one DaemonSet rule the real node cannot show, on two simulated nodes (a stand-in),
against the real DaemonSet controller of the e2e control plane (``KCM_CONTROLLERS``).

A pod on a NotReady Node is never the one deleted, even when that pod still reports Ready
(nothing here marks a NotReady node's pods unready, which is the case the Node read exists
for), and a DaemonSet on more than one node rolls one pod at a time. The real node is a
single node, and the controller runs on it: making it NotReady would stop the controller
too, and a DaemonSet there has one pod. The StatefulSet and DaemonSet rolls, holds and halts
on the real node are in ``test_workload_kinds.py``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.e2e.controller import running_autoroll
from tests.e2e.controlplane import ControlPlane
from tests.e2e.helpers import apps_api, core_api, daemonset
from tests.e2e.kubelet import NODE_NAME, SIMULATED_NODE_LABEL, SimulatedKubelet
from tests.e2e.kubelet_images import RegistryResolver, StaticResolver
from tests.e2e.scenario import (
    ENROLL_LABEL,
    TEST_LABEL,
    App,
    PodSeen,
    Recorder,
    deletions,
    label_selector,
    unsettled_deletions,
)
from tests.support.registry import ImagePusher, RegistryServer
from tests.support.wait import eventually

pytestmark = pytest.mark.e2e

POLL = 5
SLACK = 4.0
IMAGE = "registry.invalid/team/db:latest"
DIGEST = "sha256:" + "d" * 64


def read(kube: Any, kind: str, namespace: str, name: str) -> dict[str, Any]:
    api = apps_api(kube)
    reader = getattr(api, f"read_namespaced_{kind}")
    body: dict[str, Any] = json.loads(reader(name, namespace, _preload_content=False).data)
    return body


@pytest.fixture
def second_node(
    control_plane: ControlPlane, kubelet: SimulatedKubelet
) -> Iterator[SimulatedKubelet]:
    """A second simulated node that binds only the pods pinned to it (a DaemonSet's)."""
    other = SimulatedKubelet(
        control_plane.api_client(), StaticResolver(), node_name="sim-node-b", bind_unselected=False
    )
    other.start()
    try:
        yield other
    finally:
        other.stop()
        kubelet.set_ready(True)
        core_api(other.core.api_client).delete_node("sim-node-b", _preload_content=False)
        assert not other.errors, other.errors


def test_a_daemonset_pod_on_a_notready_node_is_never_deleted_simulated_nodes(
    *,
    control_plane: ControlPlane,
    kube: Any,
    namespace: str,
    docker_registry: RegistryServer,
    kubelet: SimulatedKubelet,
    second_node: SimulatedKubelet,
) -> None:
    resolver = RegistryResolver(auth=docker_registry.auth)
    for node in (kubelet, second_node):
        node.use_resolver(resolver, resolver.child)
    app = App(kube, namespace, "agent", f"e2e/{namespace}", ImagePusher(docker_registry), namespace)
    old = app.push()
    labels = {ENROLL_LABEL: "true", TEST_LABEL: namespace}
    with Recorder(core_api(kube).list_namespaced_pod, namespace) as pods:
        apps_api(kube).create_namespaced_daemon_set(
            namespace,
            daemonset(
                "agent",
                app.image,
                labels=labels,
                tolerate_not_ready=True,
                node_selector=dict([SIMULATED_NODE_LABEL]),  # not the real node
            ),
        )

        def on_nodes(digest: str) -> dict[str, str]:
            """Node -> pod name, once every node runs one Ready pod of ``digest``."""
            found = live_pods(kube, namespace)
            summary = {n: (p.name, p.digest[:19], p.ready) for n, p in found.items()}
            assert set(found) == {NODE_NAME, "sim-node-b"}, summary
            assert all(p.ready and p.digest == digest for p in found.values()), summary
            return {node: p.name for node, p in found.items()}

        before = eventually(lambda: on_nodes(old), timeout=60, what="one Ready pod per node")
        original = read(kube, "daemon_set", namespace, "agent")
        kubelet.set_ready(False)  # sim-node: NotReady, its pod still reports Ready
        with running_autoroll(
            plane=control_plane,
            registry=docker_registry,
            poll_seconds=POLL,
            extra_env={"LABEL_SELECTOR": label_selector(namespace)},
        ) as autoroll:
            new = app.push()

            def b_rolled() -> None:
                found = live_pods(kube, namespace).get("sim-node-b")
                assert found is not None and found.ready and found.digest == new, found

            eventually(
                b_rolled, timeout=3 * (POLL + SLACK), what="the pod on the Ready node rolled"
            )
            held = autoroll.wait_for_line(
                rf"{namespace}/daemonset/agent app: waiting \(node-not-ready\)",
                timeout=2 * (POLL + SLACK),
            )
            assert f"node {NODE_NAME} is not Ready" in held
            # Two more passes that hold it: still nothing deleted on the NotReady node.
            pattern = rf"{namespace}/daemonset/agent app: waiting \(node-not-ready\)"
            seen = len(autoroll.lines(pattern))
            eventually(
                lambda: _at_least(seen + 2, autoroll.lines(pattern)),
                timeout=3 * (POLL + SLACK),
                what="two more passes holding the pod on the NotReady node",
            )
            gone = {d.name for d in deletions(pods.pods())}
            assert before[NODE_NAME] not in gone, "a pod on a NotReady node was deleted"
            kubelet.set_ready(True)
            eventually(lambda: on_nodes(new), timeout=3 * (POLL + SLACK), what="both pods rolled")
    history = pods.pods()
    assert [d.name for d in deletions(history)] == [before["sim-node-b"], before[NODE_NAME]]
    assert unsettled_deletions(history, replicas=2) == []
    after = read(kube, "daemon_set", namespace, "agent")
    assert after["metadata"]["generation"] == original["metadata"]["generation"]
    assert after["spec"] == original["spec"]


def live_pods(kube: Any, namespace: str) -> dict[str, PodSeen]:
    """The DaemonSet's pods that are not terminating, by node."""
    response = core_api(kube).list_namespaced_pod(
        namespace, label_selector="app=agent", _preload_content=False
    )
    now = time.monotonic()
    found = {}
    for raw in json.loads(response.data)["items"]:
        seen = PodSeen.from_raw(now, "LIST", raw)
        if not seen.terminating:
            found[raw["spec"].get("nodeName") or ""] = seen
    return found


def _at_least(count: int, found: list[str]) -> None:
    assert len(found) >= count, f"{len(found)} so far"
