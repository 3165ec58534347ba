"""The types a decision is made of: plain, frozen, and the same for the shell and the tests.

``autoroll.core.decide`` computes them; the shell (``reconciler``, ``plan``) reads them, executes a
``DeletePod`` or answers a ``ChildrenRequest``/``ContentRequest``; ``autoroll.core.decide``
re-exports every name, so callers import them from either module. Verdicts, reasons and
states are ``StrEnum``s with stable values: metrics and log lines use them as labels.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Final

from autoroll.core.health import PASSED, Health
from autoroll.core.images import RunningImage, TagRef
from autoroll.core.model import ContainerRole, Digest, Unknown, WorkloadKind

# --------------------------------------------------------------------------------------------
# Result types


class Verdict(StrEnum):
    """What the core concluded for one container of one workload."""

    CURRENT = "current"  # every compared pod runs the registry's digest
    STALE = "stale"  # a stale pod is deleted this tick (an action is emitted)
    WAITING = "waiting"  # stale pods exist but may not be deleted this tick
    SKIPPED = "skipped"  # not rolled: ignored image, or something is unknown
    LOOP_GUARD = "loop-guard"  # mismatch only on pods created after the target was first seen
    NEEDS_CHILDREN = "needs-children"  # mismatch; the index's child digests must be fetched
    NEEDS_CONTENT = "needs-content"  # not a child either; the configs must be resolved
    NEEDS_NODES = "needs-nodes"  # DaemonSet: the candidates' Nodes must be read (Ready?)


class Reason(StrEnum):
    """Why a verdict was reached. Stable strings: metrics and logs use them as labels."""

    UP_TO_DATE = "up-to-date"
    STALE_POD = "stale-pod"
    INVALID_IMAGE = "invalid-image"
    OTHER_HOST = "other-host"
    DIGEST_PINNED = "digest-pinned"
    PULL_POLICY_NOT_ALWAYS = "pull-policy-not-always"
    REGISTRY_UNKNOWN = "registry-unknown"
    NOT_IN_SCOPE = "not-in-scope"  # a targeted pass looks at other tags this time
    CHILDREN_UNKNOWN = "children-unknown"
    SIGHTING_MISSING = "sighting-missing"
    NO_COMPARABLE_POD = "no-comparable-pod"
    NOT_SETTLED = "not-settled"
    ONE_PER_TICK = "one-deletion-per-tick"
    CREATED_AFTER_TARGET = "created-after-target"
    CHILDREN_NEEDED = "children-needed"
    CONTENT_NEEDED = "content-needed"
    TARGET_CONTENT_UNKNOWN = "target-content-unknown"
    CONTENT_UNKNOWN = "content-unknown"
    PLATFORM_UNKNOWN = "platform-unknown"
    REVISION_BEHIND = "revision-behind"  # OnDelete: deleting would release a template change
    NOT_AN_ORDINAL = "not-an-ordinal"  # a StatefulSet pod whose name has no ordinal
    NODES_NEEDED = "nodes-needed"
    NODE_NOT_READY = "node-not-ready"
    NODE_UNKNOWN = "node-unknown"
    DECISION_FAILED = "decision-failed"  # deciding raised: this workload is unknown this pass
    HEALTH_WINDOW = (
        "health-window"  # a replacement is inside its health window (autoroll.core.health)
    )
    FAILED_HEALTH_WINDOW = "failed-health-window"  # one restarted or went unready inside it

    @property
    def is_warning(self) -> bool:
        """Should the shell log this loudly (every tick)? Yes for what an operator must fix or
        know: a pull policy that defeats rolling, the loop guard, and a registry that cannot
        be asked (offline, refusing the token, answering garbage), which silently stops
        rolling until it is fixed, and a Node that cannot be read (a DaemonSet then never
        rolls: ``nodes: get`` missing, say). Not for one pod's unresolvable reference
        (``CONTENT_UNKNOWN``, ``PLATFORM_UNKNOWN``): that can last as long as the pod, so the
        shell warns once per pod and reference instead."""
        return self in {
            Reason.PULL_POLICY_NOT_ALWAYS,
            Reason.CREATED_AFTER_TARGET,
            Reason.REGISTRY_UNKNOWN,
            Reason.CHILDREN_UNKNOWN,
            Reason.TARGET_CONTENT_UNKNOWN,
            Reason.NODE_UNKNOWN,
            Reason.DECISION_FAILED,
        }


class PodState(StrEnum):
    """How one pod compares for one container."""

    CURRENT = "current"  # digest equals the registry's digest
    CURRENT_CHILD = "current-child"  # digest is a child of the registry's index
    SAME_CONTENT = "same-content"  # another name for the target's content (configs among its)
    SAME_PLATFORM = "same-platform"  # its node's platform has the same image in both indexes
    STALE = "stale"  # runs other content: no config its reference stands for is the target's
    LOOP_GUARD = "loop-guard"  # would be stale, but may be a replacement of autoroll's own
    MISMATCH = "mismatch"  # known and different; children not known yet
    NEEDS_CONTENT = "needs-content"  # not the target nor a child; configs not resolved yet
    CONTENT_UNKNOWN = "content-unknown"  # its reference (or the target) cannot be resolved
    PLATFORM_UNKNOWN = "platform-unknown"  # shares only some platforms' configs with the target
    OLD_TEMPLATE = "old-template"  # pod spec image string differs from the template's
    NO_DIGEST = "no-digest"  # imageID missing, a config ID, or malformed
    TERMINATING = "terminating"  # deletionTimestamp set


#: Pods in these states run the target's content.
RUNS_TARGET: Final = frozenset(
    {PodState.CURRENT, PodState.CURRENT_CHILD, PodState.SAME_CONTENT, PodState.SAME_PLATFORM}
)


class SettledReason(StrEnum):
    """Which clause of a workload's settledness failed (``autoroll.core.kinds``)."""

    SETTLED = "settled"
    POD_TERMINATING = "pod-terminating"
    POD_NOT_READY = "pod-not-ready"
    TOO_FEW_READY = "too-few-ready"  # fewer pods, or ready pods by its status, than it wants
    GENERATION_NOT_OBSERVED = "generation-not-observed"  # its controller has not caught up
    ROLLOUT_IN_PROGRESS = "rollout-in-progress"  # a template rollout: its controller's business
    PODS_UNAVAILABLE = "pods-unavailable"  # Ready, not yet for minReadySeconds (or its status)
    ROLLOUT_PAUSED = "rollout-paused"  # Deployment spec.paused: its owner's to resume
    PROGRESS_DEADLINE_EXCEEDED = "progress-deadline-exceeded"  # its last rollout failed
    NOT_JUDGED = "not-judged"  # deciding raised before anything was judged: never settled


