"""Pod JSON into the core's ``PodView``, and pods grouped under the workloads that claim them.

Pure: a pod's readiness and its changes, its containers' and init containers' statuses
(the API's own ``imageID``), its ``controller-revision-hash`` and node, and its controlling
owner. A workload claims the pods its selector matches *and* that it controls (``owns``):
a StatefulSet or DaemonSet the pods whose controller reference carries its UID, a
Deployment those whose controller is one of its ReplicaSets, which the Deployment
controller always names ``<deployment>-<pod-template-hash>`` (docs/adr/005). A pod the
selector matches but something else controls (a canary Deployment sharing the app's
label, a Job, a ``helm test`` pod) is never counted, never deleted, and is listed as
``ForeignPod``. ``with_platforms`` gives each pod its node's platform.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any, Final

from autoroll.core.model import (
    ContainerStatusView,
    Enrolled,
    ForeignPod,
    PodView,
    WorkloadKind,
    WorkloadView,
)
from autoroll.kube.api_time import parse_time
from autoroll.kube.selectors import LabelSelector, SelectorIndex
from autoroll.kube.workloads import pod_spec_containers

#: The label the StatefulSet and DaemonSet controllers put on each pod: its ControllerRevision.
REVISION_LABEL: Final = "controller-revision-hash"
#: The label the Deployment controller puts on each ReplicaSet's selector and pod template;
#: the ReplicaSet itself is named ``<deployment>-<this value>``.
TEMPLATE_HASH_LABEL: Final = "pod-template-hash"

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
            e.foreign,
        )
        for e in found
    )


@dataclass(frozen=True, slots=True)
class Controller:
    """A pod's controlling owner (its ``ownerReferences[]`` entry with ``controller: true``)."""

    api_version: str
    kind: str
    name: str
    uid: str


@dataclass(frozen=True, slots=True)
class ListedPod:
    """A pod as listed: its view, its labels (for selector matching) and its controlling
    owner (None when it has none: a bare pod)."""

    view: PodView
    labels: Mapping[str, str]
    controller: Controller | None = None

    @property
    def controller_uid(self) -> str:
        return self.controller.uid if self.controller is not None else ""


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
        containers=pod_spec_containers(pod.get("spec") or {}),
        # Names are unique across a pod's init containers and containers (API validation).
        statuses=tuple(
            ContainerStatusView(
                name=s.get("name", ""),
                image=s.get("image") or "",
                image_id=s.get("imageID") or "",
                ready=bool(s.get("ready")),
                restart_count=s.get("restartCount") or 0,
            )
            for key in ("initContainerStatuses", "containerStatuses")
            for s in status.get(key) or ()
        ),
        platform=(platforms or {}).get(node) if isinstance(node, str) else None,
        revision=str(labels.get(REVISION_LABEL) or ""),
        node=str(node or ""),
    )
    return ListedPod(view, labels, _controller(meta.get("ownerReferences") or ()))


def _controller(references: Iterable[Mapping[str, Any]]) -> Controller | None:
    """The one owner reference marked ``controller: true`` (the API allows one), or None."""
    for reference in references:
        if isinstance(reference, Mapping) and reference.get("controller") is True:
            return Controller(
                api_version=str(reference.get("apiVersion") or ""),
                kind=str(reference.get("kind") or ""),
                name=str(reference.get("name") or ""),
                uid=str(reference.get("uid") or ""),
            )
    return None


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
    """Give each workload the pods of its namespace that its selector matches and that it
    controls (``owns``); the others its selector matches are its ``foreign`` pods.

    A workload without a UID owns nothing (the API always sends one). Two workloads never
    both own one pod: a pod has one controller.
    """
    indexes: dict[str, SelectorIndex] = {}
    for position, (workload, selector) in enumerate(workloads):
        indexes.setdefault(workload.namespace, SelectorIndex()).add(str(position), selector)
    matched: list[list[PodView]] = [[] for _ in workloads]
    foreign: list[list[ForeignPod]] = [[] for _ in workloads]
    for pod in pods:
        index = indexes.get(pod.view.namespace)
        if index is None:
            continue
        for found in index.matching(pod.labels):
            position = int(found)
            if owns(workloads[position][0], pod):
                matched[position].append(pod.view)
            else:
                foreign[position].append(foreign_pod(pod))
    enrolled = [
        Enrolled(
            workload,
            tuple(sorted(pods_of, key=lambda p: p.name)),
            tuple(sorted(others, key=lambda p: p.name)),
        )
        for (workload, _), pods_of, others in zip(workloads, matched, foreign, strict=True)
    ]
    return tuple(sorted(enrolled, key=lambda e: e.workload.key))


def owns(workload: WorkloadView, pod: ListedPod) -> bool:
    """Does ``workload`` control ``pod`` (its selector matching is checked elsewhere)?

    A StatefulSet or DaemonSet: the pod's controller reference carries its UID. A
    Deployment: the pod's controller is an ``apps`` ReplicaSet named
    ``<deployment>-<the pod's pod-template-hash label>``, the name the Deployment controller
    gives every ReplicaSet it makes: exact without reading a ReplicaSet
    (docs/adr/005-reading-the-cluster.md says why). A ReplicaSet it adopted under another
    name is not recognised; its pods are foreign, which only ever holds the roll.
    """
    controller = pod.controller
    if controller is None or not workload.uid:
        return False
    if workload.kind is WorkloadKind.DEPLOYMENT:
        template_hash = pod.labels.get(TEMPLATE_HASH_LABEL) or ""
        return (
            bool(template_hash)
            and controller.kind == "ReplicaSet"
            and controller.api_version.partition("/")[0] == "apps"
            and controller.name == f"{workload.name}-{template_hash}"
        )
    return controller.uid == workload.uid


def controlled_by(pod: ListedPod) -> str:
    """Whose pod it is, for a person: ``Deployment/canary`` (a ReplicaSet named by the
    Deployment controller's rule), ``Job/migrate``, or ``no controller``."""
    controller = pod.controller
    if controller is None:
        return "no controller"
    template_hash = pod.labels.get(TEMPLATE_HASH_LABEL) or ""
    suffix = f"-{template_hash}"
    if controller.kind == "ReplicaSet" and template_hash and controller.name.endswith(suffix):
        return f"Deployment/{controller.name.removesuffix(suffix)}"
    return f"{controller.kind or '?'}/{controller.name or '?'}"


def foreign_pod(pod: ListedPod) -> ForeignPod:
    return ForeignPod(pod.view.name, controlled_by(pod))


__all__ = [
    "REVISION_LABEL",
    "TEMPLATE_HASH_LABEL",
    "Controller",
    "ListedPod",
    "controlled_by",
    "foreign_pod",
    "group_pods",
    "owns",
    "pod_from_json",
    "with_platforms",
]
