"""Which template containers take part in rolling, and the tags a pass must resolve (pure).

A container counts when its image parses, is on a configured registry, names a tag (not a
digest) and has a pull policy under which a recreated pod is sure to run the tag's new
digest: ``Always``, and ``IfNotPresent`` too once new pods are pinned at admission
(docs/adr/028). The first reason to leave it out is the answer (``Selection.reason``), and
``decide`` reports it as the container's skipped verdict. ``refs_to_resolve`` is step 1 of
the shell's API (``autoroll.core.decide``): every tag the registry is asked about.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass

from autoroll.core.decision import Reason
from autoroll.core.images import ImageRef, ImageRefError, TagRef, is_listed, parse_image
from autoroll.core.model import PULL_ALWAYS, PULL_IF_NOT_PRESENT, ContainerView, WorkloadView

#: Pull policies under which a recreated pod is sure to run the tag's new digest: Always
#: (it pulls the tag again), and, once pinned at admission, IfNotPresent (it names the digest).
_POLICIES = frozenset({PULL_ALWAYS})
_PINNED_POLICIES = frozenset({PULL_ALWAYS, PULL_IF_NOT_PRESENT})


@dataclass(frozen=True, slots=True)
class Selection:
    """Whether a template container takes part, and the ref to resolve if it does."""

    container: ContainerView
    ref: TagRef | None  # set iff counted
    reason: Reason | None = None  # why not counted
    detail: str = ""

    @property
    def is_counted(self) -> bool:
        return self.ref is not None


def select_container(
    container: ContainerView, *, registries: Collection[str], pinning: bool = False
) -> Selection:
    """Does this container take part in rolling? A ladder: the first reason to ignore wins.

    ``pinning``: the pinning webhook is on (docs/adr/028), so a replacement is admitted
    pinned to its digest and runs it whatever its pull policy: ``IfNotPresent`` rolls too.
    ``Never`` never does (the kubelet would not pull the pinned digest)."""
    try:
        image: ImageRef = parse_image(container.image)
    except ImageRefError as exc:
        # An image the runtime would not accept either; nothing sensible to compare.
        return Selection(container, None, Reason.INVALID_IMAGE, str(exc))
    if not is_listed(image.host, registries):
        # Only the configured registries' tags are watched; other hosts are someone else's.
        listed = ", ".join(sorted(registries)) or "none"
        return Selection(
            container,
            None,
            Reason.OTHER_HOST,
            f"host {image.host} is not a configured registry (configured: {listed})",
        )
    ref = image.tag_ref
    if ref is None:
        # Pinned by digest: the image cannot move, so there is nothing to roll.
        return Selection(container, None, Reason.DIGEST_PINNED, "image is pinned by digest")
    if container.image_pull_policy not in (_PINNED_POLICIES if pinning else _POLICIES):
        # A recreated pod might reuse the node's cached image and come back stale: never roll.
        return Selection(
            container,
            None,
            Reason.PULL_POLICY_NOT_ALWAYS,
            f"imagePullPolicy is {container.image_pull_policy or 'unset'!s}; set it to Always"
            + (" or IfNotPresent" if pinning else "")
            + " to have this container rolled",
        )
    return Selection(container, ref)


def refs_to_resolve(
    workloads: Iterable[WorkloadView], *, registries: Collection[str], pinning: bool = False
) -> set[TagRef]:
    """Every ref the registry must be asked about this tick (deduplicated)."""
    refs: set[TagRef] = set()
    for workload in workloads:
        for container in workload.containers:
            ref = select_container(container, registries=registries, pinning=pinning).ref
            if ref is not None:
                refs.add(ref)
    return refs


__all__ = ["Selection", "refs_to_resolve", "select_container"]
