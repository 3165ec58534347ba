"""Table tests for each kind's settledness in ``autoroll.core.kinds``, clause by clause.

Every clause has a row that fails when the clause is removed or weakened: a settled
baseline per kind, then one row per clause with only that clause broken, naming the reason
and the fields in its detail.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import timedelta

import pytest

from autoroll.core.decide import SettledReason
from autoroll.core.kinds import is_settled
from autoroll.core.model import (
    ContainerView,
    DaemonSetStatus,
    DeploymentStatus,
    PodView,
    StatefulSetStatus,
    UpdateStrategy,
    WorkloadKind,
    WorkloadView,
)
from tests.support.kind_views import (
    IMAGE,
    NEXT_REV,
    NOW,
    REV,
    daemonset,
    ds_pods,
    pod,
    statefulset,
    sts_pods,
    web,
)
from tests.support.views import deployment_view, rolled_out

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
