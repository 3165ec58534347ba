"""Per-tag debounce of webhook deliveries: a burst for one tag costs at most two passes.

Forgejo sends one delivery per pushed blob and manifest, CI retries, and a busy
repository pushes the same tag several times a minute. Coalescing in the worker only merges
deliveries while a pass is pending; once the pass has taken them, the next delivery starts
another short targeted pass, each with a HEAD to the registry (issue 28 measured 282 passes
for 1,000 deliveries in 1.2 s). So each ``repository:tag`` has a minimum interval between
the passes its deliveries start:

- a delivery for a tag no pass took within the interval is due at once (the leading edge:
  a push still rolls within a second);
- a delivery for a tag a pass took less than ``interval`` ago is *deferred* to the moment
  the interval ends, and every further delivery for it until then joins the same deferral
  (the trailing edge: whatever the burst moved is looked at once, after it);
- tags never wait for each other: each has its own clock.

A deferral is never dropped: it becomes due when its interval ends, whatever else happens,
and a full pass takes every deferral with it. Only deliveries are debounced; the pacer's
and the election's nudges are not (they are already one per settled workload or term).

Pure functions over plain data; ``autoroll.controller.worker.Nudge`` holds the state and the lock.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from autoroll.core.scope import ImageTag


@dataclass(frozen=True, slots=True)
class Arrival:
    """Where a delivery's tags go: ``due`` now, or ``deferred`` until the given times."""

    due: frozenset[ImageTag]
    deferred: Mapping[ImageTag, float]


def arrive(
    tags: Iterable[ImageTag],
    *,
    now: float,
    taken: Mapping[ImageTag, float],
    deferred: Mapping[ImageTag, float],
    interval: float,
) -> Arrival:
    """Split a delivery's ``tags`` into those due now and those deferred (with their due
    times), given when a pass last took each tag (``taken``) and what is deferred already.

    A tag already deferred keeps its due time (it never moves later, so a stream of
    deliveries cannot postpone it forever).
    """
    due: set[ImageTag] = set()
    later: dict[ImageTag, float] = {}
    for tag in tags:
        if tag in deferred:
            later[tag] = deferred[tag]
            continue
        last = taken.get(tag)
        if last is None or now - last >= interval:
            due.add(tag)
        else:
            later[tag] = last + interval
    return Arrival(frozenset(due), later)


def ripe(deferred: Mapping[ImageTag, float], *, now: float) -> frozenset[ImageTag]:
    """The deferred tags whose interval has ended."""
    return frozenset(tag for tag, at in deferred.items() if at <= now)


def next_due(deferred: Mapping[ImageTag, float]) -> float | None:
    """When the earliest deferral becomes due (None: nothing deferred)."""
    return min(deferred.values(), default=None)


def forget_old(
    taken: Mapping[ImageTag, float], *, now: float, interval: float
) -> dict[ImageTag, float]:
    """``taken`` without the tags whose interval has ended (they would be due anyway), so
    the memory holds only tags a pass took within the last interval."""
    return {tag: at for tag, at in taken.items() if now - at < interval}


__all__ = ["Arrival", "arrive", "forget_old", "next_due", "ripe"]
