"""Pure conversions between the API's JSON and the plain data of ``autoroll.model``.

Nothing here does I/O, so every rule is tested without an API server: label-selector
semantics (``selector_matches``) and the server-side narrowing of a namespace's pod list
(``pod_list_selector``), Deployment, StatefulSet, DaemonSet, Pod and Node JSON into views,
list answers parsed without their ``managedFields``, pods grouped under the workloads that
select (and, for StatefulSets and DaemonSets, own) them, and the Lease and Event bodies the
adapters send. The field names are the API's own (``imageID``,
``containerStatuses``), because lists are read as raw JSON, never as client models
(docs/adr/005-reading-the-cluster.md).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, Final

from autoroll.images import DEFAULT_TAG, ImageRefError, parse_image
from autoroll.model import (
    PULL_ALWAYS,
    ContainerStatusView,
    ContainerView,
    DaemonSetStatus,
    Enrolled,
    LeaseRecord,
    NodeView,
    PodView,
    RollEvent,
    StatefulSetStatus,
    UpdateStrategy,
    WorkloadKind,
    WorkloadView,
)

#: A pod-list narrowing selector longer than this is not sent (the URL would get unwieldy);
#: the namespace is then listed whole, which costs parsing, never correctness.
MAX_NARROWING_SELECTOR: Final = 8192

#: The Lease annotation a follower bumps to hand a verified webhook to the leader.
NUDGE_ANNOTATION: Final = "autoroll.aethnet.se/nudge"

#: The label the StatefulSet and DaemonSet controllers put on each pod: its ControllerRevision.
REVISION_LABEL: Final = "controller-revision-hash"

#: Stands in for a missing creationTimestamp (never seen from a real API server): "created
#: in the future" makes the loop guard spare the pod, the safe direction.
_UNKNOWN_CREATION: Final = datetime.max.replace(tzinfo=UTC)


# --------------------------------------------------------------------------------------------
# Label selectors


class Operator(StrEnum):
    IN = "In"
    NOT_IN = "NotIn"
    EXISTS = "Exists"
    DOES_NOT_EXIST = "DoesNotExist"


@dataclass(frozen=True, slots=True)
class Requirement:
    """One ``matchExpressions`` entry."""

    key: str
    operator: Operator
    values: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True)
class LabelSelector:
    """A workload's ``spec.selector``: all ``match_labels`` and all requirements must hold."""

    match_labels: tuple[tuple[str, str], ...] = ()
    requirements: tuple[Requirement, ...] = ()

    @property
    def is_empty(self) -> bool:
        return not self.match_labels and not self.requirements


def selector_matches(selector: LabelSelector, labels: Mapping[str, str]) -> bool:
    """Does ``labels`` satisfy ``selector`` (Kubernetes label-selector semantics)?

    An empty selector matches nothing here, unlike the API's "everything": apps/v1 rejects
    empty workload selectors, and if one slipped through, adopting every pod in the
    namespace would be the dangerous reading.
    """
    if selector.is_empty:
        return False
    for key, value in selector.match_labels:
        if labels.get(key) != value:
            return False
    for requirement in selector.requirements:
        present = requirement.key in labels
        if requirement.operator is Operator.IN:
            if not present or labels[requirement.key] not in requirement.values:
                return False
        elif requirement.operator is Operator.NOT_IN:
            if present and labels[requirement.key] in requirement.values:
                return False
        elif requirement.operator is Operator.EXISTS:
            if not present:
                return False
        elif present:  # DoesNotExist
            return False
    return True


def selector_from_json(selector: Mapping[str, Any] | None) -> LabelSelector:
    """Convert a ``LabelSelector`` as the API sends it. Unknown operators raise ``ValueError``."""
    if not selector:
        return LabelSelector()
    labels = tuple(sorted((selector.get("matchLabels") or {}).items()))
    requirements = []
    for expression in selector.get("matchExpressions") or ():
        try:
            operator = Operator(expression.get("operator"))
        except ValueError:
            raise ValueError(
                f"unsupported label selector operator {expression.get('operator')!r}"
                f" (expected one of {', '.join(o.value for o in Operator)})"
            ) from None
        requirements.append(
            Requirement(
                expression.get("key", ""), operator, frozenset(expression.get("values") or ())
            )
        )
    return LabelSelector(labels, tuple(requirements))


