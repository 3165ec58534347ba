"""The reconcile worker: one thread, woken by the poll timer or by a nudge, never overlapping.

Lifecycle (explicit, as the house style asks)::

    Nudge.nudge(scope) ──► pending scope, wake Event ──┐
    a full pass is due (poll interval) ────────────────┼──► Worker thread: take the scope,
    Worker.stop() ──► stop Event ──────────────────────┘      run one pass, repeat
                                                             (stop is checked before and
                                                             after every wait)

A nudge carries a scope (``autoroll.core.scope``): full, or targeted at some tags. Coalescing
falls out of the single pending scope: the worker takes it *before* a pass starts, so any
nudge during the pass leaves a new one pending, and any number of further nudges merge into
it (a full one absorbs the rest). After the pass the worker finds one pending scope and
runs exactly one follow-up pass for all of it. A nudge never queues work. Webhook
deliveries go through ``Nudge.deliver``, which also spaces the passes for one tag
(``autoroll.core.debounce``): a burst for a tag costs one pass at once and one after it, however
long the passes it meets are.

The poll timer is its own clock: a full pass runs ``interval_seconds`` after the last full
pass ended, however many targeted passes ran in between (a stream of webhooks for one tag
must not starve the others of their poll). A targeted nudge pending when a full pass is due
is folded into it.

A tick may report that it was skipped (``PassReport.skipped``: a replica that is not the
leader): the pass is counted as ``autoroll_ticks{outcome="skipped"}`` and kept out of the
duration histogram.

Every pass is wrapped: an exception is logged with its traceback, counted as
``autoroll_ticks{outcome="error"}`` and survived; the next pass comes on the next wake-up.
Every line logged during a pass carries its ``pass_id``
(``autoroll.instruments.logs.pass_context``), and the pass ends with one ``pass-done``
line giving its outcome, scope and ``duration_seconds``.

Health is read from the loop itself. A pass that runs past ``pass_timeout_seconds`` is told
to stop (``stopping()`` turns true; it ends before its next Deployment). ``liveness`` fails
once no pass has finished for ``liveness_bound`` = poll interval + pass timeout + the longest
single step (one API call): the loop is stuck, and only a restart helps (``/livez``). A
pass that raised is no progress: a loop whose every pass fails is as stuck as one that
hangs, and ``/livez`` says what the last one raised (docs/adr/020).
``readiness`` holds while the thread runs and no stop was requested (``/readyz``). Both are
computed from ``LoopStatus`` in ``autoroll.controller.loop_health``.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable
from typing import Final, Protocol

from autoroll.controller.loop_health import Health, LoopStatus, liveness_bound
from autoroll.core import debounce
from autoroll.core.scope import FULL, ImageTag, Scope
from autoroll.instruments import logs
from autoroll.instruments.metrics import Metrics

log = logging.getLogger(__name__)


#: The ``outcome`` label of a pass that was skipped (this replica does not lead).
SKIPPED: Final = "skipped"
#: The ``outcome`` label of a pass that raised; it is no progress for ``/livez``.
ERROR: Final = "error"


class PassReport(Protocol):
    """What the worker reads from a tick's result (``reconciler.TickReport`` has it)."""

    @property
    def skipped(self) -> bool: ...


class WorkerStopTimeoutError(RuntimeError):
    """The worker thread was still running when ``Worker.stop`` gave up waiting for it."""


