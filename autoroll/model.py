"""Plain data that crosses the boundary between the adapters and the rest of the controller.

The Kubernetes adapter (``autoroll.kube``) turns API JSON into these frozen dataclasses, the
registry client answers with ``Digest`` or ``Unknown``, and what the shell hands back to an
adapter (a ``RollEvent``, a ``LeaseRecord`` to write) is plain data too. So nothing from a
client library reaches ``decide``, and the adapters depend on this module, never the other
way round. Every type here is immutable, hashable and cheap to build in a test table.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Final

_SHA256: Final = re.compile(r"sha256:[0-9a-f]{64}")

#: Pod phases after which a pod never runs again; such pods are ignored by the core.
TERMINAL_PHASES: Final = frozenset({"Succeeded", "Failed"})

#: The only pull policy under which a recreated pod is guaranteed to pull the tag again.
PULL_ALWAYS: Final = "Always"


@dataclass(frozen=True, slots=True, order=True)
class Digest:
    """A content digest, always ``sha256:`` followed by 64 lowercase hex digits.

    Validated on construction so that a malformed header or imageID can never be
    compared as if it were a digest.
    """

    value: str

    def __post_init__(self) -> None:
        if not is_digest(self.value):
            raise ValueError(f"not a digest (expected sha256:<64 lowercase hex>): {self.value!r}")

    def __str__(self) -> str:
        return self.value

    @property
    def short(self) -> str:
        """``sha256:`` and the first 12 hex digits, for tables and log lines."""
        return self.value[:19]


def is_digest(text: str) -> bool:
    """Is ``text`` exactly ``sha256:`` + 64 lowercase hex digits?"""
    return _SHA256.fullmatch(text) is not None


@dataclass(frozen=True, slots=True)
class Unknown:
    """A value we could not learn this tick. Unknown is never read as "changed".

    ``reason`` is a short, stable label (metrics use it); ``detail`` is for humans.
    """

    reason: str
    detail: str = ""

    def __str__(self) -> str:
        return (
            f"unknown ({self.reason})"
            if not self.detail
            else f"unknown ({self.reason}: {self.detail})"
        )


@dataclass(frozen=True, slots=True)
class ImageContent:
    """The image configs a manifest or index digest stands for: what a container runs.

    A manifest stands for its one config; an index for its runnable children's configs
    (attestations left out). ``platforms`` pairs ``os/arch[/variant]`` with a child's config
    where the index names the platform (empty for a plain manifest, whose platform is only
    in its config). Content-addressed like the digest it was read from, so never stale.
    """

    configs: frozenset[Digest]
    platforms: tuple[tuple[str, Digest], ...] = ()

    def __post_init__(self) -> None:
        if not self.configs:
            # Empty would be "disjoint from everything": every pod stale. Never allowed.
            raise ValueError("an image content names at least one config")
        stray = {config for _, config in self.platforms} - self.configs
        if stray:
            raise ValueError(f"platform configs not among the configs: {sorted(map(str, stray))}")

    def config_for(self, platform: str) -> Digest | None:
        """The one config this index gives ``platform``, or None when it names none or two.

        A node says only ``os/arch`` (its ``kubernetes.io/os`` and ``kubernetes.io/arch``
        labels), while an index may name a variant (``linux/arm64/v8``). Without an exact
        match, an ``os/arch`` matches every variant of it, and only if they all share one
        config: two variants with different images (``arm/v6`` and ``arm/v7``) stay unknown,
        because which one the runtime picks depends on the CPU.
        """
        found = {config for name, config in self.platforms if name == platform}
        if not found and platform.count("/") == 1:
            found = {
                config
                for name, config in self.platforms
                if name.rsplit("/", 1)[0] == platform and name.count("/") == 2
            }
        return next(iter(found)) if len(found) == 1 else None


@dataclass(frozen=True, slots=True)
class ContainerView:
    """A container of a pod template or of a pod spec: what was asked for."""

    name: str
    image: str
    image_pull_policy: str = PULL_ALWAYS


@dataclass(frozen=True, slots=True)
class ContainerStatusView:
    """One ``pod.status.containerStatuses[]`` entry: what the runtime reports it runs.

    ``image_id`` is kept raw (``docker-pullable://…``, ``repo@sha256:…``, ``sha256:…``
    or empty); ``autoroll.images.parse_image_id`` interprets it.
    """

    name: str
    image: str = ""
    image_id: str = ""
    ready: bool = False
    restart_count: int = 0


@dataclass(frozen=True, slots=True)
class DeploymentView:
    """An enrolled Deployment: its desired replica count and its pod template containers.

    The adapter lists Deployments by label, so enrollment is already decided when one of
    these exists; ``labels`` are carried for logs and tables only. ``annotations`` are the
    object's own (not its pod template's) under ``autoroll.aethnet.se/``: the guardrail
    overrides (``autoroll.policy``).
    """

    namespace: str
    name: str
    replicas: int
    containers: tuple[ContainerView, ...]
    labels: tuple[tuple[str, str], ...] = ()
    uid: str = ""
    generation: int | None = None
    annotations: tuple[tuple[str, str], ...] = ()

    @property
    def key(self) -> str:
        """``namespace/name``, the way people and log lines name a Deployment."""
        return f"{self.namespace}/{self.name}"


@dataclass(frozen=True, slots=True)
class PodView:
    """A pod that belongs to a Deployment (the adapter resolved the ownership).

    ``containers`` is the pod *spec* (the image string asked for); ``statuses`` is what the
    runtime reports. ``deleting`` is true once ``metadata.deletionTimestamp`` is set.
    ``ready`` is the pod's ``Ready`` condition, ``ready_changed_at`` when it last changed
    (its ``lastTransitionTime``; None when not reported). ``platform`` is its node's
    ``os/arch[/variant]``: None until platform awareness (issue 18) fills it; the core then
    cannot tell which child of a multi-arch index the pod runs.
    """

    namespace: str
    name: str
    uid: str
    created_at: datetime
    phase: str = "Running"
    deleting: bool = False
    ready: bool = True
    containers: tuple[ContainerView, ...] = ()
    statuses: tuple[ContainerStatusView, ...] = field(default=())
    platform: str | None = None
    ready_changed_at: datetime | None = None

    def __post_init__(self) -> None:
        if self.created_at.tzinfo is None:
            raise ValueError(f"pod {self.namespace}/{self.name}: created_at must be timezone-aware")

    @property
    def is_terminal(self) -> bool:
        """Has the pod finished for good (Succeeded or Failed, e.g. evicted)?"""
        return self.phase in TERMINAL_PHASES

    def spec_image(self, container: str) -> str | None:
        """The image string the pod spec asks for in ``container``, if it has one."""
        for spec in self.containers:
            if spec.name == container:
                return spec.image
        return None

    def status_of(self, container: str) -> ContainerStatusView | None:
        """The runtime's status for ``container``, if it reported one yet."""
        for status in self.statuses:
            if status.name == container:
                return status
        return None


