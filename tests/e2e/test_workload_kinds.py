"""StatefulSets and DaemonSets on the real node (issue 16): kubelet + containerd running the
app's real containers, the real StatefulSet and DaemonSet controllers of
kube-controller-manager, and autoroll installed by the chart as a pod (``start_autoroll``).

What is shown here, each against the watch's history of what the cluster did:

- a 3-replica StatefulSet (RollingUpdate) rolls after a push one pod at a time, highest
  ordinal first, each deletion made while it was settled; a pod its selector matches but
  that it does not own is never deleted;
- a DaemonSet rolls after the same push. The real node is a single node, so the DaemonSet
  has one pod: one at a time here means its one deletion is made while the DaemonSet is
  settled, and nothing is deleted again once its replacement runs the new image. Several
  nodes are the simulated stand-in's (``test_workload_kinds_simulated.py``);
- an OnDelete StatefulSet with a template change not yet released, and a RollingUpdate one
  held mid-rollout by a partition, are not touched, and ``autoroll plan`` says why;
- a crash-looping new image halts each kind after one pod;
- the workload objects' generation, spec, labels and annotations never change, and nobody but
  their controllers' status writes changed them (their resourceVersion does move with those:
  the controllers count the Ready pods as pods come and go).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Any

import pytest

from tests.e2e.controller import Autoroll, StartAutoroll, run_plan
from tests.e2e.controlplane import ControlPlane
from tests.e2e.enrolled_app import (
    POLL,
    SLACK,
    START_TIMEOUT,
    at_least,
    make_app,
    pass_done_now,
)
from tests.e2e.helpers import apps_api, core_api, pod
from tests.e2e.node import Node
from tests.e2e.scenario import (
    App,
    PodSeen,
    Recorder,
    decision_lines,
    deletions,
    label_selector,
    metric,
    nudging,
    unsettled_deletions,
)
from tests.support.registry import RegistryServer
from tests.support.wait import eventually

# The first test of a session may build the controller image (minutes on a busy machine).
pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600)]

ROLL_TIMEOUT = 3 * (POLL + 2 * SLACK) + 30  # three pods, each a pass plus a start


@pytest.fixture
def db(kube: Any, namespace: str, docker_registry: RegistryServer, node: Node) -> App:
    """The StatefulSet ``db``; its ``agent`` sibling is a DaemonSet of the same image."""
    return make_app(kube, namespace, docker_registry, node, name="db", kind="statefulset")


@pytest.fixture
def agent(db: App) -> App:
    return sibling(db, "agent", "daemonset")


def sibling(app: App, name: str, kind: str) -> App:
    """Another workload of the same image (one push moves both)."""
    return replace(app, name=name, kind=kind)


def ordinals(app: App) -> list[PodSeen]:
    """The StatefulSet's own pods now (``<name>-<n>``), terminating ones included."""
    return [p for p in app.live_pods() if p.name.removeprefix(f"{app.name}-").isdigit()]


def wait_all(app: App, digest: str, *, replicas: int, timeout: float) -> list[PodSeen]:
    """``replicas`` pods of ``app`` (its ordinals, for a StatefulSet), Ready on ``digest``."""

    def rolled() -> list[PodSeen]:
        pods = ordinals(app) if app.kind == "statefulset" else app.live_pods()
        summary = [(p.name, p.digest[:19], p.ready, p.terminating) for p in pods]
        assert len(pods) == replicas, summary
        assert all(p.ready and p.digest == digest and not p.terminating for p in pods), summary
        return pods

    return eventually(
        rolled, timeout=timeout, what=f"{app.name}: {replicas} Ready on {digest[:19]}"
    )


def on_this_node(node: Node) -> dict[str, Any]:
    """The DaemonSet arguments for the real node only (the simulated one may exist too)."""
    return {"node_selector": {"kubernetes.io/hostname": node.name}, "tolerate_not_ready": True}


@pytest.fixture
def objects() -> Iterator[dict[str, Recorder]]:
    """Watches of workload objects, started by the test (``watch``), stopped afterwards."""
    recorders: dict[str, Recorder] = {}
    yield recorders
    for recorder in recorders.values():
        recorder.__exit__(None, None, None)