class Nudge:
    """Ask the worker for a pass soon. Cheap, thread-safe and non-blocking.

    The webhook handler calls ``deliver(scope)`` and returns at once; the worker owns
    everything else. ``deliver`` is ``nudge`` with the per-tag debounce of
    ``autoroll.core.debounce`` (``tag_interval_seconds``; 0 turns it off): a tag a pass took
    within the interval waits, deferred, until the interval ends. ``pending`` is true from a
    nudge until the worker takes it, deferrals included.
    """

    def __init__(
        self,
        metrics: Metrics | None = None,
        *,
        tag_interval_seconds: float = 0.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._wake = threading.Event()
        self._lock = threading.Lock()
        self._scope: Scope | None = None
        self._metrics = metrics
        self._interval = tag_interval_seconds
        self._clock = clock
        self._taken: dict[ImageTag, float] = {}  # tag -> when a pass last took it
        self._deferred: dict[ImageTag, float] = {}  # tag -> when its deferral is due

    def nudge(self, scope: Scope = FULL) -> None:
        """Request a pass over ``scope``; merges into a pending request instead of queueing."""
        with self._lock:
            coalesced = self._scope is not None
            self._scope = scope if self._scope is None else self._scope.merge(scope)
            self._wake.set()
        if self._metrics is not None:
            self._metrics.nudges.inc()
            if coalesced:
                self._metrics.nudges_coalesced.inc()

    def nudge_in(self, scope: Scope, seconds: float) -> None:
        """Request a pass over ``scope``'s tags ``seconds`` from now (the pacer, for a health
        window that ends then): a deferral like a debounced delivery's, never later than one
        already due for a tag. A full scope is nudged at once."""
        if scope.tags is None:
            self.nudge(scope)
            return
        with self._lock:
            at = self._clock() + max(0.0, seconds)
            for tag in scope.tags:
                self._deferred[tag] = min(self._deferred.get(tag, at), at)
            self._wake.set()  # the worker's wait learns the new due time

    def deliver(self, scope: Scope = FULL) -> None:
        """A webhook delivery's nudge: the tags a pass took within the interval are deferred
        to its end; the rest (and a full scope) are nudged at once."""
        if scope.tags is None or not scope.tags or self._interval <= 0:
            self.nudge(scope)
            return
        with self._lock:
            arrival = debounce.arrive(
                scope.tags,
                now=self._clock(),
                taken=self._taken,
                deferred=self._deferred,
                interval=self._interval,
            )
            self._deferred.update(arrival.deferred)
            self._wake.set()  # the worker's wait learns the new due time
        if arrival.due:
            self.nudge(Scope.of(arrival.due))
        elif self._metrics is not None:
            self._metrics.nudges.inc()
        if arrival.deferred and self._metrics is not None:
            self._metrics.nudges_deferred.inc()

    @property
    def pending(self) -> bool:
        with self._lock:
            return self._scope is not None or bool(self._deferred)

    def wait(self, timeout: float) -> bool:
        """Block up to ``timeout`` seconds for a nudge, a deferral coming due, or an
        interrupt; True if woken."""
        deadline = self._clock() + timeout
        while True:
            with self._lock:
                due_at = debounce.next_due(self._deferred)
            now = self._clock()
            if due_at is not None and due_at <= now:
                return True
            until = deadline if due_at is None else min(deadline, due_at)
            if until <= now:
                return self._wake.is_set()
            if self._wake.wait(until - now):
                return True

    def take(self) -> Scope | None:
        """Consume the pending request and the deferrals now due (None: nothing due, as
        after an interrupt); called by the worker just before a pass starts."""
        with self._lock:
            now = self._clock()
            scope = self._scope
            ripe = debounce.ripe(self._deferred, now=now)
            if ripe:
                scope = Scope.of(ripe) if scope is None else scope.merge(Scope.of(ripe))
            self._scope = None
            self._wake.clear()
            if scope is None:
                return None
            if scope.tags is None:
                self._deferred.clear()  # a full pass looks at every deferred tag too
                return scope
            for tag in scope.tags:
                self._deferred.pop(tag, None)
            self._taken = debounce.forget_old(self._taken, now=now, interval=self._interval)
            self._taken.update(dict.fromkeys(scope.tags, now))
            return scope

    def _interrupt(self) -> None:
        # Stop uses the same Event to end a wait early; not counted as a nudge.
        self._wake.set()


class Worker:
    """Runs a full pass at start and ``interval`` seconds after each full one, and a pass
    over the nudged scope on every nudge.

    ``tick`` receives a ``stopping`` callable it may poll between steps to abandon a pass
    cleanly during shutdown or once it ran past ``pass_timeout_seconds`` (each step, such as
    one pod deletion, is a single API call, at most ``step_seconds`` long), and the pass's
    scope. Exceptions listed in ``expected_errors`` are logged as one line without a
    traceback.
    """

    def __init__(
        self,
        tick: Callable[[Callable[[], bool], Scope], PassReport | None],
        *,
        nudge: Nudge,
        interval_seconds: float,
        metrics: Metrics,
        clock: Callable[[], float] = time.monotonic,
        expected_errors: tuple[type[Exception], ...] = (),
        name: str = "autoroll-reconcile",
        pass_timeout_seconds: float = 300.0,
        step_seconds: float = 40.0,
    ) -> None:
        if interval_seconds <= 0:
            raise ValueError(f"interval_seconds must be positive, got {interval_seconds!r}")
        if pass_timeout_seconds <= 0:
            raise ValueError(f"pass_timeout_seconds must be positive, got {pass_timeout_seconds!r}")
        self._tick = tick
        self._pass_timeout = pass_timeout_seconds
        self.liveness_bound = liveness_bound(
            interval_seconds=interval_seconds,
            pass_timeout_seconds=pass_timeout_seconds,
            step_seconds=step_seconds,
        )
        self._last_progress = clock()
        self._last_error: str | None = None  # what the latest pass raised, if it raised
        self._deadline: float | None = None
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
        """Stop requested, or the pass ran past its timeout? ``tick`` polls it between steps."""
        if self._stop.is_set():
            return True
        deadline = self._deadline
        return deadline is not None and self._clock() > deadline

    def status(self) -> LoopStatus:
        """The loop's health as data (the probes' source, in whichever process serves them)."""
        return LoopStatus(
            last_progress=self._last_progress,
            liveness_bound=self.liveness_bound,
            last_error=self._last_error,
            running=self._thread.is_alive(),
            stopping=self._stop.is_set(),
        )

    def liveness(self) -> Health:
        """``/livez``: has a pass finished (or the loop started) within the bound?"""
        return self.status().liveness(self._clock())

    def readiness(self) -> Health:
        """``/readyz``: the reconcile thread runs and no stop was requested.

        Not tied to leadership: a follower serves webhooks (and hands them to the leader) and
        probes, so it is ready; nor to the API being reachable, which a pass reports itself.
        """
        return self.status().readiness()

    def start(self) -> None:
        """Start the thread; the first pass runs immediately, not after one interval."""
        self._last_progress = self._clock()
        self._nudge._interrupt()
        self._thread.start()

    def request_stop(self) -> None:
        """Ask the thread to stop, without waiting (two Event sets: each takes its lock).

        The pass in progress sees ``stopping()`` and ends before its next Deployment.
        """
        self._stop.set()
        self._nudge._interrupt()

    def stop(self, timeout: float) -> None:
        """Ask the thread to stop, wait up to ``timeout`` seconds, raise if it is still alive.

        A pass in progress is allowed to finish its current step; it sees ``stopping()``
        and returns early. Raising (rather than returning quietly) makes a stuck shutdown
        visible in the logs of the process that is about to exit anyway.
        """
        self.request_stop()
        if self._thread.ident is None:
            return
        self._thread.join(timeout)
        if self._thread.is_alive():
            raise WorkerStopTimeoutError(
                f"reconcile thread {self._thread.name!r} still running after {timeout:g}s"
            )

    def _run(self) -> None:
        log.info("reconcile worker started", extra={"event": "worker-start"})
        next_full = self._clock()  # the first pass is full, at once
        while not self._stop.is_set():
            woken = self._nudge.wait(max(0.0, next_full - self._clock()))
            if self._stop.is_set():
                break
            # Taken before the pass: nudges during the pass must wake one follow-up pass.
            scope = self._nudge.take() if woken else None
            if self._clock() >= next_full:
                scope = FULL
            if scope is None:
                continue  # woken by an interrupt, no pass wanted
            self._run_once(scope)
            if scope.is_full:
                next_full = self._clock() + self._interval
        log.info("reconcile worker stopped", extra={"event": "worker-stop"})

    def _run_once(self, scope: Scope) -> None:
        with logs.pass_context(uuid.uuid4().hex[:12]):
            started = self._clock()
            self._deadline = started + self._pass_timeout
            outcome = self._attempt(scope)
            self._deadline = None
            elapsed = self._clock() - started
            self._metrics.ticks.labels(outcome=outcome).inc()
            if outcome != SKIPPED:
                self._metrics.tick_duration.observe(elapsed)
            if elapsed > self._pass_timeout:
                log.warning(
                    "reconcile pass ran %.0fs, past its %.0fs timeout; it was told to stop",
                    elapsed,
                    self._pass_timeout,
                )
            log.log(
                logging.DEBUG if outcome == SKIPPED else logging.INFO,
                "pass done: %s in %.3fs (%s)",
                outcome,
                elapsed,
                "full" if scope.is_full else f"targeted: {scope}",
                extra={
                    "event": "pass-done",
                    "outcome": outcome,
                    "duration_seconds": elapsed,
                    "scope": str(scope),
                },
            )
            self._passes += 1
            if outcome != ERROR:
                # A pass that raised is no progress: /livez must see a loop that only fails.
                self._last_progress = self._clock()
                self._last_error = None

    def _attempt(self, scope: Scope) -> str:
        """Run the tick once; its outcome as counted (``ok``, ``skipped`` or ``error``)."""
        try:
            report = self._tick(self.stopping, scope)
            return SKIPPED if report is not None and report.skipped else "ok"
        except self._expected as exc:
            # Known adapter failures (API unreachable, RBAC) carry a clear message already.
            log.error("reconcile pass failed: %s; will retry on the next wake-up", exc)
            self._last_error = f"{type(exc).__name__}: {str(exc)[:200]}"
        except Exception as exc:
            log.exception("reconcile pass failed unexpectedly; will retry on the next wake-up")
            self._last_error = type(exc).__name__
        return ERROR


# Health and LoopStatus (``loop_health``) are what Worker.liveness, readiness and status
# answer: importable from here too, beside the Worker.
__all__ = [
    "ERROR",
    "SKIPPED",
    "Health",
    "LoopStatus",
    "Nudge",
    "PassReport",
    "Worker",
    "WorkerStopTimeoutError",
]
