"""The one way tests wait: poll a condition until it holds, or fail saying what was awaited.

Tests wait on conditions and counters (a pass count, a request seen, a line logged), never
on a fixed sleep. ``wait_until`` takes a predicate; ``eventually`` takes a probe that
asserts, and returns its value, so a timeout reports the last thing the probe saw.
Both return when the condition first holds; ``wait_until`` returns the seconds it waited.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def wait_until(
    predicate: Callable[[], object],
    timeout: float = 5.0,
    what: str = "the condition",
    *,
    interval: float = 0.02,
    check: Callable[[], None] | None = None,
) -> float:
    """Poll ``predicate`` until it is true; return the seconds waited.

    ``check`` runs before each poll and may raise to end the wait early (a process that
    died while it was being waited for).
    """
    started = time.monotonic()
    while True:
        if check is not None:
            check()
        if predicate():
            return time.monotonic() - started
        waited = time.monotonic() - started
        if waited > timeout:
            raise AssertionError(f"timed out after {timeout:g}s waiting for {what}")
        time.sleep(interval)


def eventually(
    probe: Callable[[], T], *, timeout: float = 30.0, interval: float = 0.2, what: str = ""
) -> T:
    """Call ``probe`` until it returns without raising AssertionError; return its value.

    On timeout the last AssertionError is re-raised with ``what`` and the elapsed time, so the
    failure says what was awaited and what was last seen.
    """
    start = time.monotonic()
    while True:
        try:
            return probe()
        except AssertionError as exc:
            waited = time.monotonic() - start
            if waited > timeout:
                raise AssertionError(f"after {waited:.1f}s waiting for {what}: {exc}") from exc
        time.sleep(interval)


__all__ = ["eventually", "wait_until"]
