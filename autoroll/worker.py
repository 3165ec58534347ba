"""The reconcile worker: one thread, woken by the poll timer or by a nudge, never overlapping.

Lifecycle (explicit, as the house style asks)::

    Nudge.nudge() ──► wake Event ──┐
    poll interval elapses ─────────┼──► Worker thread: clear wake, run one pass, repeat
    Worker.stop() ──► stop Event ──┘        (stop is checked before and after every wait)

Coalescing falls out of the single ``Event``: the worker clears it *before* a pass starts,
so any nudge during the pass sets it again, and any number of further nudges find it
already set. After the pass the worker sees one set flag and runs exactly one follow-up
pass. A nudge never queues work, so a flood of webhooks costs at most one extra pass.

A tick may return ``SKIPPED`` (a replica that is not the leader): the pass is counted as
``autoroll_ticks{outcome="skipped"}`` and kept out of the duration histogram.

Every pass is wrapped: an exception is logged with its traceback, counted as
``autoroll_ticks{outcome="error"}`` and survived; the next pass comes on the next wake-up.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Final

from autoroll.metrics import Metrics

log = logging.getLogger(__name__)


#: What a tick returns when it chose not to run (this replica does not lead).
SKIPPED: Final = "skipped"


class WorkerStopTimeoutError(RuntimeError):
    """The worker thread was still running when ``Worker.stop`` gave up waiting for it."""


class Nudge:
    """Ask the worker for a pass soon. Cheap, thread-safe and non-blocking.

    The webhook handler calls ``nudge()`` and returns at once; the worker owns everything
    else. ``pending`` is true from a nudge until the worker takes it.
    """

    def __init__(self, metrics: Metrics | None = None) -> None:
        self._wake = threading.Event()
        self._lock = threading.Lock()
        self._metrics = metrics

    def nudge(self) -> None:
        """Request a pass; folds into an already pending request instead of queueing."""
        with self._lock:
            coalesced = self._wake.is_set()
            self._wake.set()
        if self._metrics is not None:
            self._metrics.nudges.inc()
            if coalesced:
                self._metrics.nudges_coalesced.inc()

    @property
    def pending(self) -> bool:
        return self._wake.is_set()

    def wait(self, timeout: float) -> bool:
        """Block up to ``timeout`` seconds for a nudge; True if one is pending."""
        return self._wake.wait(timeout)

    def take(self) -> None:
        """Consume the pending request; called by the worker just before a pass starts."""
        with self._lock:
            self._wake.clear()

    def _interrupt(self) -> None:
        # Stop uses the same Event to end a wait early; not counted as a nudge.
        self._wake.set()


class Worker:
    """Runs ``tick`` once at start, then on every nudge and every ``interval`` seconds.

    ``tick`` receives a ``stopping`` callable it may poll between steps to abandon a pass
    cleanly during shutdown (each step, such as one pod deletion, is a single API call).
    Exceptions listed in ``expected_errors`` are logged as one line without a traceback.
    """

    def __init__(
        self,
        tick: Callable[[Callable[[], bool]], object],
        *,
        nudge: Nudge,
        interval_seconds: float,
        metrics: Metrics,
        clock: Callable[[], float] = time.monotonic,
        expected_errors: tuple[type[Exception], ...] = (),
        name: str = "autoroll-reconcile",
    ) -> None:
        if interval_seconds <= 0:
            raise ValueError(f"interval_seconds must be positive, got {interval_seconds!r}")
        self._tick = tick
        self._nudge = nudge
        self._interval = interval_seconds
        self._metrics = metrics
        self._clock = clock
        self._expected = expected_errors
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._passes = 0

    @property
    def passes(self) -> int:
        """How many passes have finished (successfully or not); for tests and logs."""
        return self._passes

    @property
    def alive(self) -> bool:
        return self._thread.is_alive()

    def stopping(self) -> bool:
        """Has ``stop`` been requested? Passed to ``tick`` so it can bail out between steps."""
        return self._stop.is_set()

    def start(self) -> None:
        """Start the thread; the first pass runs immediately, not after one interval."""
        self._nudge._interrupt()
        self._thread.start()

    def stop(self, timeout: float) -> None:
        """Ask the thread to stop, wait up to ``timeout`` seconds, raise if it is still alive.

        A pass in progress is allowed to finish its current step; it sees ``stopping()``
        and returns early. Raising (rather than returning quietly) makes a stuck shutdown
        visible in the logs of the process that is about to exit anyway.
        """
        self._stop.set()
        self._nudge._interrupt()
        if self._thread.ident is None:
            return
        self._thread.join(timeout)
        if self._thread.is_alive():
            raise WorkerStopTimeoutError(
                f"reconcile thread {self._thread.name!r} still running after {timeout:g}s"
            )

    def _run(self) -> None:
        log.info("reconcile worker started", extra={"event": "worker-start"})
        while not self._stop.is_set():
            self._nudge.wait(self._interval)
            if self._stop.is_set():
                break
            # Clear before the pass: nudges during the pass must wake one follow-up pass.
            self._nudge.take()
            self._run_once()
        log.info("reconcile worker stopped", extra={"event": "worker-stop"})

    def _run_once(self) -> None:
        started = self._clock()
        outcome = "ok"
        try:
            if self._tick(self.stopping) == SKIPPED:
                outcome = SKIPPED
        except self._expected as exc:
            # Known adapter failures (API unreachable, RBAC) carry a clear message already.
            outcome = "error"
            log.error("reconcile pass failed: %s; will retry on the next wake-up", exc)
        except Exception:
            outcome = "error"
            log.exception("reconcile pass failed unexpectedly; will retry on the next wake-up")
        finally:
            elapsed = self._clock() - started
            self._metrics.ticks.labels(outcome=outcome).inc()
            if outcome != SKIPPED:
                self._metrics.tick_duration.observe(elapsed)
            self._passes += 1