# --------------------------------------------------------------------------------------------
# JSON → views


def default_pull_policy(image: str) -> str:
    """The pull policy the API server would default: Always for ``:latest`` or no tag.

    Only used when an object arrives without one (the API server always fills it in).
    An unparsable image gets no policy, so the core never rolls it.
    """
    try:
        ref = parse_image(image)
    except ImageRefError:
        return ""
    if ref.digest is None and (ref.tag is None or ref.tag == DEFAULT_TAG):
        return PULL_ALWAYS
    return "IfNotPresent"


def template_repositories(view: WorkloadView) -> set[str]:
    """The repositories a workload's template names, on any host: a superset of those a
    targeted pass may concern (the pass narrows it to the configured host and the tags)."""
    found = set()
    for container in view.containers:
        try:
            found.add(parse_image(container.image).repository.lower())
        except ImageRefError:
            continue
    return found


def container_from_json(container: Mapping[str, Any]) -> ContainerView:
    """Convert a ``Container`` (pod template or pod spec)."""
    image = container.get("image") or ""
    policy = container.get("imagePullPolicy") or default_pull_policy(image)
    return ContainerView(name=container.get("name", ""), image=image, image_pull_policy=policy)


def workload_from_json(
    kind: WorkloadKind, document: Mapping[str, Any]
) -> tuple[WorkloadView, LabelSelector]:
    """Convert a Deployment, StatefulSet or DaemonSet into the core's view plus the selector
    to match pods with. What cannot be read raises ``ValueError`` naming the field."""
    meta = document.get("metadata") or {}
    spec = document.get("spec") or {}
    status = document.get("status") or {}
    pod_spec = (spec.get("template") or {}).get("spec") or {}
    kind_status: StatefulSetStatus | DaemonSetStatus | None = None
    if kind is WorkloadKind.DAEMONSET:
        daemon = _daemonset_status(status)
        replicas, kind_status = daemon.desired_number_scheduled, daemon
    else:
        raw = spec.get("replicas")
        replicas = 1 if raw is None else int(raw)  # the API's default
        if kind is WorkloadKind.STATEFULSET:
            kind_status = _statefulset_status(spec, status)
    view = WorkloadView(
        namespace=meta.get("namespace", ""),
        name=meta.get("name", ""),
        replicas=replicas,
        containers=tuple(container_from_json(c) for c in pod_spec.get("containers") or ()),
        labels=tuple(sorted((meta.get("labels") or {}).items())),
        uid=meta.get("uid") or "",
        generation=meta.get("generation"),
        kind=kind,
        status=kind_status,
    )
    return view, selector_from_json(spec.get("selector"))


def deployment_from_json(deployment: Mapping[str, Any]) -> tuple[WorkloadView, LabelSelector]:
    """Convert a ``Deployment`` (``workload_from_json`` for that kind)."""
    return workload_from_json(WorkloadKind.DEPLOYMENT, deployment)


def _count(status: Mapping[str, Any], name: str) -> int:
    """A status count; the API omits those that are zero."""
    return int(status.get(name) or 0)


def _observed(status: Mapping[str, Any]) -> int | None:
    raw = status.get("observedGeneration")
    return None if raw is None else int(raw)


def _statefulset_status(spec: Mapping[str, Any], status: Mapping[str, Any]) -> StatefulSetStatus:
    strategy = spec.get("updateStrategy") or {}
    raw_type = strategy.get("type") or UpdateStrategy.ROLLING_UPDATE.value  # the API's default
    try:
        update_strategy = UpdateStrategy(raw_type)
    except ValueError:
        raise ValueError(
            f"spec.updateStrategy.type {raw_type!r} is not one of"
            f" {', '.join(s.value for s in UpdateStrategy)}"
        ) from None
    rolling = strategy.get("rollingUpdate") or {}
    return StatefulSetStatus(
        update_strategy=update_strategy,
        partition=int(rolling.get("partition") or 0),
        ready_replicas=_count(status, "readyReplicas"),
        observed_generation=_observed(status),
        current_revision=str(status.get("currentRevision") or ""),
        update_revision=str(status.get("updateRevision") or ""),
    )


def _daemonset_status(status: Mapping[str, Any]) -> DaemonSetStatus:
    return DaemonSetStatus(
        desired_number_scheduled=_count(status, "desiredNumberScheduled"),
        number_ready=_count(status, "numberReady"),
        number_unavailable=_count(status, "numberUnavailable"),
        updated_number_scheduled=_count(status, "updatedNumberScheduled"),
        observed_generation=_observed(status),
    )


