"""Each kind's deletion order and pod holds in ``autoroll.core.kinds``: ordinals, the highest
first for a StatefulSet, a DaemonSet's nodes asked for in order and passed over when not Ready.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from datetime import timedelta

import pytest

from autoroll.core.decide import Reason
from autoroll.core.model import NodeView, PodView, Unknown, UpdateStrategy, WorkloadView
from autoroll.core.victim import MAX_NODE_CHECKS, choose, deletion_order, ordinal, pod_hold
from tests.support.kind_views import NEXT_REV, REV, T0, daemonset, ds_pods, pod, statefulset
from tests.support.views import deployment_view

# --------------------------------------------------------------------------------------------
# Order and holds


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("db-0", 0),
        ("db-12", 12),
        ("db-012", None),  # the controller never pads
        ("db-", None),
        ("db-x", None),
        ("db", None),
        ("dbx-1", None),
        ("db-1-2", None),  # a pod of StatefulSet db-1
    ],
)
def test_ordinal(name: str, expected: int | None) -> None:
    assert ordinal(statefulset(), pod(name)) == expected


def test_a_statefulset_goes_highest_ordinal_first_whatever_the_creation_order() -> None:
    pods = [
        pod("db-10", created=T0 + timedelta(minutes=1)),
        pod("db-2", created=T0),
        pod("stray"),
        pod("db-9", created=T0 + timedelta(minutes=3)),
    ]
    order = [p.name for p in deletion_order(statefulset(), pods)]
    assert order == ["db-10", "db-9", "db-2", "stray"]


def test_other_kinds_go_oldest_first() -> None:
    pods = [pod("agent-b", created=T0 + timedelta(seconds=1)), pod("agent-a", created=T0)]
    assert [p.name for p in deletion_order(daemonset(), pods)] == ["agent-a", "agent-b"]


def hold_of(workload: WorkloadView, p: PodView, nodes: Mapping[str, NodeView | Unknown]) -> str:
    found = pod_hold(workload=workload, pod=p, nodes=nodes)
    return "none" if found is None else f"{found.reason}: {found.detail}"


@pytest.mark.parametrize(
    ("workload", "subject", "nodes", "expected"),
    [
        (statefulset(), pod("db-2"), {}, "none"),
        (
            statefulset(update_revision=NEXT_REV),
            pod("db-2"),
            {},
            f"revision-behind: db-2 is at revision {REV}, updateRevision is {NEXT_REV}:"
            " the StatefulSet controller updates it",
        ),
        (
            statefulset(strategy=UpdateStrategy.ON_DELETE, update_revision=NEXT_REV),
            pod("db-2"),
            {},
            f"revision-behind: db-2 is at revision {REV}, updateRevision is {NEXT_REV}: with"
            " updateStrategy OnDelete, deleting it would also release a template change;"
            " delete it yourself when you release that change",
        ),
        (
            statefulset(strategy=UpdateStrategy.ON_DELETE, update_revision=NEXT_REV),
            pod("db-2", revision=NEXT_REV),
            {},
            "none",
        ),
        (
            statefulset(),
            pod("db-2", revision=""),
            {},
            f"revision-behind: db-2 is at no controller-revision-hash, updateRevision is {REV}:"
            " the StatefulSet controller updates it",
        ),
        (statefulset(), pod("other-0"), {}, "not-an-ordinal: other-0 is not db-<n>"),
        (daemonset(), pod("agent-a", node="n1"), {"n1": NodeView("n1", True)}, "none"),
        (
            daemonset(),
            pod("agent-a", node="n1"),
            {},
            "nodes-needed: read node n1",
        ),
        (
            daemonset(),
            pod("agent-a", node="n1"),
            {"n1": NodeView("n1", False, "Ready=Unknown (NodeStatusUnknown)")},
            "node-not-ready: agent-a: node n1 is not Ready (Ready=Unknown (NodeStatusUnknown))",
        ),
        (
            daemonset(),
            pod("agent-a", node="n1"),
            {"n1": Unknown("node-unreadable", "403")},
            "node-unknown: agent-a: cannot tell whether node n1 is Ready:"
            " unknown (node-unreadable: 403)",
        ),
        (
            daemonset(),
            replace(pod("agent-a"), node=""),
            {},
            "node-unknown: agent-a is not bound to a node",
        ),
        # A Deployment's pods are held by nothing of their kind.
        (deployment_view("ns", "web", 1, ()), pod("web-1"), {}, "none"),
    ],
)
def test_pod_hold(
    workload: WorkloadView,
    subject: PodView,
    nodes: Mapping[str, NodeView | Unknown],
    expected: str,
) -> None:
    assert hold_of(workload, subject, nodes) == expected


def test_a_daemonset_asks_for_the_first_nodes_only_and_keeps_the_order() -> None:
    pods = ds_pods(5)
    first = choose(workload=daemonset(5), candidates=pods, nodes={})
    assert first.victim is None
    assert [n.name for n in first.needs] == [f"node-agent-{c}" for c in "abc"]
    assert len(first.needs) == MAX_NODE_CHECKS
    # A later candidate's Node already known Ready does not jump the queue.
    known = {"node-agent-b": NodeView("node-agent-b", True)}
    second = choose(workload=daemonset(5), candidates=pods, nodes=known)
    assert second.victim is None and [n.name for n in second.needs] == ["node-agent-a"]


def test_a_daemonset_passes_over_a_pod_whose_node_is_not_ready() -> None:
    nodes: dict[str, NodeView | Unknown] = {
        "node-agent-a": NodeView("node-agent-a", False, "Ready=False"),
        "node-agent-b": NodeView("node-agent-b", True),
        "node-agent-c": NodeView("node-agent-c", True),
    }
    found = choose(workload=daemonset(), candidates=ds_pods(), nodes=nodes)
    assert found.victim is not None and found.victim.name == "agent-b"
    assert [h.pod for h in found.holds] == ["agent-a"]


def test_a_daemonset_whose_first_nodes_are_all_unready_deletes_nothing() -> None:
    nodes: dict[str, NodeView | Unknown] = {
        f"node-agent-{c}": NodeView(f"node-agent-{c}", False) for c in "abcd"
    }
    found = choose(workload=daemonset(4), candidates=ds_pods(4), nodes=nodes)
    assert found.victim is None and found.needs == ()
    assert [h.pod for h in found.holds] == ["agent-a", "agent-b", "agent-c"]  # no fourth read


def test_a_statefulset_passes_over_a_pod_behind_the_update_revision() -> None:
    sts = statefulset(strategy=UpdateStrategy.ON_DELETE, update_revision=NEXT_REV)
    pods = [pod("db-0", revision=NEXT_REV), pod("db-1", revision=NEXT_REV), pod("db-2")]
    found = choose(workload=sts, candidates=pods, nodes={})
    assert found.victim is not None and found.victim.name == "db-1"
    assert [h.reason for h in found.holds] == [Reason.REVISION_BEHIND]
