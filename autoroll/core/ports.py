"""The ports: what the orchestration needs from the outside world, as Protocols.

Each port is implemented by one adapter in production and by a hand-written fake in the
unit tests; the orchestration (``reconciler``, ``leader``, ``plan``) knows only these::

    ClusterPort   snapshot, fresh read, delete  autoroll.kube.KubeCluster
    WatchPort     what a watch sees change      autoroll.kube.WatchCache
    NodePort      is a Node Ready? (DaemonSets)  autoroll.kube.KubeCluster
    RegistryPort  tag → digest, index children  autoroll.registry.RegistryPool
    LookupPort    tag + pull credentials → digest  autoroll.registry.RegistryPool
    PresencePort  is a digest still there?      autoroll.registry.RegistryPool
    SecretPort    pull secrets, ServiceAccounts  autoroll.kube.KubeSecrets
    EventPort     record a roll as an Event      autoroll.kube.KubeEvents
    LeasePort     the leader-election Lease      autoroll.kube.KubeLease
    QuarantinePort  the quarantine's record      autoroll.kube.KubeQuarantine
    NotifyPort    tell people (chat, email)      autoroll.notify.AppriseNotifier

Everything that crosses a port is plain data from ``autoroll.core.model`` (or a decision type
from ``autoroll.core.decide``), never a client library's object.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Protocol, runtime_checkable

from autoroll.core.decide import ChildrenRequest, ContentRequest
from autoroll.core.images import TagRef
from autoroll.core.keyring import PullSecret
from autoroll.core.lookups import Answer, Lookup
from autoroll.core.model import (
    DeleteOutcome,
    Digest,
    Enrolled,
    ImageContent,
    NodeView,
    Unknown,
    WorkloadView,
)
from autoroll.core.quarantine import QuarantineBook
from autoroll.core.records import LeaseRecord, RollEvent
from autoroll.core.scope import FULL, Scope


class ClusterPort(Protocol):
    """What a pass needs from Kubernetes.

    ``snapshot`` finds the work: every enrolled workload with its pods, or, for a targeted
    scope, at least every enrolled workload whose template uses a repository the scope
    names (a superset is allowed; the pass narrows it to the scope's tags). It may answer
    from a watched cache. ``read_now`` is the fresh read the pass makes before it acts: that
    one workload's live pods (and, for a kind whose settledness reads its status, the
    object), from the API, never from a cache (ARCHITECTURE.md, properties 8 and 12): the
    object itself (its enrolment, annotations, replicas and status as they are now) and the
    pods it controls. It answers None when the workload is gone, was replaced (another UID)
    or is no longer enrolled, and raises when it cannot tell. ``delete_pod`` carries the
    pod's UID as a precondition and, with ``within``, must end (attempts, timeouts and all)
    within that many seconds.
    """

    def snapshot(self, scope: Scope = FULL) -> Sequence[Enrolled]: ...

    def read_now(self, workload: WorkloadView) -> Enrolled | None: ...

    def delete_pod(
        self, namespace: str, name: str, uid: str, *, within: float | None = None
    ) -> DeleteOutcome: ...


class WatchPort(Protocol):
    """What a watch on the enrolled workloads sees, for pacing rolls
    (``autoroll.controller.pacer``).

    ``subscribe`` registers a listener called (from a watch thread, so it must be quick and
    thread-safe) with the keys of workloads whose pods or object changed; ``cached`` is the
    workload with its pods as the cache holds them, or None (unknown, or not synced).
    """

    def subscribe(self, listener: Callable[[frozenset[str]], None]) -> None: ...

    def cached(self, key: str) -> Enrolled | None: ...


class NodePort(Protocol):
    """Reads one Node before a DaemonSet pod on it is deleted; raises when it cannot.

    A pass without one (``Reconciler(nodes=None)``) never deletes a DaemonSet pod: readiness
    it cannot read is unknown, never Ready.
    """

    def node(self, name: str) -> NodeView: ...


class RegistryPort(Protocol):
    """What a pass needs from the registry.

    The client caches index children and manifests' image configs by digest (immutable);
    ``known_children`` and ``known_content`` seed each pass's decisions with those caches,
    so a manifest is fetched once, not once per pass.
    """

    def resolve(self, refs: Iterable[TagRef]) -> Mapping[TagRef, Digest | Unknown]: ...

    def known_children(self) -> Mapping[Digest, frozenset[Digest]]: ...

    def fetch_children(
        self, wanted: Iterable[ChildrenRequest]
    ) -> Mapping[Digest, frozenset[Digest] | Unknown]: ...

    def known_content(self) -> Mapping[Digest, ImageContent]: ...

    def fetch_content(
        self, wanted: Iterable[ContentRequest]
    ) -> Mapping[Digest, ImageContent | Unknown]: ...


@runtime_checkable
class LookupPort(Protocol):
    """A registry that asks with each lookup's pull credentials and says who answered
    (``autoroll.core.lookups``). A ``RegistryPort`` without it is asked by tag alone."""

    def lookup(self, lookups: Iterable[Lookup]) -> Mapping[Lookup, Answer]: ...


@runtime_checkable
class PresencePort(Protocol):
    """Whether the registry still holds a digest in a tag's repository: True, False (gone),
    None (it cannot say). The pinning webhook pins a held-back digest only when True
    (docs/adr/028)."""

    def holds_manifest(self, ref: TagRef, digest: Digest) -> bool | None: ...


class SecretPort(Protocol):
    """Reads what the kubelet reads to pull: a pod's pull secrets and its ServiceAccount's.

    ``pull_secret`` is the Secret, or None when it does not exist; ``service_account`` the
    names in a ServiceAccount's ``imagePullSecrets``, or None when it does not exist. Both
    raise on any other failure (a 403 names the RBAC rule to grant)."""

    def pull_secret(self, namespace: str, name: str) -> PullSecret | None: ...

    def service_account(self, namespace: str, name: str) -> tuple[str, ...] | None: ...


class EventPort(Protocol):
    """Records a Kubernetes Event about one roll."""

    def emit(self, event: RollEvent) -> None: ...


class QuarantineConflictError(Exception):
    """The quarantine's record changed since it was read (or was created meanwhile)."""


