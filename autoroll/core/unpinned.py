"""Which pods of an enrolled workload were admitted unpinned although they should not have
been (pure): the pinning webhook was not reached, and ``failurePolicy: Ignore`` let the pod
in with its tag as it was (docs/adr/028). Found by the pass afterwards, never at admission.

A pod counts when one of its containers asks for the template's ``repo:tag`` exactly (no
digest) while the workload's approval for that tag names a digest now, and there is
evidence the webhook was meant to answer when the pod was made:

- an older pod of the same workload is pinned for that container (the webhook answered
  before this pod was made), or
- the pod was made at least a second (the timestamps' resolution) after this process first
  published a digest for that tag and workload (``pinnable_since``), and the approval has
  named one since.

A pod made before pinning was turned on, or while no digest was approved, is not one.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Final

from autoroll.core.images import TagRef, pinned_digest
from autoroll.core.model import Digest, Enrolled, PodView
from autoroll.core.selection import select_container

#: ``creationTimestamp`` has whole seconds: a pod stamped in the second the view was
#: published may have been made just before it.
_RESOLUTION: Final = timedelta(seconds=1)


@dataclass(frozen=True, slots=True)
class UnpinnedPod:
    """A pod admitted unpinned: its name and UID, and each container that should have been
    pinned with the digest its tag is approved on now."""

    pod: str
    uid: str
    containers: tuple[tuple[str, str, Digest], ...]  # (container, image, approved digest)


def admitted_unpinned(
    enrolled: Enrolled,
    *,
    approved: Mapping[TagRef, Digest | None],
    pinnable_since: Mapping[TagRef, datetime],
    registries: Collection[str],
) -> tuple[UnpinnedPod, ...]:
    """The pods of ``enrolled`` admitted unpinned (module docstring), oldest first."""
    live = [p for p in enrolled.pods if not p.deleting and not p.is_terminal]
    found: dict[str, list[tuple[str, str, Digest]]] = {}
    for container in enrolled.workload.containers:
        ref = select_container(container, registries=registries, pinning=True).ref
        digest = approved.get(ref) if ref is not None else None
        if ref is None or digest is None:
            continue
        pinned_at = [
            p.created_at
            for p in live
            if pinned_digest(container.image, p.spec_image(container.name) or "") is not None
        ]
        since = pinnable_since.get(ref)
        for pod in live:
            if pod.spec_image(container.name) != container.image:
                continue
            if _should_have_been_pinned(pod, pinned_at, since):
                found.setdefault(pod.uid or pod.name, []).append(
                    (container.name, container.image, digest)
                )
    by_id = {p.uid or p.name: p for p in live}
    pods = sorted(found, key=lambda i: (by_id[i].created_at, by_id[i].name))
    return tuple(UnpinnedPod(by_id[i].name, by_id[i].uid, tuple(found[i])) for i in pods)


def _should_have_been_pinned(
    pod: PodView, pinned_at: list[datetime], since: datetime | None
) -> bool:
    if any(at < pod.created_at for at in pinned_at):
        return True
    return since is not None and pod.created_at >= since + _RESOLUTION


__all__ = ["UnpinnedPod", "admitted_unpinned"]