@dataclass(frozen=True, slots=True)
class Settledness:
    """Whether a workload may lose a pod now, and, if not, which clause failed and how."""

    reason: SettledReason
    detail: str = ""

    @property
    def is_settled(self) -> bool:
        return self.reason is SettledReason.SETTLED


@dataclass(frozen=True, slots=True)
class Sighting:
    """When the shell first saw ``digest`` as the registry's answer for a ref (loop guard).

    ``older_uids`` are the UIDs of the pods (of workloads using the ref) that the sighting's
    own pass had listed before it asked the registry: each existed before the sighting,
    whatever its whole-second ``creationTimestamp`` says. Fixed at the sighting and never
    extended, so a replacement created later can never be in it.
    """

    digest: Digest
    first_seen_at: datetime
    older_uids: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True)
class ChildrenRequest:
    """The shell must GET this index by digest and report its child manifest digests."""

    ref: TagRef
    digest: Digest


@dataclass(frozen=True, slots=True)
class ContentRequest:
    """The shell must resolve this manifest or index (by digest, from ``repository`` on
    ``host``) to the image configs it stands for."""

    host: str
    repository: str
    digest: Digest


@dataclass(frozen=True, slots=True)
class NodeRequest:
    """The shell must read this Node: is it Ready? (Before a DaemonSet pod on it is deleted.)"""

    name: str


@dataclass(frozen=True, slots=True)
class DeletePod:
    """The one write autoroll performs. ``uid`` lets the shell delete with a precondition;
    ``kind`` and ``workload`` (its name, in ``namespace``) say whose pod it is."""

    namespace: str
    name: str
    uid: str
    reason: str
    image: str
    from_digest: Digest
    to_digest: Digest
    workload: str = ""
    container: str = ""
    kind: WorkloadKind = WorkloadKind.DEPLOYMENT

    @property
    def workload_key(self) -> str:
        """The owning workload's ``key`` (``namespace/kind/name``)."""
        return f"{self.namespace}/{self.kind}/{self.workload}"


@dataclass(frozen=True, slots=True)
class PodFinding:
    """One pod's comparison for one container.

    ``running`` is what the runtime named (None when not inspected or not parsable);
    ``note`` says, for a person, why a pod is current under another name or unresolved,
    and what to do about the latter.
    """

    pod: str
    uid: str
    state: PodState
    digest: Digest | Unknown | None = None  # None: not inspected (old template, terminating)
    running: RunningImage | None = None
    note: str = ""


@dataclass(frozen=True, slots=True)
class ContainerVerdict:
    """The answer for one template container: what the plan table and the log line show."""

    container: str
    image: str
    verdict: Verdict
    reason: Reason
    detail: str = ""
    ref: TagRef | None = None
    registry_digest: Digest | Unknown | None = None
    pods: tuple[PodFinding, ...] = ()
    pod: str | None = None  # the pod deleted (STALE) or next in line (WAITING)
    role: ContainerRole = ContainerRole.CONTAINER  # a native sidecar or init container, say

    @property
    def running_digests(self) -> tuple[Digest, ...]:
        """Distinct known digests the compared pods run, sorted."""
        return tuple(sorted({f.digest for f in self.pods if isinstance(f.digest, Digest)}))

    @property
    def loop_guard_hits(self) -> int:
        return sum(1 for f in self.pods if f.state is PodState.LOOP_GUARD)


@dataclass(frozen=True, slots=True)
class Decision:
    """Everything decided for one workload in one tick."""

    namespace: str
    name: str
    settledness: Settledness
    containers: tuple[ContainerVerdict, ...]
    actions: tuple[DeletePod, ...] = ()
    needs_children: frozenset[ChildrenRequest] = frozenset()
    needs_content: frozenset[ContentRequest] = frozenset()
    kind: WorkloadKind = WorkloadKind.DEPLOYMENT
    needs_nodes: frozenset[NodeRequest] = frozenset()
    #: the health window of the pods already running a moving tag's target: not passed
    #: means no pod goes (``autoroll.core.health``); its ``until`` is when to look again
    health: Health = PASSED

    @property
    def kind_name(self) -> str:
        """``statefulset/db``, as ``WorkloadView.kind_name``."""
        return f"{self.kind}/{self.name}"

    @property
    def key(self) -> str:
        """The workload's ``key`` (``namespace/kind/name``), as ``WorkloadView.key``."""
        return f"{self.namespace}/{self.kind_name}"

    @property
    def needs_anything(self) -> bool:
        """Must the shell fetch something and decide again?"""
        return bool(self.needs_children or self.needs_content or self.needs_nodes)

    @property
    def loop_guard_hits(self) -> int:
        return sum(c.loop_guard_hits for c in self.containers)