class QuarantinePort(Protocol):
    """Where the quarantine lives (docs/adr/026). ``load`` reads it (an empty book when there
    is none yet); ``save`` writes a book read by ``load`` (compare and swap on its version:
    ``QuarantineConflictError`` when someone wrote since) and returns it with its new
    version. Both raise on any other failure."""

    def load(self) -> QuarantineBook: ...

    def save(self, book: QuarantineBook) -> QuarantineBook: ...


class NotifyPort(Protocol):
    """Tells people through their channels (chat, email, webhooks). ``send`` is True when
    every channel took the message; it never raises."""

    def send(self, *, title: str, body: str, warning: bool) -> bool: ...


class LeaseConflictError(Exception):
    """A Lease write named a resourceVersion that is no longer current (or the Lease exists)."""


class LeasePort(Protocol):
    """The Lease calls election needs.

    Every method raises ``LeaseConflictError`` on 409 and anything else on other failures.
    """

    def get(self) -> LeaseRecord | None: ...

    def create(self, record: LeaseRecord) -> LeaseRecord: ...

    def update(self, record: LeaseRecord) -> LeaseRecord: ...

    def publish_nudge(self, value: str) -> None: ...

    def watch(self, resource_version: str, timeout_seconds: int) -> Iterator[LeaseRecord]: ...

    def abort_watch(self) -> None: ...


__all__ = [
    "ClusterPort",
    "EventPort",
    "LeaseConflictError",
    "LeasePort",
    "LookupPort",
    "NodePort",
    "NotifyPort",
    "PresencePort",
    "QuarantineConflictError",
    "QuarantinePort",
    "RegistryPort",
    "SecretPort",
    "WatchPort",
]
