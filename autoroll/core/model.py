"""Plain data that crosses the boundary between the adapters and the rest of the controller.

The Kubernetes adapter (``autoroll.kube``) turns API JSON into these frozen dataclasses, the
registry client answers with ``Digest`` or ``Unknown``, and what the shell hands back to an
adapter (a ``RollEvent``, a ``LeaseRecord`` to write: ``autoroll.core.records``) is plain
data too. So nothing from a
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
#: Pull only when the node lacks the image: rolled only when pods are pinned (docs/adr/028).
PULL_IF_NOT_PRESENT: Final = "IfNotPresent"


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


class ContainerRole(StrEnum):
    """Where a container sits in its pod spec. Every role runs its image and is compared
    (docs/adr/015): a plain init container runs at every pod start, so a pod started from a
    moved tag's old content keeps what that init step did with it."""

    CONTAINER = "container"  # spec.containers[]
    SIDECAR = "sidecar"  # spec.initContainers[] with restartPolicy Always (native sidecar)
    INIT = "init"  # any other spec.initContainers[]: runs to completion before the others


@dataclass(frozen=True, slots=True)
class ContainerView:
    """A container of a pod template or of a pod spec: what was asked for, and its role."""

    name: str
    image: str
    image_pull_policy: str = PULL_ALWAYS
    role: ContainerRole = ContainerRole.CONTAINER


@dataclass(frozen=True, slots=True)
class ContainerStatusView:
    """One ``pod.status.containerStatuses[]`` entry: what the runtime reports it runs.

    ``image_id`` is kept raw (``docker-pullable://…``, ``repo@sha256:…``, ``sha256:…``
    or empty); ``autoroll.core.images.parse_image_id`` interprets it.
    """

    name: str
    image: str = ""
    image_id: str = ""
    ready: bool = False
    restart_count: int = 0


class WorkloadKind(StrEnum):
    """The kinds of workload autoroll rolls. The values are stable: the kinds setting
    (WORKLOAD_KINDS), metric labels and the names people read (``statefulset/db``) use them."""

    DEPLOYMENT = "deployment"
    STATEFULSET = "statefulset"
    DAEMONSET = "daemonset"

    @property
    def api_kind(self) -> str:
        """The object's ``kind`` in the API (``StatefulSet``)."""
        return _API_KINDS[self]

    @property
    def resource(self) -> str:
        """The apps/v1 resource a list and an RBAC rule name (``statefulsets``)."""
        return f"{self.value}s"


_API_KINDS: Final = {
    WorkloadKind.DEPLOYMENT: "Deployment",
    WorkloadKind.STATEFULSET: "StatefulSet",
    WorkloadKind.DAEMONSET: "DaemonSet",
}


@dataclass(frozen=True, slots=True)
class DeploymentStatus:
    """What a Deployment's settledness is read from: ``spec.paused`` and the status its
    controller writes (``kubectl rollout status`` reads the same fields). Counts the API
    omits when zero read as 0; ``observed_generation`` is None until the first status.

    ``replicas`` is ``status.replicas``: the pods of all its ReplicaSets, old ones included.
    ``progress_deadline_exceeded`` is the ``Progressing`` condition's ``ProgressDeadlineExceeded``
    reason: the controller gave up on a rollout.
    """

    observed_generation: int | None = None
    replicas: int = 0
    updated_replicas: int = 0
    ready_replicas: int = 0
    available_replicas: int = 0
    unavailable_replicas: int = 0
    paused: bool = False
    progress_deadline_exceeded: bool = False


class UpdateStrategy(StrEnum):
    """A StatefulSet's ``spec.updateStrategy.type``."""

    ROLLING_UPDATE = "RollingUpdate"
    ON_DELETE = "OnDelete"


@dataclass(frozen=True, slots=True)
class StatefulSetStatus:
    """What a StatefulSet's settledness is read from: its update strategy and its status.

    Revisions are ControllerRevision names, the values pods carry in their
    ``controller-revision-hash`` label. Counts the API omits when zero read as 0;
    ``observed_generation`` is None until the controller has written a status.
    """

    update_strategy: UpdateStrategy = UpdateStrategy.ROLLING_UPDATE
    partition: int = 0  # RollingUpdate: ordinals below it stay at currentRevision
    ready_replicas: int = 0
    available_replicas: int = 0  # Ready for minReadySeconds
    observed_generation: int | None = None
    current_revision: str = ""
    update_revision: str = ""


@dataclass(frozen=True, slots=True)
class DaemonSetStatus:
    """A DaemonSet's status, as its controller last wrote it (zero counts are omitted by the
    API and read as 0; ``observed_generation`` is None until the first status)."""

    desired_number_scheduled: int = 0
    number_ready: int = 0
    number_available: int = 0  # Ready for minReadySeconds
    number_unavailable: int = 0
    updated_number_scheduled: int = 0
    observed_generation: int | None = None


#: The kind-specific part of a workload: the status its own controller writes.
WorkloadStatus = DeploymentStatus | StatefulSetStatus | DaemonSetStatus