@dataclass(frozen=True, slots=True)
class Enrolled:
    """One enrolled Deployment with the live pods its selector matches (a pass's input)."""

    deployment: DeploymentView
    pods: tuple[PodView, ...]


class DeleteOutcome(StrEnum):
    """What a delete (or eviction) call found. Only DELETED means this call removed the pod."""

    DELETED = "deleted"
    ALREADY_GONE = "already-gone"  # 404: someone (or the last pass) got there first
    REPLACED = "replaced"  # 409 on the UID precondition: the name is a newer pod now
    BLOCKED = "blocked-by-disruption-budget"  # 429 on eviction: try again next pass


class EventReason(StrEnum):
    """The reason of a roll's Kubernetes Event (``kubectl describe deploy`` shows it), and
    the verb its message uses."""

    DELETED = "StalePodDeleted"
    EVICTED = "StalePodEvicted"
    DRY_RUN = "WouldDeletePod"
    HALTED = "RolloutHalted"  # a Warning: stale pods wait behind a pod that is not Ready

    @property
    def verb(self) -> str:
        return {
            "StalePodDeleted": "deleted",
            "StalePodEvicted": "evicted",
            "WouldDeletePod": "would delete",
        }.get(self.value, "halted")


class EventType(StrEnum):
    """A core/v1 Event's ``type``: rolls are Normal, a halted rollout is a Warning."""

    NORMAL = "Normal"
    WARNING = "Warning"


#: The reasons as plain strings, for callers that compare with an Event's ``reason``.
REASON_DELETED: Final = EventReason.DELETED.value
REASON_EVICTED: Final = EventReason.EVICTED.value
REASON_DRY_RUN: Final = EventReason.DRY_RUN.value
REASON_HALTED: Final = EventReason.HALTED.value


@dataclass(frozen=True, slots=True)
class RollEvent:
    """What a core/v1 Event about one roll says; the adapter turns it into the API body."""

    namespace: str
    deployment: str
    deployment_uid: str
    reason: str
    message: str
    type: EventType = EventType.NORMAL

    @classmethod
    def about(
        cls,
        deployment: DeploymentView,
        reason: EventReason,
        *,
        pod: str,
        container: str,
        image: str,
        running: Digest,
        target: Digest,
    ) -> RollEvent:
        """The Event for one roll: its reason and, next to it, the text people read."""
        return cls(
            namespace=deployment.namespace,
            deployment=deployment.name,
            deployment_uid=deployment.uid,
            reason=reason.value,
            message=(
                f"autoroll {reason.verb} stale pod {pod}: container {container} image {image}"
                f" runs {running}, the registry has {target}"
            ),
        )

    @classmethod
    def halted(cls, deployment: DeploymentView, message: str) -> RollEvent:
        """The Warning Event for a halted rollout (``autoroll.halt.RolloutHalt.message``)."""
        return cls(
            namespace=deployment.namespace,
            deployment=deployment.name,
            deployment_uid=deployment.uid,
            reason=EventReason.HALTED.value,
            message=f"autoroll: {message}",
            type=EventType.WARNING,
        )


@dataclass(frozen=True, slots=True)
class LeaseRecord:
    """The parts of the leader-election Lease that election reads and writes.

    ``holder`` is empty when the lease was released. ``resource_version`` is what a write
    must name to succeed (optimistic concurrency); it is empty in a record about to be sent.
    ``nudge`` is the hand-off annotation a follower bumps for the leader.
    """

    holder: str
    duration_seconds: int
    acquired_at: datetime | None = None
    renewed_at: datetime | None = None
    transitions: int = 0
    resource_version: str = ""
    nudge: str = ""

    @property
    def election_fields(self) -> tuple[object, ...]:
        """What counts as "the holder renewed": not the resourceVersion, not the nudge.

        A nudge patch changes the resourceVersion; if that reset a contender's timer, a
        stream of webhooks could keep a dead leader's lease alive forever.
        """
        return (
            self.holder,
            self.duration_seconds,
            self.acquired_at,
            self.renewed_at,
            self.transitions,
        )
