"""Pod JSON into the core's ``PodView``, and pods grouped under the workloads that claim them.

Pure: a pod's readiness and its changes, its containers' statuses (the API's own
``imageID``, ``containerStatuses``), its ``controller-revision-hash`` and node, and its
controlling owner. A workload claims the pods its selector matches and, for StatefulSets
and DaemonSets, that it controls (``owns``); ``with_platforms`` gives each pod its node's
platform (docs/adr/005-reading-the-cluster.md).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any, Final

from autoroll.kube.api_time import parse_time
from autoroll.kube.selectors import LabelSelector, SelectorIndex
from autoroll.kube.workloads import container_from_json
from autoroll.model import (
    ContainerStatusView,
    Enrolled,
    PodView,
    WorkloadKind,
    WorkloadView,
)

#: The label the StatefulSet and DaemonSet controllers put on each pod: its ControllerRevision.
REVISION_LABEL: Final = "controller-revision-hash"

#: Stands in for a missing creationTimestamp (never seen from a real API server): "created
#: in the future" makes the loop guard spare the pod, the safe direction.
_UNKNOWN_CREATION: Final = datetime.max.replace(tzinfo=UTC)


def with_platforms(found: Sequence[Enrolled], platforms: Mapping[str, str]) -> tuple[Enrolled, ...]:
    """Each pod with the platform of the node it is bound to (``node_platforms``); a pod on
    a node ``platforms`` does not name, or not bound yet, has an unknown one (None). The
    same for pods converted here and pods held by the watched cache, so a targeted pass
    from the cache tells platforms exactly as a full listing does."""
    return tuple(
        Enrolled(
            e.workload,
            tuple(replace(p, platform=platforms.get(p.node) if p.node else None) for p in e.pods),
        )
        for e in found
    )


@dataclass(frozen=True, slots=True)
class ListedPod:
    """A pod as listed: its view, its labels (for selector matching) and the UID of its
    controlling owner (``ownerReferences[]`` with ``controller: true``), empty when none."""

    view: PodView
    labels: Mapping[str, str]
    controller_uid: str = ""


def pod_from_json(
    pod: Mapping[str, Any], *, platforms: Mapping[str, str] | None = None
) -> ListedPod:
    """Convert a ``Pod`` into the core's view, its labels and its controlling owner.

    ``platforms`` (``node_platforms``, with PLATFORM_AWARE) gives the pod the platform of
    the node it is bound to; without it, or unbound, the platform is unknown (None).
    """
    meta = pod.get("metadata") or {}
    status = pod.get("status") or {}
    conditions = status.get("conditions") or ()
    labels = meta.get("labels") or {}
    node = (pod.get("spec") or {}).get("nodeName")
    view = PodView(
        namespace=meta.get("namespace", ""),
        name=meta.get("name", ""),
        uid=meta.get("uid") or "",
        created_at=_creation_time(meta.get("creationTimestamp")),
        phase=status.get("phase") or "Pending",
        deleting=meta.get("deletionTimestamp") is not None,
        ready=any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions),
        ready_changed_at=_ready_changed_at(conditions),
        containers=tuple(
            container_from_json(c) for c in (pod.get("spec") or {}).get("containers") or ()
        ),
        statuses=tuple(
            ContainerStatusView(
                name=s.get("name", ""),
                image=s.get("image") or "",
                image_id=s.get("imageID") or "",
                ready=bool(s.get("ready")),
                restart_count=s.get("restartCount") or 0,
            )
            for s in status.get("containerStatuses") or ()
        ),
        platform=(platforms or {}).get(node) if isinstance(node, str) else None,
        revision=str(labels.get(REVISION_LABEL) or ""),
        node=str(node or ""),
    )
    return ListedPod(view, labels, _controller_uid(meta.get("ownerReferences") or ()))


def _controller_uid(references: Iterable[Mapping[str, Any]]) -> str:
    """The UID of the one owner reference marked ``controller: true`` (the API allows one)."""
    for reference in references:
        if isinstance(reference, Mapping) and reference.get("controller") is True:
            return str(reference.get("uid") or "")
    return ""


def _ready_changed_at(conditions: Any) -> datetime | None:
    """``lastTransitionTime`` of the Ready condition; None when absent or unreadable."""
    for condition in conditions:
        if isinstance(condition, Mapping) and condition.get("type") == "Ready":
            return parse_time(condition.get("lastTransitionTime"))
    return None


def _creation_time(raw: object) -> datetime:
    """``creationTimestamp`` (RFC 3339, UTC); missing or unreadable reads as the far future,
    so the loop guard spares the pod: the safe direction for data we never expect."""
    return parse_time(raw) or _UNKNOWN_CREATION


def group_pods(
    workloads: Sequence[tuple[WorkloadView, LabelSelector]],
    pods: Iterable[ListedPod],
) -> tuple[Enrolled, ...]:
    """Give each workload the pods of its namespace that its selector matches and, for a
    StatefulSet or DaemonSet, that it controls (an ``ownerReference`` with its UID).

    Deployments keep the selector rule alone (their pods are owned by ReplicaSets). A pod
    matched by two enrolled Deployments (overlapping selectors) is given to both: each
    decision then counts it, which can only make either less eager to delete. A workload
    without a UID owns nothing (the API always sends one).
    """
    indexes: dict[str, SelectorIndex] = {}
    for position, (workload, selector) in enumerate(workloads):
        indexes.setdefault(workload.namespace, SelectorIndex()).add(str(position), selector)
    matched: list[list[PodView]] = [[] for _ in workloads]
    for pod in pods:
        index = indexes.get(pod.view.namespace)
        if index is None:
            continue
        for found in index.matching(pod.labels):
            position = int(found)
            if owns(workloads[position][0], pod):
                matched[position].append(pod.view)
    enrolled = [
        Enrolled(workload, tuple(sorted(pods_of, key=lambda p: p.name)))
        for (workload, _), pods_of in zip(workloads, matched, strict=True)
    ]
    return tuple(sorted(enrolled, key=lambda e: e.workload.key))


def owns(workload: WorkloadView, pod: ListedPod) -> bool:
    """Beside its selector, may ``workload`` claim ``pod``? A Deployment claims what its
    selector matches (its ReplicaSets own the pods); a StatefulSet or DaemonSet only the
    pods it controls (an ``ownerReference`` with its UID)."""
    if workload.kind is WorkloadKind.DEPLOYMENT:
        return True
    return bool(workload.uid) and pod.controller_uid == workload.uid


__all__ = [
    "REVISION_LABEL",
    "ListedPod",
    "group_pods",
    "owns",
    "pod_from_json",
    "with_platforms",
]
