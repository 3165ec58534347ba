"""Notification throttle: at most one message per happening kind per interval. Pure.

A roll of 500 workloads is 500 ``done`` happenings; people want one message a minute that
lists them, not 500. So each kind (``started``, ``done``, ``halted``, ``quarantined``) is
throttled on its own: a happening of a kind not sent within the interval goes at once;
one that comes sooner waits, with every other of its kind, for the interval's end, and
they go together as one message. A ``quarantined`` is never held back by a burst of
``done``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypeVar

K = TypeVar("K")


def due(
    waiting: Mapping[K, int], last_sent: Mapping[K, float], *, now: float, interval: float
) -> tuple[frozenset[K], float | None]:
    """Which kinds with happenings ``waiting`` may be sent ``now``, and when the first of
    the rest may (monotonic seconds)."""
    ready: set[K] = set()
    later: list[float] = []
    for kind, count in waiting.items():
        if count <= 0:
            continue
        at = last_sent.get(kind)
        if at is None or now >= at + interval:
            ready.add(kind)
        else:
            later.append(at + interval)
    return frozenset(ready), (min(later) if later else None)


__all__ = ["due"]