def watch(objects: dict[str, Recorder], app: App) -> Recorder:
    recorder = Recorder(
        app.workload_list_function(), app.namespace, field_selector=f"metadata.name={app.name}"
    ).__enter__()
    objects[app.name] = recorder
    return recorder


def deploy_watched(
    db: App, agent: App, node: Node, objects: dict[str, Recorder]
) -> dict[str, dict[str, Any]]:
    """``db`` (three replicas) and ``agent`` (one pod, on this node) created, their objects
    watched from then on; returns them as created."""
    db.deploy(replicas=3)
    agent.deploy(**on_this_node(node))
    originals = {a.name: a.workload() for a in (db, agent)}
    for a in (db, agent):
        watch(objects, a)
    return originals


def wait_db_and_agent(db: App, agent: App, digest: str) -> None:
    wait_all(db, digest, replicas=3, timeout=START_TIMEOUT)
    wait_all(agent, digest, replicas=1, timeout=START_TIMEOUT)


def assert_untouched(app: App, original: dict[str, Any], recorder: Recorder) -> int:
    """Every version of the object the watch saw has the original generation, spec, labels
    and annotations, and only the creator and the controller's status writes wrote it.
    Returns how many versions were seen (resourceVersions: they move with status writes)."""
    assert not recorder.errors, recorder.errors
    versions = [raw for _, _, raw in recorder.events] + [app.workload()]
    for raw in versions:
        meta = raw["metadata"]
        assert meta["generation"] == original["metadata"]["generation"], app.name
        assert meta.get("labels") == original["metadata"].get("labels"), app.name
        assert meta.get("annotations") == original["metadata"].get("annotations"), app.name
        assert raw["spec"] == original["spec"], app.name
    writers = {
        (m["manager"], m.get("subresource", "")) for m in versions[-1]["metadata"]["managedFields"]
    }
    creator = {
        (m["manager"], m.get("subresource", "")) for m in original["metadata"]["managedFields"]
    }
    assert writers - creator <= {("kube-controller-manager", "status")}, (app.name, writers)
    return len({raw["metadata"]["resourceVersion"] for raw in versions})


def since(autoroll: Autoroll, start: int, app: App, pattern: str) -> Callable[[], list[str]]:
    """``app``'s decision lines matching ``pattern`` from output line ``start`` on."""

    return lambda: decision_lines(autoroll, app, pattern, since=start)


# --- rolls ----------------------------------------------------------------------------------


def test_a_statefulset_and_a_daemonset_roll_one_pod_at_a_time_highest_ordinal_first(
    *,
    db: App,
    agent: App,
    kube: Any,
    namespace: str,
    node: Node,
    start_autoroll: StartAutoroll,
    objects: dict[str, Recorder],
) -> None:
    old = db.push()
    # Its selector matches, nothing owns it, it runs the old image: never one of db's pods.
    stray = pod("stray", db.image)
    stray["metadata"]["labels"] = {"app": "db"}
    stray["spec"]["containers"][0]["imagePullPolicy"] = "Always"
    with (
        Recorder(core_api(kube).list_namespaced_pod, namespace, label_selector="app=db") as db_pods,
        Recorder(
            core_api(kube).list_namespaced_pod, namespace, label_selector="app=agent"
        ) as agent_pods,
    ):
        core_api(kube).create_namespaced_pod(namespace, stray)
        originals = deploy_watched(db, agent, node, objects)
        autoroll = start_autoroll()  # its pod starts while theirs do
        wait_db_and_agent(db, agent, old)
        pass_done_now(autoroll, db)
        new = db.push()
        wait_all(db, new, replicas=3, timeout=ROLL_TIMEOUT)
        wait_all(agent, new, replicas=1, timeout=POLL + SLACK + 30)
        # Two more passes once rolled: nothing else is deleted.
        done_at = len(autoroll.output)
        with nudging(autoroll):
            at_least(
                2,
                since(autoroll, done_at, db, r": current \("),
                timeout=3 * (POLL + SLACK),
                what="two passes finding db current",
            )
    history = [p for p in db_pods.pods() if p.name != "stray"]
    deleted = deletions(history)
    assert [(d.name, d.digest) for d in deleted] == [("db-2", old), ("db-1", old), ("db-0", old)]
    assert unsettled_deletions(history, replicas=3) == []
    assert "stray" not in {d.name for d in deletions(db_pods.pods())}
    assert any(p.name == "stray" and not p.terminating for p in db.live_pods())
    agent_history = agent_pods.pods()
    assert [d.digest for d in deletions(agent_history)] == [old]
    assert unsettled_deletions(agent_history, replicas=1) == []
    assert (
        metric(autoroll, "autoroll_pod_deletions_total", {"mode": "real", "kind": "statefulset"})
        == 3
    )
    assert (
        metric(autoroll, "autoroll_pod_deletions_total", {"mode": "real", "kind": "daemonset"}) == 1
    )
    autoroll.wait_for_line(rf"deleted stale pod {namespace}/db-2 of statefulset/db ")
    versions = {
        a.name: assert_untouched(a, originals[a.name], objects[a.name]) for a in (db, agent)
    }
    print("resourceVersions seen (the controllers' status writes):", versions)


