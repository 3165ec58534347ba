"""Cluster shapes (issue 23) about the moment before a DELETE: the last read is whole, a
DaemonSet's Node is read fresh, and a DELETE starts only while the Lease's authority covers it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from autoroll.controller.executor import Executor, Outcome
from autoroll.core.decide import DeletePod
from autoroll.core.model import WorkloadKind
from tests.support.scripted_cluster import ScriptedWorld, container_doc, deployment_doc, owner
from tests.support.shape_passes import HASH, IMAGE, NEW, OLD, app_pod, run_pass, web

# --- 3. the last read before a DELETE is whole ----------------------------------------------


def changed_before_the_fresh_read(change: Callable[[dict[str, Any]], None]) -> ScriptedWorld:
    """A world where, once the pass has listed the pods, ``change`` is made to web."""
    world = ScriptedWorld()
    world.add(WorkloadKind.DEPLOYMENT, web(replicas=2))
    world.pods = [app_pod(f"web-{HASH}-a"), app_pod(f"web-{HASH}-b")]
    pod_lists = 0

    def on_request(w: ScriptedWorld, method: str, path: str) -> None:
        nonlocal pod_lists
        if method == "GET" and path.endswith("/pods"):
            pod_lists += 1
            if pod_lists == 1:  # after the pass's own listing, before anything else
                change(w.workload(WorkloadKind.DEPLOYMENT, "web"))

    world.on_request = on_request
    return world


@pytest.mark.parametrize(
    "change",
    [
        pytest.param(
            lambda d: d["metadata"]["annotations"].update({"autoroll.aethnet.se/paused": "true"}),
            id="paused annotation",
        ),
        pytest.param(lambda d: d["metadata"]["labels"].clear(), id="enrolment label removed"),
        pytest.param(
            lambda d: (d["spec"].update({"replicas": 4}), d["metadata"].update({"generation": 2})),
            id="scaled up (HPA)",
        ),
        pytest.param(
            lambda d: d["metadata"]["annotations"].update(
                {"autoroll.aethnet.se/window": "Mon 00:00-00:01 UTC"}
            ),
            id="a closed maintenance window",
        ),
    ],
)
def test_what_the_fresh_read_of_the_deployment_says_is_what_is_acted_on(
    change: Callable[[dict[str, Any]], None],
) -> None:
    world = changed_before_the_fresh_read(change)
    assert run_pass(world) == []


# --- 5. a DaemonSet's Node is read fresh before its pod is deleted --------------------------


def test_a_daemonset_pod_goes_only_while_its_node_is_ready_at_the_fresh_read() -> None:
    world = ScriptedWorld()
    agent = deployment_doc("agent", containers=[container_doc("app", IMAGE)])
    agent["kind"] = "DaemonSet"
    del agent["spec"]["replicas"]
    agent["status"] = {
        "observedGeneration": 1,
        "desiredNumberScheduled": 1,
        "currentNumberScheduled": 1,
        "numberReady": 1,
        "numberAvailable": 1,
        "updatedNumberScheduled": 1,
    }
    world.add(WorkloadKind.DAEMONSET, agent)
    world.pods = [
        app_pod(
            "agent-x1",
            labels={"app": "agent"},
            pod_hash="",
            controller=owner("DaemonSet", "agent") | {"uid": "uid-agent"},
        )
    ]
    ready = {"type": "Ready", "status": "True"}
    world.nodes["node-1"] = {"metadata": {"name": "node-1"}, "status": {"conditions": [ready]}}
    node_reads = 0

    def on_request(w: ScriptedWorld, method: str, path: str) -> None:
        nonlocal node_reads
        if path.startswith("/api/v1/nodes/"):
            node_reads += 1
            if node_reads == 2:  # Ready when the pass read it; not by the read before a DELETE
                w.nodes["node-1"]["status"]["conditions"] = [{"type": "Ready", "status": "False"}]

    world.on_request = on_request
    assert run_pass(world, kinds=(WorkloadKind.DAEMONSET,)) == []


# --- 5. a DELETE starts only while the Lease's authority covers it --------------------------


def one_stale_pod() -> tuple[ScriptedWorld, DeletePod]:
    world = ScriptedWorld()
    world.pods = [app_pod(f"web-{HASH}-a")]
    action = DeletePod(
        "shop", f"web-{HASH}-a", f"uid-web-{HASH}-a", "stale", IMAGE, OLD, NEW, "web", "app"
    )
    return world, action


def test_a_delete_is_bounded_by_the_authority_left_and_no_retry_outlives_it() -> None:
    world, action = one_stale_pod()
    executor = Executor(
        cluster=world.cluster(), dry_run=False, may_act=lambda: True, authority=lambda: 3.0
    )
    assert executor.execute(action).outcome is Outcome.DELETED
    assert world.api is not None
    connect, read = world.api.timeouts[-1]
    # One reconnect is allowed: both attempts and the read must end within the 3 s left.
    assert 2 * connect + read <= 3.0


def test_no_delete_starts_when_too_little_authority_is_left() -> None:
    world, action = one_stale_pod()
    executor = Executor(
        cluster=world.cluster(), dry_run=False, may_act=lambda: True, authority=lambda: 0.2
    )
    assert executor.execute(action).outcome is Outcome.NOT_LEADER
    assert world.deleted == []
    assert world.requests == []
