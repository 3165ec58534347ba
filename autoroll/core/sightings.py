"""The loop guard's memory: when each tag's current digest was first seen, and by then which
pods were listed (pure).

Step 3 of the shell's API (``autoroll.core.decide``): the shell keeps the memory, a plain
``dict[TagRef, Sighting]``, between passes (nothing on disk) and renews it each pass with
``observe_targets``, from the registry's answers and the UIDs ``listed_uids`` names from the
listing it made before asking the registry. ``decide`` spares a pod that may be the
replacement of autoroll's own deletion by these sightings (``autoroll.core.compare.guard``).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from datetime import datetime

from autoroll.core.decision import Sighting
from autoroll.core.images import TagRef
from autoroll.core.model import Digest, PodView, Unknown, WorkloadView
from autoroll.core.selection import select_container


def listed_uids(
    snapshot: Iterable[tuple[WorkloadView, Sequence[PodView]]],
    *,
    registries: Collection[str],
    pinning: bool = False,
) -> dict[TagRef, frozenset[str]]:
    """Per ref, the UIDs of the listed pods of every workload with a container using it.

    Feeds ``observe_targets``: taken from a listing made before the registry is asked, these
    pods all predate any digest that the registry's answers show for the first time.
    """
    uids: dict[TagRef, set[str]] = {}
    for workload, pods in snapshot:
        pod_uids = {p.uid for p in pods if p.uid}
        for container in workload.containers:
            ref = select_container(container, registries=registries, pinning=pinning).ref
            if ref is not None:
                uids.setdefault(ref, set()).update(pod_uids)
    return {ref: frozenset(found) for ref, found in uids.items()}


def observe_targets(
    previous: Mapping[TagRef, Sighting],
    resolved: Mapping[TagRef, Digest | Unknown],
    *,
    now: datetime,
    listed: Mapping[TagRef, frozenset[str]] | None = None,
    partial: bool = False,
) -> dict[TagRef, Sighting]:
    """The next loop-guard memory: when each ref's current digest was first seen, and which
    pods were listed before that.

    Keyed by ref, not by digest, so that a tag moving back to an older digest counts as a
    new sighting (otherwise pods of the intermediate digest could never be replaced). An
    unknown answer keeps the previous sighting. After a full pass (``partial`` false) refs
    no longer resolved are forgotten, so the memory is bounded by the enrolled refs and,
    per ref, by the pods listed at its sighting (a new digest replaces the set, an
    unchanged one keeps it as it was). A targeted pass (``partial``) resolves only some
    refs and keeps every other sighting as it was: it says nothing about them.

    ``listed`` (see ``listed_uids``) must come from a listing finished before ``resolved``
    was asked for, and ``now`` must be read after that listing: then every UID remembered
    belongs to a pod created before ``now``. For a ref it resolves, that listing must hold
    every enrolled workload using the ref, also in a targeted pass (``autoroll.core.scope``), or
    a pod of a workload left out would be judged by its timestamp alone. Without ``listed``
    only timestamps guard.
    """
    if now.tzinfo is None:
        raise ValueError("now must be timezone-aware")
    listed = listed or {}
    memory: dict[TagRef, Sighting] = (
        {ref: s for ref, s in previous.items() if ref not in resolved} if partial else {}
    )
    for ref, answer in resolved.items():
        before = previous.get(ref)
        if isinstance(answer, Unknown):
            if before is not None:
                memory[ref] = before
        elif before is not None and before.digest == answer:
            memory[ref] = before
        else:
            memory[ref] = Sighting(answer, now, listed.get(ref, frozenset()))
    return memory


__all__ = ["listed_uids", "observe_targets"]