@dataclass(frozen=True, slots=True)
class ListedPod:
    """A pod as listed: its view, its labels (for selector matching) and the UID of its
    controlling owner (``ownerReferences[]`` with ``controller: true``), empty when none."""

    view: PodView
    labels: Mapping[str, str]
    controller_uid: str = ""


def pod_from_json(pod: Mapping[str, Any]) -> ListedPod:
    """Convert a ``Pod`` into the core's view, its labels and its controlling owner."""
    meta = pod.get("metadata") or {}
    status = pod.get("status") or {}
    conditions = status.get("conditions") or ()
    labels = meta.get("labels") or {}
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
        revision=str(labels.get(REVISION_LABEL) or ""),
        node=str((pod.get("spec") or {}).get("nodeName") or ""),
    )
    return ListedPod(view, labels, _controller_uid(meta.get("ownerReferences") or ()))


def _controller_uid(references: Iterable[Mapping[str, Any]]) -> str:
    """The UID of the one owner reference marked ``controller: true`` (the API allows one)."""
    for reference in references:
        if isinstance(reference, Mapping) and reference.get("controller") is True:
            return str(reference.get("uid") or "")
    return ""


def node_from_json(node: Mapping[str, Any]) -> NodeView:
    """A ``Node`` → ``NodeView``: Ready only with a ``Ready`` condition of ``True`` on a Node
    that is not being deleted; the detail says what the condition says otherwise."""
    meta = node.get("metadata") or {}
    name = str(meta.get("name") or "")
    if meta.get("deletionTimestamp") is not None:
        return NodeView(name, False, "the Node is being deleted")
    conditions = (node.get("status") or {}).get("conditions") or ()
    ready = next(
        (c for c in conditions if isinstance(c, Mapping) and c.get("type") == "Ready"), None
    )
    if ready is None:
        return NodeView(name, False, "the Node reports no Ready condition")
    if ready.get("status") == "True":
        return NodeView(name, True)
    said = ": ".join(str(part) for part in (ready.get("reason"), ready.get("message")) if part)
    return NodeView(
        name, False, f"Ready={ready.get('status') or 'unset'}" + (f" ({said})" if said else "")
    )


def _ready_changed_at(conditions: Any) -> datetime | None:
    """``lastTransitionTime`` of the Ready condition; None when absent or unreadable."""
    for condition in conditions:
        if isinstance(condition, Mapping) and condition.get("type") == "Ready":
            return _parse_time(condition.get("lastTransitionTime"))
    return None


def _creation_time(raw: object) -> datetime:
    """``creationTimestamp`` (RFC 3339, UTC); missing or unreadable reads as the far future,
    so the loop guard spares the pod: the safe direction for data we never expect."""
    return _parse_time(raw) or _UNKNOWN_CREATION


def pod_list_selector(selectors: Iterable[LabelSelector]) -> str | None:
    """A label selector that narrows one namespace's pod list to pods that *may* match one
    of ``selectors``, or None when no such selector is simple to write.

    It takes a label key that every selector pins to a finite set of values (``matchLabels``
    or ``In``) and asks for ``key in (union of values)``; with the usual chart selectors
    (``app.kubernetes.io/instance``, ``app``) that leaves out every unenrolled workload.
    Still one request per namespace; the exact match is done afterwards by
    ``selector_matches``, so a loose narrowing can never adopt a wrong pod.
    """
    pinned: dict[str, set[str]] | None = None
    for selector in selectors:
        if selector.is_empty:
            return None
        values: dict[str, set[str]] = {k: {v} for k, v in selector.match_labels}
        for requirement in selector.requirements:
            if requirement.operator is Operator.IN:
                values.setdefault(requirement.key, set(requirement.values)).intersection_update(
                    requirement.values
                )
        if pinned is None:
            pinned = values
        else:
            pinned = {k: pinned[k] | v for k, v in values.items() if k in pinned}
        if not pinned:
            return None
    if not pinned:
        return None
    key, wanted = min(pinned.items(), key=lambda item: (len(item[1]), item[0]))
    if not wanted or "" in wanted:  # nothing to narrow to, or a value the syntax cannot say
        return None
    rendered = f"{key} in ({','.join(sorted(wanted))})"
    return rendered if len(rendered) <= MAX_NARROWING_SELECTOR else None