# --- holds ----------------------------------------------------------------------------------


def release_env(app: App, value: str) -> None:
    """A template change the user makes (an env var), as ``kubectl set env`` would."""
    env = [{"name": "RELEASE", "value": value}]
    patch = {"spec": {"template": {"spec": {"containers": [{"name": "app", "env": env}]}}}}
    apps_api(app.kube).patch_namespaced_stateful_set(app.name, app.namespace, patch)


def statefulset_status(app: App) -> dict[str, Any]:
    status: dict[str, Any] = app.workload()["status"]
    return status


def test_statefulsets_with_an_unreleased_or_partitioned_template_change_are_not_touched(
    *,
    kube: Any,
    namespace: str,
    control_plane: ControlPlane,
    docker_registry: RegistryServer,
    node: Node,
    start_autoroll: StartAutoroll,
    objects: dict[str, Recorder],
) -> None:
    ondelete = make_app(kube, namespace, docker_registry, node, name="ondelete", kind="statefulset")
    canary = sibling(ondelete, "canary", "statefulset")
    old = ondelete.push()

    def held() -> None:
        od, ca = statefulset_status(ondelete), statefulset_status(canary)
        assert od.get("observedGeneration") == 2, od
        assert od["updateRevision"] != od["currentRevision"], od  # no pod is at the new one
        assert ca.get("observedGeneration") == 2, ca
        assert ca.get("updatedReplicas") == 1 and ca.get("readyReplicas") == 3, ca
        assert ca["currentRevision"] != ca["updateRevision"], ca

    ondelete.deploy(replicas=2, on_delete=True)
    canary.deploy(replicas=3, partition=2)
    wait_all(ondelete, old, replicas=2, timeout=START_TIMEOUT)
    wait_all(canary, old, replicas=3, timeout=START_TIMEOUT)
    release_env(ondelete, "2")  # OnDelete: nothing happens until a pod is deleted
    release_env(canary, "2")  # partition 2: canary-2 is updated, canary-0 and -1 are held
    originals = {a.name: a.workload() for a in (ondelete, canary)}
    for a in (ondelete, canary):
        watch(objects, a)
    # Its pod starts while the StatefulSet controller replaces canary-2. That deletion is the
    # controller's, so the pod watch starts after it; autoroll's deletions are also counted
    # by its own metric from its start (asserted 0 below).
    autoroll = start_autoroll()
    eventually(held, timeout=START_TIMEOUT, what="the change observed, canary-2 updated")
    with Recorder(
        core_api(kube).list_namespaced_pod, namespace, label_selector="app in (ondelete,canary)"
    ) as pods:
        pass_done_now(autoroll, ondelete)
        ondelete.push()
        pushed_at = len(autoroll.output)
        with nudging(autoroll):
            for app, reason in ((ondelete, "revision-behind"), (canary, "not-settled")):
                at_least(
                    3,
                    since(autoroll, pushed_at, app, rf"waiting \({reason}\)"),
                    timeout=4 * (POLL + SLACK),
                    what=f"three passes holding {app.name} ({reason})",
                )
        plan = run_plan(control_plane, docker_registry, label_selector(namespace))
    print(plan)
    assert deletions(pods.pods()) == [], "a held StatefulSet's pod was deleted"
    rows = {line.split()[0]: line for line in plan.splitlines() if line.startswith(namespace)}
    ondelete_row = rows[f"{namespace}/statefulset/ondelete"]
    assert "revision-behind" in ondelete_row and "OnDelete" in ondelete_row, ondelete_row
    assert "would also release a template change" in ondelete_row, ondelete_row
    canary_row = rows[f"{namespace}/statefulset/canary"]
    assert "not-settled: rollout-in-progress" in canary_row, canary_row
    assert "partition 2" in canary_row, canary_row
    assert "0 pod(s) would be deleted now" in plan
    assert (
        metric(autoroll, "autoroll_pod_deletions_total", {"mode": "real", "kind": "statefulset"})
        == 0
    )
    for app in (ondelete, canary):
        assert_untouched(app, originals[app.name], objects[app.name])


