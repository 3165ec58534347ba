"""What differs between the kinds of workload: when each is settled, which of its stale pods
goes first, and which pods may never be the one deleted. Pure.

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

Order and holds: a StatefulSet loses its highest ordinal first, as its own controller rolls;
the others their oldest pod first. A StatefulSet pod whose ``controller-revision-hash`` is
not the ``updateRevision`` is never deleted: it would come back from the latest template,
and with OnDelete that would release a template change nobody released. A DaemonSet pod is
deleted only once its Node is known to be Ready (its replacement must be able to start
there); the shell reads the Nodes the core asks for (``NodeRequest``), at most
``MAX_NODE_CHECKS`` per DaemonSet and pass.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Final

from autoroll.core.decision import NodeRequest, Reason, Settledness, SettledReason
from autoroll.core.model import (
    DaemonSetStatus,
    DeploymentStatus,
    NodeView,
    PodView,
    StatefulSetStatus,
    Unknown,
    UpdateStrategy,
    WorkloadKind,
    WorkloadView,
)

#: Nodes read per DaemonSet and pass, at most: the first candidates in order. Bounded, so a
#: DaemonSet on many NotReady nodes costs three GETs a pass, not one per node.
MAX_NODE_CHECKS: Final = 3

_ORDINAL: Final = re.compile(r"0|[1-9][0-9]*")

SETTLED: Final = Settledness(SettledReason.SETTLED)


# --------------------------------------------------------------------------------------------
# Settled


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


# --------------------------------------------------------------------------------------------
# Order and holds


def ordinal(workload: WorkloadView, pod: PodView) -> int | None:
    """A StatefulSet pod's ordinal (``db-2`` of ``db`` is 2), or None when its name has none."""
    prefix = f"{workload.name}-"
    if not pod.name.startswith(prefix):
        return None
    suffix = pod.name[len(prefix) :]
    return int(suffix) if _ORDINAL.fullmatch(suffix) else None


def deletion_order(workload: WorkloadView, pods: Sequence[PodView]) -> tuple[PodView, ...]:
    """The stale pods in the order they are to go: a StatefulSet's highest ordinal first
    (pods without an ordinal last, where their hold names them), the oldest first otherwise."""
    if workload.kind is WorkloadKind.STATEFULSET:

        def by_ordinal(pod: PodView) -> tuple[int, str]:
            number = ordinal(workload, pod)
            return (-number if number is not None else 1, pod.name)

        return tuple(sorted(pods, key=by_ordinal))
    return tuple(sorted(pods, key=lambda p: (p.created_at, p.name)))


@dataclass(frozen=True, slots=True)
class Hold:
    """Why one stale pod may not be the one deleted: for now, or by autoroll at all.

    ``node`` is set when the answer waits on reading that Node (``Reason.NODES_NEEDED``).
    """

    pod: str
    reason: Reason
    detail: str
    node: NodeRequest | None = None


def pod_hold(
    *, workload: WorkloadView, pod: PodView, nodes: Mapping[str, NodeView | Unknown]
) -> Hold | None:
    """Why ``pod`` may not be deleted now, or None when it may (its workload being settled)."""
    status = workload.status
    if isinstance(status, StatefulSetStatus):
        return _statefulset_hold(workload, status, pod)
    if isinstance(status, DaemonSetStatus):
        return _node_hold(pod, nodes)
    return None


def _statefulset_hold(
    workload: WorkloadView, status: StatefulSetStatus, pod: PodView
) -> Hold | None:
    if ordinal(workload, pod) is None:
        # Not one of its ordinals (never made by the StatefulSet controller): leave it alone.
        return Hold(pod.name, Reason.NOT_AN_ORDINAL, f"{pod.name} is not {workload.name}-<n>")
    if pod.revision != status.update_revision:
        # It would come back from the latest template: that is a template release, not a
        # roll of the same template, and not autoroll's to make.
        at = f"revision {pod.revision}" if pod.revision else "no controller-revision-hash"
        if status.update_strategy is UpdateStrategy.ON_DELETE:
            why = (
                "with updateStrategy OnDelete, deleting it would also release a template"
                " change; delete it yourself when you release that change"
            )
        else:
            why = "the StatefulSet controller updates it"
        return Hold(
            pod.name,
            Reason.REVISION_BEHIND,
            f"{pod.name} is at {at}, updateRevision is {status.update_revision or 'unset'}: {why}",
        )
    return None


def _node_hold(pod: PodView, nodes: Mapping[str, NodeView | Unknown]) -> Hold | None:
    """A DaemonSet's replacement pod can only start on the same node: it must be Ready."""
    if not pod.node:
        return Hold(pod.name, Reason.NODE_UNKNOWN, f"{pod.name} is not bound to a node")
    answer = nodes.get(pod.node)
    if answer is None:
        # Read the node first: the shell asks, then decides again.
        return Hold(
            pod.name,
            Reason.NODES_NEEDED,
            f"read node {pod.node}",
            NodeRequest(pod.node),
        )
    if isinstance(answer, Unknown):
        return Hold(
            pod.name,
            Reason.NODE_UNKNOWN,
            f"{pod.name}: cannot tell whether node {pod.node} is Ready: {answer}",
        )
    if not answer.ready:
        return Hold(
            pod.name,
            Reason.NODE_NOT_READY,
            f"{pod.name}: node {pod.node} is not Ready"
            + (f" ({answer.detail})" if answer.detail else ""),
        )
    return None


@dataclass(frozen=True, slots=True)
class Choice:
    """The pod to delete (if any), why the candidates before it were passed over, and the
    Nodes to read before the choice can be made."""

    victim: PodView | None
    holds: tuple[Hold, ...] = ()
    needs: tuple[NodeRequest, ...] = ()


def choose(
    *,
    workload: WorkloadView,
    candidates: Sequence[PodView],
    nodes: Mapping[str, NodeView | Unknown],
) -> Choice:
    """The first candidate (in ``deletion_order``) that no hold keeps.

    A candidate whose Node is not read yet is asked for, with the others up to
    ``MAX_NODE_CHECKS``, and nothing is chosen until they are answered: so the order is
    kept, and a pod is deleted only on a Node read in this pass.
    """
    holds: list[Hold] = []
    needs: list[NodeRequest] = []
    ordered = deletion_order(workload, candidates)
    if workload.kind is WorkloadKind.DAEMONSET:
        ordered = ordered[:MAX_NODE_CHECKS]  # each consults its Node: a bounded few
    for pod in ordered:
        hold = pod_hold(workload=workload, pod=pod, nodes=nodes)
        if hold is None:
            if needs:
                break  # an earlier candidate's Node is still to be read
            return Choice(pod, tuple(holds))
        if hold.node is not None:
            needs.append(hold.node)
        else:
            holds.append(hold)
    return Choice(None, tuple(holds), tuple(needs))


__all__ = [
    "MAX_NODE_CHECKS",
    "Choice",
    "Hold",
    "choose",
    "deletion_order",
    "is_settled",
    "ordinal",
    "pod_hold",
]