def list_items(body: bytes | str) -> list[dict[str, Any]]:
    """The ``items`` of a list answer, as JSON objects without their ``managedFields``.

    ``managedFields`` is often the largest part of an object and nothing here reads it;
    dropping it while parsing frees it at once, which lowers the peak memory of a big
    list and the garbage collector's work. ``ValueError`` names what is wrong with a body
    that is not a list answer.
    """
    try:
        document = json.loads(body, object_hook=_without_managed_fields)
    except ValueError as exc:
        raise ValueError(f"the API answered with a body that is not JSON ({exc})") from None
    items = document.get("items") if isinstance(document, dict) else None
    if items is None:
        return []
    if not isinstance(items, list):
        raise ValueError("the answer's items are not a list")
    return [item for item in items if isinstance(item, dict)]


@dataclass(frozen=True, slots=True)
class ListPage:
    """One page of a list answer: its items, the token for the next page ("" at the end),
    and the resourceVersion of the list (a watch starts there)."""

    items: list[dict[str, Any]]
    continue_token: str
    resource_version: str


def list_page(body: bytes | str) -> ListPage:
    """``list_items``, with the list's ``metadata.continue`` and ``resourceVersion``."""
    try:
        document = json.loads(body, object_hook=_without_managed_fields)
    except ValueError as exc:
        raise ValueError(f"the API answered with a body that is not JSON ({exc})") from None
    if not isinstance(document, dict):
        raise ValueError("the answer is not a list")
    items = document.get("items") or []
    if not isinstance(items, list):
        raise ValueError("the answer's items are not a list")
    meta = document.get("metadata") or {}
    return ListPage(
        [item for item in items if isinstance(item, dict)],
        str(meta.get("continue") or ""),
        str(meta.get("resourceVersion") or ""),
    )


def _without_managed_fields(obj: dict[str, Any]) -> dict[str, Any]:
    obj.pop("managedFields", None)
    return obj


def selector_query(selector: LabelSelector) -> str:
    """``selector`` in the API's ``labelSelector`` query syntax (the exact selector).

    Used for the one narrow pod list before a deletion (``KubeCluster.read_now``). The
    answer is still matched with ``selector_matches``, so a rendering the server read more
    loosely could never adopt a wrong pod.
    """
    parts = [f"{key}={value}" for key, value in selector.match_labels]
    for requirement in selector.requirements:
        values = ",".join(sorted(requirement.values))
        if requirement.operator is Operator.IN:
            parts.append(f"{requirement.key} in ({values})")
        elif requirement.operator is Operator.NOT_IN:
            parts.append(f"{requirement.key} notin ({values})")
        elif requirement.operator is Operator.EXISTS:
            parts.append(requirement.key)
        else:
            parts.append(f"!{requirement.key}")
    return ",".join(parts)


class SelectorIndex:
    """Which of one namespace's selectors match a pod, without trying every selector.

    Trying each of 500 enrolled selectors against each of 1,500 pods is 750,000 matches per
    namespace. A selector that matches pins some ``key=value`` (a ``matchLabels`` pair, or
    one of an ``In`` requirement's values), so each selector is filed under the pairs it
    needs, and a pod is tried only against the selectors filed under one of its own labels
    (selectors that pin nothing are tried always). The final word is ``selector_matches``.
    """

    def __init__(self) -> None:
        self._selectors: dict[str, LabelSelector] = {}
        self._filed: dict[tuple[str, str], set[str]] = {}
        self._always: set[str] = set()

    def __len__(self) -> int:
        return len(self._selectors)

    def get(self, key: str) -> LabelSelector | None:
        return self._selectors.get(key)

    def keys(self) -> set[str]:
        return set(self._selectors)

    def add(self, key: str, selector: LabelSelector) -> None:
        self.remove(key)
        self._selectors[key] = selector
        pairs = _filing_pairs(selector)
        if pairs is None:
            self._always.add(key)
        for pair in pairs or ():
            self._filed.setdefault(pair, set()).add(key)

    def remove(self, key: str) -> None:
        selector = self._selectors.pop(key, None)
        if selector is None:
            return
        self._always.discard(key)
        for pair in _filing_pairs(selector) or ():
            keys = self._filed.get(pair)
            if keys is not None:
                keys.discard(key)
                if not keys:
                    del self._filed[pair]

    def matching(self, labels: Mapping[str, str]) -> set[str]:
        """The keys whose selector matches ``labels``."""
        candidates = set(self._always)
        for pair in labels.items():
            candidates.update(self._filed.get(pair, ()))
        return {key for key in candidates if selector_matches(self._selectors[key], labels)}


