"""Which of a workload's stale pods is the one deleted (the victim), by kind. Pure.

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
from typing import Final

from autoroll.core.decision import NodeRequest, Reason
from autoroll.core.model import (
    DaemonSetStatus,
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
    "ordinal",
    "pod_hold",
]