# --- halts ----------------------------------------------------------------------------------


def test_a_crash_looping_new_image_halts_each_kind_after_one_pod(
    *,
    db: App,
    agent: App,
    kube: Any,
    namespace: str,
    node: Node,
    start_autoroll: StartAutoroll,
    objects: dict[str, Recorder],
) -> None:
    old = db.push()
    with Recorder(
        core_api(kube).list_namespaced_pod, namespace, label_selector="app in (db,agent)"
    ) as pods:
        originals = deploy_watched(db, agent, node, objects)
        autoroll = start_autoroll(ROLLOUT_HALTED_AFTER_SECONDS="5")  # starts while they do
        wait_db_and_agent(db, agent, old)
        pass_done_now(autoroll, db)
        new = db.push(crash=True)  # the new :latest exits 3 at once, every time
        halted_at = len(autoroll.output)
        at_least(
            2,
            lambda: autoroll.lines(
                rf"WARNING .*rollout of {namespace}/statefulset/db is halted: pod db-2",
                since=halted_at,
            ),
            timeout=6 * POLL + 3 * SLACK,
            what="two passes saying loudly that db's rollout is halted",
        )

        def agent_crashing() -> None:
            [only] = [p for p in agent.live_pods() if not p.terminating]
            assert only.digest == new and not only.ready and only.restarts >= 1, only

        eventually(agent_crashing, timeout=3 * (POLL + SLACK), what="agent's replacement crashing")
        # Two more passes: nothing else is deleted, of either.
        seen = len(decision_lines(autoroll, db, r"waiting \(not-settled\)"))
        with nudging(autoroll):
            at_least(
                seen + 2,
                lambda: decision_lines(autoroll, db, r"waiting \(not-settled\)"),
                timeout=3 * (POLL + SLACK),
                what="two more passes waiting on db-2",
            )
    history = pods.pods()
    db_deleted = [d for d in deletions(history) if d.name.startswith("db-")]
    agent_deleted = [d for d in deletions(history) if d.name.startswith("agent-")]
    assert [(d.name, d.digest) for d in db_deleted] == [("db-2", old)], db_deleted
    assert [d.digest for d in agent_deleted] == [old], agent_deleted
    live = ordinals(db)
    assert sorted((p.name, p.digest == old, p.ready) for p in live) == [
        ("db-0", True, True),
        ("db-1", True, True),
        ("db-2", False, False),
    ], live
    assert metric(autoroll, "autoroll_rollouts_halted", {"kind": "statefulset"}) == 1
    # The DaemonSet's one pod is replaced: nothing stale waits behind it, so it is not
    # reported as halted; it is simply never deleted again (it already runs the target).
    assert metric(autoroll, "autoroll_rollouts_halted", {"kind": "daemonset"}) == 0
    assert decision_lines(autoroll, agent, r"waiting \(not-settled\)|: current \(")
    for app in (db, agent):
        assert_untouched(app, originals[app.name], objects[app.name])