def _filing_pairs(selector: LabelSelector) -> list[tuple[str, str]] | None:
    """The pairs one of which every pod ``selector`` matches must carry; None if none is
    known (no ``matchLabels``, no ``In``): such a selector is tried against every pod."""
    if selector.match_labels:
        return [selector.match_labels[0]]
    for requirement in selector.requirements:
        if requirement.operator is Operator.IN and requirement.values:
            return [(requirement.key, value) for value in sorted(requirement.values)]
    return None


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


# --------------------------------------------------------------------------------------------
# Leases and Events


def _micro_time(value: datetime) -> str:
    """A ``MicroTime`` as the API writes it: UTC, six fractional digits, ``Z``."""
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _parse_time(raw: object) -> datetime | None:
    """An RFC 3339 time as the API writes it (naive read as UTC), or None."""
    if not isinstance(raw, str) or not raw:
        return None
    try:
        parsed = datetime.fromisoformat(raw)
    except ValueError:
        return None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)


def lease_from_json(document: Mapping[str, Any]) -> LeaseRecord:
    """A Lease object (as JSON) → ``LeaseRecord``. Missing fields read as a free lease."""
    meta = document.get("metadata") or {}
    spec = document.get("spec") or {}
    annotations = meta.get("annotations") or {}
    return LeaseRecord(
        holder=str(spec.get("holderIdentity") or ""),
        duration_seconds=int(spec.get("leaseDurationSeconds") or 0),
        acquired_at=_parse_time(spec.get("acquireTime")),
        renewed_at=_parse_time(spec.get("renewTime")),
        transitions=int(spec.get("leaseTransitions") or 0),
        resource_version=str(meta.get("resourceVersion") or ""),
        nudge=str(annotations.get(NUDGE_ANNOTATION) or ""),
    )


def lease_spec_json(record: LeaseRecord) -> dict[str, Any]:
    """The ``spec`` to write for ``record``; an empty holder is sent as null (released)."""
    return {
        "holderIdentity": record.holder or None,
        "leaseDurationSeconds": record.duration_seconds,
        "acquireTime": _micro_time(record.acquired_at) if record.acquired_at else None,
        "renewTime": _micro_time(record.renewed_at) if record.renewed_at else None,
        "leaseTransitions": record.transitions,
    }


def event_json(event: RollEvent, *, now: datetime, instance: str) -> dict[str, Any]:
    """The core/v1 Event body for ``event`` (pure, so a test can pin every field)."""
    stamp = now.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {
            # Unique per roll; the workload's name first, as kubectl's own events do.
            "name": f"{event.workload[:200]}.{uuid.uuid4().hex[:16]}",
            "namespace": event.namespace,
        },
        "involvedObject": {
            "apiVersion": "apps/v1",
            "kind": event.kind.api_kind,
            "namespace": event.namespace,
            "name": event.workload,
            **({"uid": event.workload_uid} if event.workload_uid else {}),
        },
        "reason": event.reason,
        "message": event.message[:1024],
        "type": event.type.value,
        "source": {"component": "autoroll"},
        "reportingComponent": "aethnet.se/autoroll",
        "reportingInstance": instance[:128],
        "firstTimestamp": stamp,
        "lastTimestamp": stamp,
        "count": 1,
    }


__all__ = [
    "MAX_NARROWING_SELECTOR",
    "NUDGE_ANNOTATION",
    "REVISION_LABEL",
    "LabelSelector",
    "ListPage",
    "ListedPod",
    "Operator",
    "Requirement",
    "SelectorIndex",
    "container_from_json",
    "default_pull_policy",
    "deployment_from_json",
    "event_json",
    "group_pods",
    "lease_from_json",
    "lease_spec_json",
    "list_items",
    "list_page",
    "node_from_json",
    "owns",
    "pod_from_json",
    "pod_list_selector",
    "selector_from_json",
    "selector_matches",
    "selector_query",
    "template_repositories",
    "workload_from_json",
]