_STATUS_OF: Final[dict[WorkloadKind, type]] = {
    WorkloadKind.DEPLOYMENT: DeploymentStatus,
    WorkloadKind.STATEFULSET: StatefulSetStatus,
    WorkloadKind.DAEMONSET: DaemonSetStatus,
}


@dataclass(frozen=True, slots=True)
class WorkloadView:
    """An enrolled workload: a Deployment, a StatefulSet or a DaemonSet.

    ``replicas`` is how many pods it should have: ``spec.replicas`` (Deployment,
    StatefulSet) or ``status.desiredNumberScheduled`` (DaemonSet). ``status`` carries what
    only its kind has, and must match ``kind``; ``min_ready_seconds`` is ``spec.minReadySeconds``
    (a pod counts as available only once Ready that long). The adapter lists workloads by label, so
    enrollment is already decided when one of these exists; ``labels`` are carried for logs
    and tables only. Address a workload by ``key``, ``kind``, ``namespace`` and ``name``,
    never by parsing a string. ``annotations`` are the object's own (not its pod
    template's) under ``autoroll.aethnet.se/``: the guardrail overrides (``autoroll.core.policy``).
    ``pull_secrets`` and ``service_account`` are its pod template's ``imagePullSecrets``
    names and ``serviceAccountName`` ("" for unset, which admission makes ``default``): the
    credentials a new pod of it pulls with (``autoroll.core.keyring``).
    """

    namespace: str
    name: str
    replicas: int
    containers: tuple[ContainerView, ...]
    labels: tuple[tuple[str, str], ...] = ()
    uid: str = ""
    generation: int | None = None
    annotations: tuple[tuple[str, str], ...] = ()
    kind: WorkloadKind = WorkloadKind.DEPLOYMENT
    status: WorkloadStatus | None = None
    min_ready_seconds: int = 0
    pull_secrets: tuple[str, ...] = ()
    service_account: str = ""

    def __post_init__(self) -> None:
        expected = _STATUS_OF[self.kind]
        if not isinstance(self.status, expected):
            raise ValueError(
                f"{self.kind} {self.namespace}/{self.name}: expected {expected.__name__},"
                f" got {type(self.status).__name__}"
            )

    @property
    def kind_name(self) -> str:
        """``statefulset/db``: the way kubectl names an object within its namespace."""
        return f"{self.kind}/{self.name}"

    @property
    def key(self) -> str:
        """``namespace/kind/name`` (``shop/statefulset/db``): unique across kinds, and the way
        log lines, Events and ``autoroll plan`` name a workload."""
        return f"{self.namespace}/{self.kind_name}"


@dataclass(frozen=True, slots=True)
class PodView:
    """A pod that belongs to a workload (the adapter resolved the ownership).

    ``containers`` is the pod *spec* (the image string asked for); ``statuses`` is what the
    runtime reports. ``deleting`` is true once ``metadata.deletionTimestamp`` is set.
    ``ready`` is the pod's ``Ready`` condition, ``ready_changed_at`` when it last changed
    (its ``lastTransitionTime``; None when not reported). ``platform`` is its node's
    ``os/arch[/variant]``: None until platform awareness (issue 18) fills it; the core then
    cannot tell which child of a multi-arch index the pod runs. ``revision`` is its
    ``controller-revision-hash`` label (StatefulSet and DaemonSet pods; empty otherwise),
    ``node`` its ``spec.nodeName`` (empty until scheduled).
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
    revision: str = ""
    node: str = ""
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
class NodeView:
    """What a DaemonSet roll needs to know of a pod's node: is it Ready?

    ``ready`` is the Node's ``Ready`` condition being ``True`` on a Node that is not being
    deleted; ``detail`` says, for a person, why it is not (the condition's status, reason and
    message, or that the Node is gone).
    """

    name: str
    ready: bool
    detail: str = ""


@dataclass(frozen=True, slots=True)
class ForeignPod:
    """A pod the workload's selector matches but another controller (or none) controls: it
    is never counted nor deleted; ``controlled_by`` says whose it is (``Deployment/canary``,
    ``Job/migrate``, ``no controller``) for ``autoroll plan``."""

    name: str
    controlled_by: str


@dataclass(frozen=True, slots=True)
class Enrolled:
    """One enrolled workload with the pods it controls (a pass's input), and the pods its
    selector matches that it does not control (``foreign``: shown, never counted)."""

    workload: WorkloadView
    pods: tuple[PodView, ...]
    foreign: tuple[ForeignPod, ...] = ()


class DeleteOutcome(StrEnum):
    """What a delete (or eviction) call found. Only DELETED means this call removed the pod."""

    DELETED = "deleted"
    ALREADY_GONE = "already-gone"  # 404: someone (or the last pass) got there first
    REPLACED = "replaced"  # 409 on the UID precondition: the name is a newer pod now
    BLOCKED = "blocked-by-disruption-budget"  # 429 on eviction: try again next pass
