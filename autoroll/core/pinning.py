"""Pin a new pod of an enrolled workload to its approved digests at admission (pure).

The guardrails hold *deletions*; a pod created anyway (a scale-up, a drain, a crashed pod's
replacement) pulls whatever its tag names at that moment. The pinning webhook closes that
leak (docs/adr/028): for a pod being created, ``pin_pod`` finds its workload through the
controller reference (``workload_key``), asks an in-memory, read-only ``ApprovedDigests``
view what each tag's approved digest is for that workload, and answers with a JSONPatch
that turns each enrolled container's ``repo:tag`` into ``repo:tag@sha256:<approved>``.

Which containers (``PinOutcome``, a ladder, the first answer wins):

- every role: containers, native sidecars and plain init containers alike, since each runs
  its image (docs/adr/015);
- not an image that does not parse, is on a host that is not a configured registry, or is
  already pinned by digest (someone's choice, never rewritten);
- not one whose pull policy is ``Never`` (the kubelet would not pull the pinned digest);
- not one whose tag has no approved digest for this workload (none known yet, or the held
  digest is no longer in the registry): it pulls the tag as before.

Nothing here can fail the admission: what cannot be told is "not pinned", and the webhook
answers ``allowed`` whatever happens (failurePolicy Ignore covers the rest).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Final, Protocol

from autoroll.core.images import ImageRefError, TagRef, is_listed, parse_image
from autoroll.core.model import PULL_ALWAYS, PULL_IF_NOT_PRESENT, Digest, WorkloadKind

#: The label the Deployment controller puts on every pod of a ReplicaSet it made
#: (docs/adr/018: the ReplicaSet is named ``<deployment>-<this hash>``).
POD_TEMPLATE_HASH: Final = "pod-template-hash"
#: The pull policies a pinned container may have; ``Never`` never pulls the pin.
_PULLS: Final = frozenset({PULL_ALWAYS, PULL_IF_NOT_PRESENT})
#: The pod spec lists the JSONPatch may touch, in the order they are looked at.
CONTAINER_FIELDS: Final = ("initContainers", "containers")


@dataclass(frozen=True, slots=True)
class OwnerReference:
    """One ``metadata.ownerReferences[]`` entry, as admission sees it."""

    api_version: str
    kind: str
    name: str
    controller: bool = False


@dataclass(frozen=True, slots=True)
class AdmittedContainer:
    """A container of the pod being created: where it sits in the spec (its JSONPatch path)
    and what it asks for. ``image_pull_policy`` is "" when the pod spec leaves it unset
    (admission defaults it later: ``Always`` for ``:latest`` or no tag)."""

    name: str
    image: str
    field: str  # "containers" | "initContainers"
    index: int
    image_pull_policy: str = ""

    @property
    def path(self) -> str:
        return f"/spec/{self.field}/{self.index}/image"

    @property
    def pull_policy(self) -> str:
        """The policy the API server will default: ``Always`` for ``:latest`` or no tag,
        ``IfNotPresent`` otherwise (as ``kube.workloads.default_pull_policy``)."""
        if self.image_pull_policy:
            return self.image_pull_policy
        try:
            image = parse_image(self.image)
        except ImageRefError:
            return PULL_IF_NOT_PRESENT
        if image.digest is None and image.tag in (None, "latest"):
            return PULL_ALWAYS
        return PULL_IF_NOT_PRESENT


@dataclass(frozen=True, slots=True)
class PodAdmission:
    """What ``pin_pod`` needs of a pod CREATE: its namespace, labels, owners and containers."""

    namespace: str
    name: str
    labels: Mapping[str, str]
    owners: tuple[OwnerReference, ...]
    containers: tuple[AdmittedContainer, ...]


class ApprovedDigests(Protocol):
    """The in-memory, read-only view admission answers from (``autoroll.controller.approvals``
    keeps one; any process holding the cache may). ``approved`` is the digest a new pod of
    the workload ``key`` (``namespace/kind/name``) is pinned to for ``ref``, or None: not
    enrolled, not known, or nothing to pin to. Must be quick and thread-safe: it is called
    on the admission path, which never waits on a pass."""

    def approved(self, key: str, ref: TagRef) -> Digest | None: ...

    def knows(self, key: str) -> bool:
        """Is ``key`` an enrolled workload the view has judged?"""
        ...


class PinOutcome(StrEnum):
    """What happened to one container. Stable strings: metrics and logs use them."""

    PINNED = "pinned"
    ALREADY_PINNED = "already-pinned"
    INVALID_IMAGE = "invalid-image"
    OTHER_HOST = "other-host"
    PULL_POLICY_NEVER = "pull-policy-never"
    NOT_APPROVED = "no-approved-digest"


@dataclass(frozen=True, slots=True)
class ContainerPin:
    """One container's outcome; ``image`` is the new image string when pinned."""

    container: str
    outcome: PinOutcome
    image: str = ""


