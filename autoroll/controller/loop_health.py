"""The reconcile loop's health as the probes read it: ``/livez`` and ``/readyz``.

``LoopStatus`` is the loop's state as plain data (``autoroll.controller.worker.Worker.status``
fills it); it crosses from the reconcile process to the HTTP process (docs/adr/027), where
``liveness`` and ``readiness`` turn it into a ``Health``: healthy or not, and why. The loop
counts as stuck once no pass has finished without raising for ``liveness_bound`` seconds
(poll interval + pass timeout + the longest single step).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Health:
    """A probe's answer: healthy or not, and why, in words for the probe's log."""

    ok: bool
    detail: str


def liveness_bound(
    *, interval_seconds: float, pass_timeout_seconds: float, step_seconds: float
) -> float:
    """Seconds without a finished pass after which the loop counts as stuck.

    The next pass starts at most one poll interval after the last one finished; it is told to
    stop once it runs past the pass timeout, and it stops after the step in flight (one API
    call or the registry's budget), which ``step_seconds`` bounds.
    """
    return interval_seconds + pass_timeout_seconds + step_seconds


def liveness(
    *, now: float, last_progress: float, bound: float, last_error: str | None = None
) -> Health:
    """Live while a pass has finished without raising (or the loop started) within
    ``bound`` seconds; ``last_error`` is what the latest failed pass raised, if it failed."""
    quiet = now - last_progress
    failing = f"; the last pass raised {last_error}" if last_error else ""
    if quiet > bound:
        return Health(
            False,
            f"no reconcile pass finished for {quiet:.0f}s (bound {bound:.0f}s){failing}",
        )
    return Health(True, f"last pass finished {quiet:.0f}s ago (bound {bound:.0f}s){failing}")


@dataclass(frozen=True, slots=True)
class LoopStatus:
    """The loop's health as plain data: what ``/livez`` and ``/readyz`` are computed from.

    It crosses from the reconcile process to the HTTP process (docs/adr/027): times are on
    the monotonic clock, which on one machine every process shares.
    """

    last_progress: float  # a pass finished without raising (or the loop started) then
    liveness_bound: float
    last_error: str | None = None  # what the latest pass raised, if it raised
    running: bool = True  # the reconcile thread is alive
    stopping: bool = False  # a stop was requested

    def liveness(self, now: float) -> Health:
        return liveness(
            now=now,
            last_progress=self.last_progress,
            bound=self.liveness_bound,
            last_error=self.last_error,
        )

    def readiness(self) -> Health:
        if self.stopping:
            return Health(False, "shutting down")
        if not self.running:
            return Health(False, "the reconcile thread is not running")
        return Health(True, "the reconcile thread is running")


__all__ = ["Health", "LoopStatus", "liveness", "liveness_bound"]
