"""Table tests for ``autoroll.core.kinds``: each kind's settledness, clause by clause, its order
and its holds; then ``decide`` on StatefulSets and DaemonSets end to end.

Every clause has a row that fails when the clause is removed or weakened: a settled
baseline per kind, then one row per clause with only that clause broken, naming the reason
and the fields in its detail.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta

import pytest

from autoroll.core.decide import (
    Decision,
    NodeRequest,
    Reason,
    SettledReason,
    Sighting,
    Verdict,
    decide,
)
from autoroll.core.images import TagRef
from autoroll.core.kinds import is_settled
from autoroll.core.model import (
    ContainerView,
    DaemonSetStatus,
    DeploymentStatus,
    Digest,
    ImageContent,
    NodeView,
    PodView,
    StatefulSetStatus,
    Unknown,
    UpdateStrategy,
    WorkloadKind,
    WorkloadView,
)
from autoroll.core.victim import MAX_NODE_CHECKS, choose, deletion_order, ordinal, pod_hold
from tests.support.views import deployment_view, pod_view, rolled_out

HOST = "forgejo.example"
IMAGE = f"{HOST}/team/db:latest"
REF = TagRef(HOST, "team/db", "latest")
OLD = Digest("sha256:" + "0" * 64)
NEW = Digest("sha256:" + "1" * 64)
CONTENT = {
    d: ImageContent(frozenset({Digest(f"sha256:c{i:063x}")})) for i, d in enumerate([OLD, NEW])
}
T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
SEEN = T0 + timedelta(hours=1)
NOW = SEEN + timedelta(hours=1)
REV, NEXT_REV = "db-6c9f7b", "db-7d4e21"
READY = NodeView("n", True)


def pod(
    name: str,
    *,
    digest: Digest = OLD,
    ready: bool = True,
    deleting: bool = False,
    revision: str = REV,
    node: str = "",
    created: datetime = T0,
    image: str = IMAGE,
    ready_since: datetime | None = T0,
) -> PodView:
    return pod_view(
        name,
        image,
        f"{HOST}/team/db@{digest}",
        created=created,
        ready=ready,
        deleting=deleting,
        revision=revision,
        node=node or f"node-{name}",
        ready_changed_at=ready_since,
    )


def statefulset(
    replicas: int = 3,
    *,
    name: str = "db",
    generation: int = 4,
    strategy: UpdateStrategy = UpdateStrategy.ROLLING_UPDATE,
    **status: object,
) -> WorkloadView:
    fields: dict[str, object] = {
        "update_strategy": strategy,
        "ready_replicas": replicas,
        "available_replicas": replicas,
        "observed_generation": generation,
        "current_revision": REV,
        "update_revision": REV,
        **status,
    }
    return WorkloadView(
        "ns",
        name,
        replicas,
        (ContainerView("app", IMAGE),),
        uid=f"uid-{name}",
        generation=generation,
        kind=WorkloadKind.STATEFULSET,
        status=StatefulSetStatus(**fields),  # type: ignore[arg-type]
    )


def daemonset(desired: int = 3, *, generation: int = 2, **status: object) -> WorkloadView:
    fields: dict[str, object] = {
        "desired_number_scheduled": desired,
        "number_ready": desired,
        "number_available": desired,
        "number_unavailable": 0,
        "updated_number_scheduled": desired,
        "observed_generation": generation,
        **status,
    }
    return WorkloadView(
        "ns",
        "agent",
        desired,
        (ContainerView("app", IMAGE),),
        uid="uid-agent",
        generation=generation,
        kind=WorkloadKind.DAEMONSET,
        status=DaemonSetStatus(**fields),  # type: ignore[arg-type]
    )


def web(
    *,
    replicas: int = 3,
    paused: bool = False,
    min_ready_seconds: int = 0,
    status: DeploymentStatus | None = None,
    **counts: object,
) -> WorkloadView:
    """Deployment web of 3 replicas at generation 2; ``replicas`` is its status's count
    (pods of all its ReplicaSets), ``counts`` override single status counts."""
    found = status or rolled_out(3, generation=2)
    found = replace(found, replicas=replicas, paused=paused, **counts)  # type: ignore[arg-type]
    return replace(
        deployment_view("ns", "web", 3, (ContainerView("app", IMAGE),), generation=2, status=found),
        min_ready_seconds=min_ready_seconds,
    )


def sts_pods(n: int = 3, **kwargs: object) -> list[PodView]:
    return [pod(f"db-{i}", **kwargs) for i in range(n)]  # type: ignore[arg-type]


def ds_pods(n: int = 3, **kwargs: object) -> list[PodView]:
    return [pod(f"agent-{c}", **kwargs) for c in "abcdefgh"[:n]]  # type: ignore[arg-type]


# --------------------------------------------------------------------------------------------
# Settledness, clause by clause


@dataclass(frozen=True)
class Row:
    id: str
    workload: WorkloadView
    pods: Sequence[PodView]
    reason: SettledReason
    detail: tuple[str, ...] = ()  # fragments the detail must contain


SETTLEDNESS = [
    # StatefulSet
    Row("sts-settled", statefulset(), sts_pods(), SettledReason.SETTLED),
    Row(
        "sts-a-pod-terminating",
        statefulset(),
        [*sts_pods(2), pod("db-2", deleting=True)],
        SettledReason.POD_TERMINATING,
        ("db-2",),
    ),
    Row(
        "sts-a-pod-not-ready",
        statefulset(),
        [*sts_pods(2), pod("db-2", ready=False)],
        SettledReason.POD_NOT_READY,
        ("db-2",),
    ),
    Row(
        # The status still says 3 ready (it lags), but the listing has only two pods.
        "sts-a-pod-missing-from-the-listing",
        statefulset(),
        sts_pods(2),
        SettledReason.TOO_FEW_READY,
        ("2 of 3",),
    ),
    Row(
        "sts-ready-replicas-below-spec",
        statefulset(ready_replicas=2),
        sts_pods(),
        SettledReason.TOO_FEW_READY,
        ("status.readyReplicas 2 < spec.replicas 3",),
    ),
    Row(
        "sts-generation-not-observed",
        statefulset(observed_generation=3),
        sts_pods(),
        SettledReason.GENERATION_NOT_OBSERVED,
        ("status.observedGeneration 3 != metadata.generation 4", "StatefulSet controller"),
    ),
    Row(
        "sts-no-status-yet",
        statefulset(observed_generation=None),
        sts_pods(),
        SettledReason.GENERATION_NOT_OBSERVED,
        ("observedGeneration unset",),
    ),
    Row(
        "sts-rolling-update-in-progress",
        statefulset(update_revision=NEXT_REV),
        sts_pods(),
        SettledReason.ROLLOUT_IN_PROGRESS,
        (f"currentRevision {REV} != updateRevision {NEXT_REV}", "StatefulSet controller's"),
    ),
    Row(
        "sts-partition-held-canary",
        statefulset(update_revision=NEXT_REV, partition=2),
        [*sts_pods(2), pod("db-2", revision=NEXT_REV)],
        SettledReason.ROLLOUT_IN_PROGRESS,
        ("partition 2 holds the ordinals below it",),
    ),
    Row(
        # OnDelete never advances currentRevision: a pending change is judged per pod.
        "sts-on-delete-pending-template-is-settled",
        statefulset(strategy=UpdateStrategy.ON_DELETE, update_revision=NEXT_REV),
        sts_pods(),
        SettledReason.SETTLED,
    ),
    Row(
        "sts-more-ready-than-spec-is-settled",
        statefulset(replicas=2, ready_replicas=3),
        sts_pods(3),
        SettledReason.SETTLED,
    ),
    # DaemonSet
    Row("ds-settled", daemonset(), ds_pods(), SettledReason.SETTLED),
    Row(
        "ds-a-pod-terminating",
        daemonset(),
        [*ds_pods(2), pod("agent-c", deleting=True)],
        SettledReason.POD_TERMINATING,
        ("agent-c",),
    ),
    Row(
        "ds-a-pod-not-ready",
        daemonset(),
        [*ds_pods(2), pod("agent-c", ready=False)],
        SettledReason.POD_NOT_READY,
    ),
    Row(
        "ds-a-pod-missing-from-the-listing",
        daemonset(),
        ds_pods(2),
        SettledReason.TOO_FEW_READY,
        ("2 of 3",),
    ),
    Row(
        "ds-number-ready-below-desired",
        daemonset(number_ready=2),
        ds_pods(),
        SettledReason.TOO_FEW_READY,
        ("status.numberReady 2 != desiredNumberScheduled 3",),
    ),
    Row(
        "ds-number-ready-above-desired",
        daemonset(number_ready=4),
        ds_pods(),
        SettledReason.TOO_FEW_READY,
        ("status.numberReady 4 != desiredNumberScheduled 3",),
    ),
    Row(
        "ds-pods-unavailable",
        daemonset(number_unavailable=1),
        ds_pods(),
        SettledReason.PODS_UNAVAILABLE,
        ("status.numberUnavailable 1 != 0",),
    ),
    Row(
        "ds-not-every-node-updated",
        daemonset(updated_number_scheduled=2),
        ds_pods(),
        SettledReason.ROLLOUT_IN_PROGRESS,
        ("status.updatedNumberScheduled 2 != desiredNumberScheduled 3", "DaemonSet controller"),
    ),
    Row(
        "ds-generation-not-observed",
        daemonset(observed_generation=1),
        ds_pods(),
        SettledReason.GENERATION_NOT_OBSERVED,
        ("status.observedGeneration 1 != metadata.generation 2",),
    ),
    Row(
        "ds-number-available-below-desired",
        daemonset(number_available=2),
        ds_pods(),
        SettledReason.PODS_UNAVAILABLE,
        ("status.numberAvailable 2 < desiredNumberScheduled 3",),
    ),
    # Fail safe: neither side of the generation clause is known (issue 27's gap).
    Row(
        "ds-no-generation-nor-observed-generation",
        replace(daemonset(observed_generation=None), generation=None),
        ds_pods(),
        SettledReason.GENERATION_NOT_OBSERVED,
        ("observedGeneration unset != metadata.generation None", "DaemonSet controller"),
    ),
    Row(
        "sts-no-generation-nor-observed-generation",
        replace(statefulset(observed_generation=None), generation=None),
        sts_pods(),
        SettledReason.GENERATION_NOT_OBSERVED,
        ("observedGeneration unset != metadata.generation None", "StatefulSet controller"),
    ),
    # Only the generation unknown: a status observed at some generation says nothing about
    # a spec whose generation nobody read.
    Row(
        "ds-no-generation-with-an-observed-generation",
        replace(daemonset(), generation=None),
        ds_pods(),
        SettledReason.GENERATION_NOT_OBSERVED,
        ("observedGeneration 2 != metadata.generation None",),
    ),
    Row(
        "sts-no-generation-with-an-observed-generation",
        replace(statefulset(), generation=None),
        sts_pods(),
        SettledReason.GENERATION_NOT_OBSERVED,
        ("observedGeneration 4 != metadata.generation None",),
    ),
    Row(
        "sts-available-below-spec",
        statefulset(available_replicas=2),
        sts_pods(),
        SettledReason.PODS_UNAVAILABLE,
        ("status.availableReplicas 2 < spec.replicas 3",),
    ),
    # Deployment: the pod clauses, then its status as `kubectl rollout status` reads it.
    Row(
        "deployment-settled",
        deployment_view("ns", "web", 2, (ContainerView("app", IMAGE),)),
        sts_pods(2),
        SettledReason.SETTLED,
    ),
    Row(
        "deployment-too-few",
        deployment_view("ns", "web", 3, (ContainerView("app", IMAGE),)),
        sts_pods(2),
        SettledReason.TOO_FEW_READY,
    ),
    Row(
        "deployment-generation-not-observed",
        web(status=rolled_out(3, generation=1)),
        sts_pods(),
        SettledReason.GENERATION_NOT_OBSERVED,
        ("status.observedGeneration 1 != metadata.generation 2", "Deployment controller"),
    ),
    Row(
        "deployment-no-status-yet",
        web(status=DeploymentStatus()),
        sts_pods(),
        SettledReason.GENERATION_NOT_OBSERVED,
        ("observedGeneration unset",),
    ),
    Row(
        "deployment-no-generation-nor-observed-generation",
        replace(web(status=rolled_out(3, generation=None)), generation=None),  # type: ignore[arg-type]
        sts_pods(),
        SettledReason.GENERATION_NOT_OBSERVED,
    ),
    Row(
        "deployment-paused",
        web(paused=True),
        sts_pods(),
        SettledReason.ROLLOUT_PAUSED,
        ("spec.paused is true", "kubectl rollout resume deployment/web"),
    ),
    Row(
        "deployment-progress-deadline-exceeded",
        web(progress_deadline_exceeded=True),
        sts_pods(),
        SettledReason.PROGRESS_DEADLINE_EXCEEDED,
        ("ProgressDeadlineExceeded",),
    ),
    Row(
        "deployment-not-every-replica-updated",
        web(updated_replicas=2),
        sts_pods(),
        SettledReason.ROLLOUT_IN_PROGRESS,
        ("status.updatedReplicas 2 < spec.replicas 3", "Deployment controller's"),
    ),
    Row(
        # The surge moment of a template rollout: every pod Ready, an old one still there.
        "deployment-old-replica-pending-termination",
        web(replicas=4),
        [*sts_pods(), pod("db-3")],
        SettledReason.ROLLOUT_IN_PROGRESS,
        ("status.replicas 4 > updatedReplicas 3", "1 old replica(s) pending termination"),
    ),
    Row(
        "deployment-scaling-down",
        web(replicas=4, updated_replicas=4),
        [*sts_pods(), pod("db-3")],
        SettledReason.ROLLOUT_IN_PROGRESS,
        ("status.replicas 4 > spec.replicas 3: scaling down",),
    ),
    Row(
        "deployment-available-below-updated",
        web(available_replicas=2),
        sts_pods(),
        SettledReason.PODS_UNAVAILABLE,
        ("status.availableReplicas 2 of 3 updated",),
    ),
    Row(
        "deployment-unavailable-replicas",
        web(unavailable_replicas=1),
        sts_pods(),
        SettledReason.PODS_UNAVAILABLE,
        ("unavailableReplicas 1",),
    ),
    Row(
        # Its status says all available (written before); one pod is Ready 5 s of 30.
        "deployment-min-ready-seconds-from-the-pods",
        web(min_ready_seconds=30),
        [*sts_pods(2), pod("db-2", ready_since=NOW - timedelta(seconds=5))],
        SettledReason.PODS_UNAVAILABLE,
        ("db-2 (Ready 5s)", "minReadySeconds 30"),
    ),
    Row(
        "deployment-min-ready-seconds-met",
        web(min_ready_seconds=30),
        [*sts_pods(2), pod("db-2", ready_since=NOW - timedelta(seconds=30))],
        SettledReason.SETTLED,
    ),
    Row(
        "deployment-min-ready-seconds-ready-since-unknown",
        web(min_ready_seconds=30),
        [*sts_pods(2), pod("db-2", ready_since=None)],
        SettledReason.PODS_UNAVAILABLE,
        ("db-2 (Ready since an unknown time)",),
    ),
    Row(
        "sts-min-ready-seconds-from-the-pods",
        replace(statefulset(), min_ready_seconds=60),
        [*sts_pods(2), pod("db-2", ready_since=NOW - timedelta(seconds=59))],
        SettledReason.PODS_UNAVAILABLE,
        ("db-2 (Ready 59s)",),
    ),
]


@pytest.mark.parametrize("row", SETTLEDNESS, ids=[r.id for r in SETTLEDNESS])
def test_settledness_clause(row: Row) -> None:
    found = is_settled(workload=row.workload, pods=row.pods, now=NOW)
    assert found.reason is row.reason, found.detail
    for fragment in row.detail:
        assert fragment in found.detail


def test_a_workload_status_must_match_its_kind() -> None:
    with pytest.raises(ValueError, match="statefulset ns/db: expected StatefulSetStatus"):
        WorkloadView("ns", "db", 1, (), kind=WorkloadKind.STATEFULSET)
    with pytest.raises(ValueError, match="deployment ns/web: expected DeploymentStatus"):
        WorkloadView("ns", "web", 1, (), status=DaemonSetStatus())
    with pytest.raises(ValueError, match="daemonset ns/a: expected DaemonSetStatus"):
        WorkloadView("ns", "a", 1, (), kind=WorkloadKind.DAEMONSET, status=StatefulSetStatus())


def test_a_workload_is_named_with_its_kind() -> None:
    assert statefulset().key == "ns/statefulset/db"
    assert statefulset().kind_name == "statefulset/db"
    assert daemonset().key == "ns/daemonset/agent"
    assert WorkloadKind.STATEFULSET.api_kind == "StatefulSet"
    assert WorkloadKind.DAEMONSET.resource == "daemonsets"


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


# --------------------------------------------------------------------------------------------
# decide() on the two kinds


def run(
    workload: WorkloadView,
    pods: Sequence[PodView],
    nodes: Mapping[str, NodeView | Unknown] | None = None,
) -> Decision:
    return decide(
        workload=workload,
        pods=pods,
        registries={HOST},
        resolved={REF: NEW},
        sightings={REF: Sighting(NEW, SEEN)},
        children={NEW: frozenset()},
        contents=CONTENT,
        nodes=nodes,
    )


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
    assert first.containers[0].verdict is Verdict.NEEDS_NODES
    assert first.needs_nodes == {NodeRequest(f"node-agent-{c}") for c in "abc"}
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