class WhyNot(StrEnum):
    """Why a pod is admitted without a patch as a whole."""

    PINNED = "pinned"  # at least one container was pinned
    NO_CONTROLLER = "no-controller"  # a bare pod, a Job's, a ReplicaSet's without a Deployment
    NOT_ENROLLED = "not-enrolled"  # its workload is not in the view (or not yet)
    NOTHING_TO_PIN = "nothing-to-pin"  # enrolled, but no container had an approved digest


@dataclass(frozen=True, slots=True)
class PinResult:
    """The answer for one pod: its workload's key (None: none found), each container's
    outcome, and the JSONPatch operations (empty: admitted unchanged)."""

    workload: str | None
    why: WhyNot
    containers: tuple[ContainerPin, ...] = ()
    patch: tuple[Mapping[str, str], ...] = ()


def workload_key(
    namespace: str, owners: Sequence[OwnerReference], labels: Mapping[str, str]
) -> str | None:
    """The key (``namespace/kind/name``) of the workload a new pod belongs to, from its
    controller reference alone, or None.

    A StatefulSet's or DaemonSet's pod names it as its controller. A Deployment's pod names
    a ReplicaSet ``<deployment>-<pod-template-hash>`` (the rule of docs/adr/018, which needs
    no ReplicaSet read): the hash is the pod's own label, so a ReplicaSet of any other name
    (made by hand, or another Deployment's) maps to no Deployment.
    """
    controller = next((o for o in owners if o.controller), None)
    if controller is None or not controller.api_version.startswith("apps/"):
        return None
    if controller.kind == WorkloadKind.STATEFULSET.api_kind:
        return f"{namespace}/{WorkloadKind.STATEFULSET}/{controller.name}"
    if controller.kind == WorkloadKind.DAEMONSET.api_kind:
        return f"{namespace}/{WorkloadKind.DAEMONSET}/{controller.name}"
    if controller.kind != "ReplicaSet":
        return None
    suffix = labels.get(POD_TEMPLATE_HASH, "")
    deployment = controller.name.removesuffix(f"-{suffix}")
    if not suffix or deployment == controller.name or not deployment:
        return None
    return f"{namespace}/{WorkloadKind.DEPLOYMENT}/{deployment}"


def pin_pod(
    pod: PodAdmission, *, approvals: ApprovedDigests, registries: Collection[str]
) -> PinResult:
    """The JSONPatch that pins ``pod``'s enrolled containers to their approved digests."""
    key = workload_key(pod.namespace, pod.owners, pod.labels)
    if key is None:
        return PinResult(None, WhyNot.NO_CONTROLLER)
    pins = tuple(
        _pin_container(c, key=key, approvals=approvals, registries=registries)
        for c in pod.containers
    )
    patch = tuple(
        {"op": "replace", "path": c.path, "value": p.image}
        for c, p in zip(pod.containers, pins, strict=True)
        if p.outcome is PinOutcome.PINNED
    )
    if patch:
        return PinResult(key, WhyNot.PINNED, pins, patch)
    why = WhyNot.NOTHING_TO_PIN if approvals.knows(key) else WhyNot.NOT_ENROLLED
    return PinResult(key, why, pins)


def _pin_container(
    container: AdmittedContainer,
    *,
    key: str,
    approvals: ApprovedDigests,
    registries: Collection[str],
) -> ContainerPin:
    """One container's rung of the ladder (module docstring)."""
    name = container.name
    try:
        image = parse_image(container.image)
    except ImageRefError:
        return ContainerPin(name, PinOutcome.INVALID_IMAGE)
    if not is_listed(image.host, registries):
        # Another registry's image is not autoroll's to pin.
        return ContainerPin(name, PinOutcome.OTHER_HOST)
    ref = image.tag_ref
    if ref is None:
        # Someone pinned it already (a person, another webhook): never rewritten.
        return ContainerPin(name, PinOutcome.ALREADY_PINNED)
    if container.pull_policy not in _PULLS:
        return ContainerPin(name, PinOutcome.PULL_POLICY_NEVER)
    digest = approvals.approved(key, ref)
    if digest is None:
        return ContainerPin(name, PinOutcome.NOT_APPROVED)
    return ContainerPin(name, PinOutcome.PINNED, f"{container.image}@{digest}")


__all__ = [
    "CONTAINER_FIELDS",
    "POD_TEMPLATE_HASH",
    "AdmittedContainer",
    "ApprovedDigests",
    "ContainerPin",
    "OwnerReference",
    "PinOutcome",
    "PinResult",
    "PodAdmission",
    "WhyNot",
    "pin_pod",
    "workload_key",
]
