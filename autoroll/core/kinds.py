"""What differs between the kinds of workload: when each is settled. Pure.

Every kind shares the pod clauses (no pod terminating, every pod Ready and, under
``minReadySeconds``, Ready for that long: *available*; as many pods as it wants); then its
own status must say its controller has nothing in hand, read as ``kubectl rollout status``
reads it (k8s.io/kubectl ``pkg/polymorphichelpers/rollout_status.go``), with a few stricter
clauses of autoroll's own::

    Deployment   observedGeneration == generation; not spec.paused; no Progressing condition
                 with reason ProgressDeadlineExceeded; updatedReplicas >= spec.replicas;
                 status.replicas <= updatedReplicas (no old ReplicaSet's pod left) and
                 <= spec.replicas (not scaling down); availableReplicas >= updatedReplicas;
                 unavailableReplicas == 0
    StatefulSet  observedGeneration == generation, readyReplicas >= spec.replicas,
                 availableReplicas >= spec.replicas and, with RollingUpdate,
                 currentRevision == updateRevision (a rollout in progress, a partition-held
                 canary included, is the StatefulSet controller's)
    DaemonSet    observedGeneration == generation, numberReady == desiredNumberScheduled,
                 numberAvailable >= desiredNumberScheduled, numberUnavailable == 0,
                 updatedNumberScheduled == desiredNumberScheduled

The first clause that fails is the answer, with a detail that names its fields and values.
A status can lag the pods and the pods can lag a status; both must agree, so either one
lagging holds the roll, never releases it.

Which stale pod goes first, and which may never be the one deleted, is
``autoroll.core.victim``'s.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Final

from autoroll.core.decision import Settledness, SettledReason
from autoroll.core.model import (
    DaemonSetStatus,
    DeploymentStatus,
    PodView,
    StatefulSetStatus,
    UpdateStrategy,
    WorkloadView,
)

SETTLED: Final = Settledness(SettledReason.SETTLED)


def is_settled(
    *, workload: WorkloadView, pods: Sequence[PodView], now: datetime | None = None
) -> Settledness:
    """May this workload lose a pod now? The pod clauses first, then the kind's status.

    ``now`` tells how long a pod has been Ready; without it, a workload with
    ``minReadySeconds`` has no available pod (the safe answer).
    """
    pod_clauses = _pods_settled(pods, workload, now)
    if not pod_clauses.is_settled:
        return pod_clauses
    status = workload.status
    if isinstance(status, DeploymentStatus):
        return _deployment_settled(workload, status)
    if isinstance(status, StatefulSetStatus):
        return _statefulset_settled(workload, status)
    if isinstance(status, DaemonSetStatus):
        return _daemonset_settled(workload, status)
    # Cannot happen (WorkloadView requires its kind's status); never settled on a guess.
    return Settledness(SettledReason.GENERATION_NOT_OBSERVED, "no status read")


def _pods_settled(
    pods: Sequence[PodView], workload: WorkloadView, now: datetime | None
) -> Settledness:
    """The clauses every kind shares, read from the pods as listed (never stale). Terminal
    (Succeeded/Failed) pods do not count, except that one being deleted is still terminating."""
    live = [p for p in pods if not p.is_terminal]
    # Terminal or not: a deleted pod whose containers exited 0 shows Succeeded (non-zero:
    # Failed) until the kubelet has finished with it, and its replacement is on its way.
    terminating = sorted(p.name for p in pods if p.deleting)
    if terminating:
        # A replacement is still on its way; deleting another would stack disruptions.
        return Settledness(
            SettledReason.POD_TERMINATING, f"pod terminating: {', '.join(terminating)}"
        )
    unready = sorted(p.name for p in live if not p.ready)
    if unready:
        # The last replacement (or something else) is not serving yet.
        return Settledness(SettledReason.POD_NOT_READY, f"pod not ready: {', '.join(unready)}")
    unavailable = [
        _not_available(p, workload.min_ready_seconds, now) for p in sorted(live, key=_name)
    ]
    waiting = [text for text in unavailable if text]
    if waiting:
        # Ready, but not for minReadySeconds yet: its controller does not count it either.
        return Settledness(
            SettledReason.PODS_UNAVAILABLE,
            f"pod not available yet: {', '.join(waiting)}"
            f" (minReadySeconds {workload.min_ready_seconds})",
        )
    if len(live) < workload.replicas:
        # Scaling up, or a replacement not created yet: no spare capacity to lose. A status
        # can lag the pods; the listing cannot, so this holds whatever the status says.
        return Settledness(
            SettledReason.TOO_FEW_READY, f"{len(live)} of {workload.replicas} replicas ready"
        )
    return SETTLED


def _name(pod: PodView) -> str:
    return pod.name


def _not_available(pod: PodView, min_ready_seconds: int, now: datetime | None) -> str:
    """Why a Ready pod does not count as available yet ("" when it does), as its controller
    counts it: Ready for at least ``minReadySeconds`` (the Ready condition's last change)."""
    if min_ready_seconds <= 0:
        return ""
    since = pod.ready_changed_at
    if since is None or now is None:
        return f"{pod.name} (Ready since an unknown time)"
    ready_for = now - since
    if ready_for < timedelta(seconds=min_ready_seconds):
        return f"{pod.name} (Ready {max(0, int(ready_for.total_seconds()))}s)"
    return ""


def _deployment_settled(workload: WorkloadView, status: DeploymentStatus) -> Settledness:
    """``kubectl rollout status`` for a Deployment, then autoroll's own stricter clauses."""
    generation = _generation_observed(workload, status.observed_generation)
    if not generation.is_settled:
        return generation
    if status.paused:
        # A paused rollout is its owner's to resume; a deletion would roll it behind their back.
        return Settledness(
            SettledReason.ROLLOUT_PAUSED,
            "spec.paused is true: the rollout is paused (kubectl rollout resume"
            f" deployment/{workload.name} to have it rolled)",
        )
    if status.progress_deadline_exceeded:
        return Settledness(
            SettledReason.PROGRESS_DEADLINE_EXCEEDED,
            "the Progressing condition says ProgressDeadlineExceeded: its last rollout failed",
        )
    wanted = workload.replicas
    if status.updated_replicas < wanted:
        # A template rollout: the Deployment controller's, and its surge is its disruption.
        return Settledness(
            SettledReason.ROLLOUT_IN_PROGRESS,
            f"status.updatedReplicas {status.updated_replicas} < spec.replicas {wanted}:"
            " a template rollout is in progress; it is the Deployment controller's to finish",
        )
    if status.replicas > status.updated_replicas:
        return Settledness(
            SettledReason.ROLLOUT_IN_PROGRESS,
            f"status.replicas {status.replicas} > updatedReplicas {status.updated_replicas}:"
            f" {status.replicas - status.updated_replicas} old replica(s) pending termination",
        )
    if status.replicas > wanted:
        return Settledness(
            SettledReason.ROLLOUT_IN_PROGRESS,
            f"status.replicas {status.replicas} > spec.replicas {wanted}: scaling down",
        )
    if status.available_replicas < status.updated_replicas or status.unavailable_replicas:
        return Settledness(
            SettledReason.PODS_UNAVAILABLE,
            f"status.availableReplicas {status.available_replicas} of"
            f" {status.updated_replicas} updated, unavailableReplicas"
            f" {status.unavailable_replicas}",
        )
    return SETTLED


def _generation_observed(workload: WorkloadView, observed: int | None) -> Settledness:
    if workload.generation is None or observed != workload.generation:
        # The status describes an older spec: none of its counts can be trusted yet.
        seen = "unset" if observed is None else str(observed)
        return Settledness(
            SettledReason.GENERATION_NOT_OBSERVED,
            f"status.observedGeneration {seen} != metadata.generation {workload.generation}:"
            f" the {workload.kind.api_kind} controller has not caught up with the latest spec",
        )
    return SETTLED


def _statefulset_settled(workload: WorkloadView, status: StatefulSetStatus) -> Settledness:
    generation = _generation_observed(workload, status.observed_generation)
    if not generation.is_settled:
        return generation
    if status.ready_replicas < workload.replicas:
        # Its own count of Ready pods is short: a pod is starting or failing.
        return Settledness(
            SettledReason.TOO_FEW_READY,
            f"status.readyReplicas {status.ready_replicas} < spec.replicas {workload.replicas}",
        )
    if status.available_replicas < workload.replicas:
        # Ready, but not yet for minReadySeconds by its own count.
        return Settledness(
            SettledReason.PODS_UNAVAILABLE,
            f"status.availableReplicas {status.available_replicas} < spec.replicas"
            f" {workload.replicas}",
        )
    if (
        status.update_strategy is UpdateStrategy.ROLLING_UPDATE
        and status.current_revision != status.update_revision
    ):
        # A template rollout is under way (or held on purpose by a partition): the
        # StatefulSet controller's business until it completes.
        held = (
            f"; partition {status.partition} holds the ordinals below it at currentRevision"
            if status.partition
            else ""
        )
        return Settledness(
            SettledReason.ROLLOUT_IN_PROGRESS,
            f"currentRevision {status.current_revision or 'unset'} != updateRevision"
            f" {status.update_revision or 'unset'}: a template rollout is in progress{held};"
            " it is the StatefulSet controller's to finish",
        )
    return SETTLED


def _daemonset_settled(workload: WorkloadView, status: DaemonSetStatus) -> Settledness:
    generation = _generation_observed(workload, status.observed_generation)
    if not generation.is_settled:
        return generation
    desired = status.desired_number_scheduled
    if status.number_ready != desired:
        # Its own count of Ready pods is not one per node: a pod is starting or failing.
        return Settledness(
            SettledReason.TOO_FEW_READY,
            f"status.numberReady {status.number_ready} != desiredNumberScheduled {desired}",
        )
    if status.number_unavailable:
        # Ready, but not yet available for minReadySeconds (or the counts are in flux).
        return Settledness(
            SettledReason.PODS_UNAVAILABLE,
            f"status.numberUnavailable {status.number_unavailable} != 0",
        )
    if status.number_available < desired:
        return Settledness(
            SettledReason.PODS_UNAVAILABLE,
            f"status.numberAvailable {status.number_available} < desiredNumberScheduled {desired}",
        )
    if status.updated_number_scheduled != desired:
        # Some nodes run an older template: its controller's rollout (or, with OnDelete, a
        # template change a deletion would release).
        return Settledness(
            SettledReason.ROLLOUT_IN_PROGRESS,
            f"status.updatedNumberScheduled {status.updated_number_scheduled} !="
            f" desiredNumberScheduled {desired}: a template rollout is in progress;"
            " it is the DaemonSet controller's to finish",
        )
    return SETTLED


__all__ = [
    "is_settled",
]
