"""StatefulSets and DaemonSets against the real StatefulSet and DaemonSet controllers of the
e2e control plane (``KCM_CONTROLLERS``), on the simulated kubelet.

The adapter test shows that what those controllers write (status fields, revisions in the
``controller-revision-hash`` label, ownerReferences, Node objects) is read as the core
expects. The scenario shows the one DaemonSet rule a single real node cannot be made to show
while the controller runs on it: a pod on a NotReady Node is never the one deleted, even
when that pod still reports Ready (nothing here marks a NotReady node's pods unready, which
is the case the Node read exists for).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest

from autoroll.decide import Reason, SettledReason
from autoroll.kinds import is_settled, pod_hold
from autoroll.kube import KubeCluster, connect
from autoroll.model import Enrolled, WorkloadKind
from tests.e2e.controller import running_autoroll
from tests.e2e.controlplane import ControlPlane
from tests.e2e.helpers import apps_api, core_api, daemonset, pod, statefulset
from tests.e2e.kubelet import NODE_NAME, RegistryResolver, SimulatedKubelet, StaticResolver
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


def snapshot(kubeconfig: str, selector: str, namespace: str) -> dict[str, Enrolled]:
    cluster = KubeCluster(
        label_selector=selector, api_client_factory=lambda: connect({"KUBECONFIG": kubeconfig})
    )
    return {e.workload.key: e for e in cluster.snapshot() if e.workload.namespace == namespace}


def test_the_adapter_reads_what_the_statefulset_and_daemonset_controllers_write(
    control_plane: ControlPlane,
    kube: Any,
    namespace: str,
    registry: StaticResolver,
    kubelet: SimulatedKubelet,
) -> None:
    registry.set(IMAGE, DIGEST)
    labels = {ENROLL_LABEL: "true", TEST_LABEL: namespace}
    apps = apps_api(kube)
    apps.create_namespaced_stateful_set(
        namespace, statefulset("db", IMAGE, replicas=3, labels=labels, on_delete=True)
    )
    apps.create_namespaced_daemon_set(
        namespace, daemonset("agent", IMAGE, labels=labels, tolerate_not_ready=True)
    )
    # Matches the StatefulSet's selector, but nothing owns it: never one of its pods.
    stray = pod("db-stray", IMAGE)
    stray["metadata"]["labels"] = {"app": "db"}
    core_api(kube).create_namespaced_pod(namespace, stray)
    kubeconfig = str(control_plane.kubeconfig)
    selector = label_selector(namespace)

    def settled() -> dict[str, Enrolled]:
        found = snapshot(kubeconfig, selector, namespace)
        assert set(found) == {f"{namespace}/statefulset/db", f"{namespace}/daemonset/agent"}
        # Until the DaemonSet controller has counted the node, it wants no pod at all.
        assert found[f"{namespace}/daemonset/agent"].workload.replicas == 1
        for item in found.values():
            verdict = is_settled(workload=item.workload, pods=item.pods)
            assert verdict.reason is SettledReason.SETTLED, (item.workload.key, verdict)
        return found

    found = eventually(settled, timeout=60, what="the StatefulSet and DaemonSet settled")
    db = found[f"{namespace}/statefulset/db"]
    assert [p.name for p in db.pods] == ["db-0", "db-1", "db-2"]  # not db-stray
    raw = read(kube, "stateful_set", namespace, "db")
    assert {p.revision for p in db.pods} == {raw["status"]["updateRevision"]}
    agent = found[f"{namespace}/daemonset/agent"]
    assert agent.workload.replicas == 1 and [p.node for p in agent.pods] == [NODE_NAME]
    cluster = KubeCluster(
        label_selector=selector, api_client_factory=lambda: connect({"KUBECONFIG": kubeconfig})
    )
    assert cluster.node(NODE_NAME).ready

    # A template change the user has not released (OnDelete): still settled, every pod held.
    env = [{"name": "RELEASE", "value": "2"}]
    patch = {"spec": {"template": {"spec": {"containers": [{"name": "app", "env": env}]}}}}
    apps.patch_namespaced_stateful_set("db", namespace, patch)

    def observed() -> Enrolled:
        item = snapshot(kubeconfig, selector, namespace)[f"{namespace}/statefulset/db"]
        status = read(kube, "stateful_set", namespace, "db")["status"]
        assert status.get("observedGeneration") == 2 and item.workload.generation == 2
        return item

    db = eventually(observed, timeout=30, what="the template change observed")
    assert is_settled(workload=db.workload, pods=db.pods).reason is SettledReason.SETTLED
    holds = [pod_hold(workload=db.workload, pod=p, nodes={}) for p in db.pods]
    assert [h.reason if h else None for h in holds] == [Reason.REVISION_BEHIND] * 3
    assert db.workload.kind is WorkloadKind.STATEFULSET


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
            namespace, daemonset("agent", app.image, labels=labels, tolerate_not_ready=True)
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
            time.sleep(POLL + 1)  # one more pass: still nothing on the NotReady node
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
