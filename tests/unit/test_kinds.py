"""``decide`` on StatefulSets and DaemonSets end to end: the order each kind goes in, the Nodes
a DaemonSet asks for, and what each leaves to its own controller.

Their settledness clause by clause is in ``test_kinds_settledness.py``, their order and holds
in ``test_kinds_order.py``; the builders in ``tests.support.kind_views``.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

from autoroll.core.decide import Decision, NodeRequest, Reason, SettledReason, Verdict
from autoroll.core.model import NodeView, Unknown, UpdateStrategy, WorkloadKind
from tests.support.kind_views import (
    HOST,
    NEW,
    NEXT_REV,
    READY,
    SEEN,
    daemonset,
    ds_pods,
    pod,
    run,
    statefulset,
    sts_pods,
)

# --------------------------------------------------------------------------------------------
# decide() on the two kinds


def test_a_settled_statefulset_loses_its_highest_ordinal_first() -> None:
    decision = run(statefulset(), sts_pods())
    [action] = decision.actions
    assert (action.name, action.kind, action.workload) == ("db-2", WorkloadKind.STATEFULSET, "db")
    assert action.workload_key == "ns/statefulset/db" == decision.key
    assert decision.containers[0].verdict is Verdict.STALE


def test_after_the_highest_ordinal_is_current_the_next_goes() -> None:
    pods = [*sts_pods(2), pod("db-2", digest=NEW, created=SEEN + timedelta(seconds=5))]
    [action] = run(statefulset(), pods).actions
    assert action.name == "db-1"


def test_a_statefulset_mid_rollout_is_its_controllers_and_plan_says_so() -> None:
    decision = run(statefulset(update_revision=NEXT_REV, partition=2), sts_pods())
    assert decision.actions == ()
    [verdict] = decision.containers
    assert (verdict.verdict, verdict.reason, verdict.pod) == (
        Verdict.WAITING,
        Reason.NOT_SETTLED,
        "db-2",
    )
    assert "partition 2" in verdict.detail and "StatefulSet controller's" in verdict.detail
    assert decision.settledness.reason is SettledReason.ROLLOUT_IN_PROGRESS


def test_an_on_delete_statefulset_with_a_pending_template_is_not_touched() -> None:
    sts = statefulset(strategy=UpdateStrategy.ON_DELETE, update_revision=NEXT_REV)
    decision = run(sts, sts_pods())
    assert decision.actions == ()
    [verdict] = decision.containers
    assert (verdict.verdict, verdict.reason) == (Verdict.WAITING, Reason.REVISION_BEHIND)
    assert "release a template change" in verdict.detail
    assert all(f"db-{i}" in verdict.detail for i in range(3))


def test_a_daemonset_decision_asks_for_nodes_then_deletes_on_a_ready_one() -> None:
    pods = ds_pods()
    first = run(daemonset(), pods)
    assert first.actions == ()
    assert (first.containers[0].verdict, first.containers[0].reason) == (
        Verdict.NEEDS_NODES,
        Reason.NODES_NEEDED,
    )
    assert first.needs_nodes == {NodeRequest(f"node-agent-{c}") for c in "abc"}
    assert first.containers[0].detail.startswith("read node(s) node-agent-")
    assert sorted(first.containers[0].detail.removeprefix("read node(s) ").split(", ")) == [
        f"node-agent-{c}" for c in "abc"
    ]
    assert first.needs_anything
    nodes: dict[str, NodeView | Unknown] = {
        r.name: NodeView(r.name, r.name != "node-agent-a") for r in first.needs_nodes
    }
    second = run(daemonset(), pods, nodes)
    [action] = second.actions
    assert (action.name, action.kind) == ("agent-b", WorkloadKind.DAEMONSET)
    assert not second.needs_anything


def test_a_daemonset_on_unready_nodes_waits_and_names_them() -> None:
    nodes: dict[str, NodeView | Unknown] = {
        f"node-agent-{c}": NodeView(f"node-agent-{c}", False, "Ready=False") for c in "abc"
    }
    decision = run(daemonset(), ds_pods(), nodes)
    assert decision.actions == ()
    [verdict] = decision.containers
    assert (verdict.verdict, verdict.reason) == (Verdict.WAITING, Reason.NODE_NOT_READY)
    assert "node node-agent-a is not Ready" in verdict.detail


def test_an_unsettled_daemonset_reads_no_node() -> None:
    decision = run(daemonset(number_unavailable=1), ds_pods())
    assert decision.needs_nodes == frozenset()
    assert decision.containers[0].reason is Reason.NOT_SETTLED


def test_a_pod_of_an_older_template_is_left_to_the_controller_for_every_kind() -> None:
    older = f"{HOST}/team/db:v1"
    for workload, pods in [
        (statefulset(1), [pod("db-0", image=older)]),
        (daemonset(1), [pod("agent-a", image=older)]),
    ]:
        decision = run(workload, pods, {"node-agent-a": READY})
        assert decision.actions == ()
        assert decision.containers[0].reason is Reason.NO_COMPARABLE_POD


def test_node_warnings_are_flagged_only_when_an_operator_must_act() -> None:
    assert Reason.NODE_UNKNOWN.is_warning  # e.g. nodes: get missing from the ClusterRole
    assert not Reason.NODE_NOT_READY.is_warning
    assert not Reason.REVISION_BEHIND.is_warning  # the user's own choice, shown in plan


# --------------------------------------------------------------------------------------------
# A verdict that waits on held pods names the first one in line and every reason, word for word


def waiting(decision: Decision) -> tuple[Reason, str | None, str]:
    assert decision.actions == ()
    [verdict] = decision.containers
    assert verdict.verdict is Verdict.WAITING
    return verdict.reason, verdict.pod, verdict.detail


def test_a_daemonset_held_by_its_nodes_names_each_pod_and_why() -> None:
    nodes: dict[str, NodeView | Unknown] = {
        "node-agent-a": NodeView("node-agent-a", False, "Ready=False"),
        "node-agent-b": NodeView("node-agent-b", False),
    }
    assert waiting(run(daemonset(2), ds_pods(2), nodes)) == (
        Reason.NODE_NOT_READY,
        "agent-a",
        "agent-a: node node-agent-a is not Ready (Ready=False);"
        " agent-b: node node-agent-b is not Ready",
    )


def test_a_daemonset_pod_on_a_node_it_cannot_read_is_named() -> None:
    nodes: dict[str, NodeView | Unknown] = {"node-agent-a": Unknown("forbidden")}
    assert waiting(run(daemonset(1), ds_pods(1), nodes)) == (
        Reason.NODE_UNKNOWN,
        "agent-a",
        "agent-a: cannot tell whether node node-agent-a is Ready: unknown (forbidden)",
    )


def test_a_daemonset_pod_bound_to_no_node_is_named() -> None:
    unbound = replace(pod("agent-a"), node="")
    assert waiting(run(daemonset(1), [unbound], {})) == (
        Reason.NODE_UNKNOWN,
        "agent-a",
        "agent-a is not bound to a node",
    )


def test_a_pod_that_is_no_ordinal_of_the_statefulset_is_named() -> None:
    stray = pod("db-extra")
    assert waiting(run(statefulset(1), [stray])) == (
        Reason.NOT_AN_ORDINAL,
        "db-extra",
        "db-extra is not db-<n>",
    )


def test_a_statefulset_with_no_update_revision_yet_says_so() -> None:
    sts = statefulset(1, strategy=UpdateStrategy.ON_DELETE, current_revision="", update_revision="")
    assert waiting(run(sts, sts_pods(1))) == (
        Reason.REVISION_BEHIND,
        "db-0",
        "db-0 is at revision db-6c9f7b, updateRevision is unset: with updateStrategy OnDelete,"
        " deleting it would also release a template change; delete it yourself when you"
        " release that change",
    )
