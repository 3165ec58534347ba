"""Leader election on a ``coordination.k8s.io/v1`` Lease: holding it, and may this replica act.

With several replicas exactly one may reconcile. The replicas agree through one Lease in the
controller's namespace (docs/adr/004-leader-election-and-webhook-handoff.md)::

    Elector thread, every retry period:
        local check: renew deadline passed? ──► step down (stop deleting) first, no I/O
        GET lease ──► decide_lease() (pure) ──► CREATE | ACQUIRE | RENEW | WAIT | STEP_DOWN
                                                  └─ writes carry the resourceVersion read,
                                                     so two contenders cannot both win
    Worker, before every deletion: Elector.may_act()  (leading and within the renew deadline),
                                   Elector.authority_left() (the call must end before any
                                   other replica could lead)

Safety in one line: a contender takes an unreleased lease only after *it* has seen the same
holder record, unchanged, for a full lease duration on its own monotonic clock; the leader
stops acting ``renew deadline`` after the moment it *sent* its last successful renew, which
is earlier than any contender's first sight of that record. The gap (lease duration minus
renew deadline, 5 s by default) absorbs a deletion already in flight. Wall-clock times in the
Lease are written for people and other tools and never compared across machines.

Hand-off: a verified webhook at a follower is published on the Lease, and the leader watches
its Lease for it (``autoroll.controller.handoff``: ``HandOff`` and ``NudgeWatcher``).

The decisions (``decide_lease``, ``has_authority``, ``next_record``, ``released_record``) are
pure and table-tested in ``autoroll.core.election``; ``Elector`` here is a thin thread over a
``LeasePort`` (``autoroll.kube.KubeLease`` in production, a fake in unit tests).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Final

from autoroll.core.election import (
    LeaseDecision,
    Observation,
    Step,
    Timings,
    authority_left,
    decide_lease,
    default_identity,
    has_authority,
    next_record,
    observe,
    released_record,
)
from autoroll.core.ports import LeaseConflictError, LeasePort
from autoroll.core.records import LeaseRecord
from autoroll.instruments.metrics import Metrics

log = logging.getLogger(__name__)

#: Attempts per cycle when a write meets a newer resourceVersion (a nudge patch, usually).
WRITE_ATTEMPTS: Final = 3


def _wall() -> datetime:
    return datetime.now(UTC)


class Elector:
    """Runs the election loop in a thread and answers ``may_act()`` for the worker.

    ``on_elected`` runs in the elector thread right after this replica becomes leader (the
    server nudges the worker, so the new leader ticks at once rather than one poll later).
    """

    def __init__(
        self,
        port: LeasePort,
        *,
        identity: str,
        timings: Timings,
        metrics: Metrics,
        on_elected: Callable[[], None] = lambda: None,
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], datetime] = _wall,
    ) -> None:
        self._port = port
        self.identity = identity
        self._timings = timings
        self._metrics = metrics
        self._on_elected = on_elected
        self._clock = clock
        self._wall = wall
        self._lock = threading.Lock()
        self._leading = False
        self._terms = 0
        self._renewed_at: float | None = None
        self._observed: Observation | None = None
        self._last_record: LeaseRecord | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="autoroll-elector", daemon=True)
        self._api_failing = False
        self._pause = timings.retry_period

    # -- what the rest of the process asks ------------------------------------------------

    def may_act(self) -> bool:
        """Leader, and still inside the renew deadline: checked before every deletion."""
        with self._lock:
            return self._leading and has_authority(
                renewed_at=self._renewed_at,
                now=self._clock(),
                renew_deadline=self._timings.renew_deadline,
            )

    def authority_left(self) -> float:
        """Seconds a deletion started now may take before another replica could lead
        (0 when this one may not act): the executor caps the call to it."""
        with self._lock:
            if not self._leading:
                return 0.0
            return authority_left(
                renewed_at=self._renewed_at,
                now=self._clock(),
                renew_deadline=self._timings.renew_deadline,
                lease_duration=self._timings.lease_duration,
            )

    @property
    def term(self) -> int:
        """How many times this replica has become leader: a new value is a new term, whose
        first pass must not trust anything remembered from the last (ARCHITECTURE.md, 13)."""
        with self._lock:
            return self._terms

    @property
    def leading(self) -> bool:
        return self.may_act()

    @property
    def last_record(self) -> LeaseRecord | None:
        """The Lease as this replica last read or wrote it (the watcher starts from it)."""
        with self._lock:
            return self._last_record

    # -- lifecycle ------------------------------------------------------------------------

    def start(self) -> None:
        self._metrics.leader.set(0)
        self._thread.start()

    def request_stop(self) -> None:
        """Stop campaigning after the current cycle, without waiting."""
        self._stop.set()

    def stop(self, timeout: float, *, release: bool) -> None:
        """Stop campaigning; with ``release``, hand the lease back if we hold it.

        Release only after the worker has stopped (the caller's duty). Authority is revoked
        here whatever happens; the lease is released only if the elector thread has ended,
        so no renewal of ours can land after the release.
        """
        self._stop.set()
        if self._thread.ident is not None:
            self._thread.join(timeout)
        was_leading = self._revoke("shutting down")
        if self._thread.is_alive():
            raise RuntimeError(
                f"elector thread still running after {timeout:g}s; the lease was not released"
                " and expires on its own"
            )
        if release and was_leading:
            self._release()

    def _run(self) -> None:
        log.info(
            "leader election started as %r (lease %gs, renew deadline %gs, retry %gs)",
            self.identity,
            self._timings.lease_duration,
            self._timings.renew_deadline,
            self._timings.retry_period,
            extra={"event": "election-start", "identity": self.identity},
        )
        while not self._stop.is_set():
            self.cycle()
            self._stop.wait(self._pause)

    # -- one cycle ------------------------------------------------------------------------

    def cycle(self) -> Step | None:
        """One election round; returns the step taken (None when the API failed)."""
        started = self._clock()
        self._pause = self._timings.retry_period  # shortened below only while waiting
        if not self.may_act() and self._leading:
            # The deadline passed without a renew: stop acting before touching the API.
            self._revoke("could not renew the lease within the renew deadline")
        for _ in range(WRITE_ATTEMPTS):
            try:
                lease = self._port.get()
            except Exception as exc:
                self._api_trouble("read the lease", exc)
                return None
            decision = decide_lease(
                lease=lease,
                observed=self._observed,
                identity=self.identity,
                now=started,
                leading=self._leading,
                lease_duration=self._timings.lease_duration,
            )
            self._observed = decision.observation
            # Waiting for a lease to expire: look again right when it may, not up to a
            # retry period later (failover then takes the lease duration, not more).
            self._pause = min(
                self._timings.retry_period,
                max(0.05, decision.expires_in or self._timings.retry_period),
            )
            with self._lock:
                self._last_record = lease
            try:
                self._apply(decision, lease, started)
            except LeaseConflictError:
                continue  # somebody wrote in between (often a nudge): read again
            except Exception as exc:
                self._api_trouble(f"{decision.step} the lease", exc)
                return None
            self._api_ok()
            return decision.step
        log.warning("lease kept changing under us; trying again next cycle")
        return None

    def _apply(self, decision: LeaseDecision, lease: LeaseRecord | None, started: float) -> None:
        step = decision.step
        if step is Step.WAIT:
            log.debug("not leader: %s", decision.reason)
            return
        if step is Step.STEP_DOWN:
            self._revoke(decision.reason)
            return
        record = next_record(
            step,
            lease,
            identity=self.identity,
            now=self._wall(),
            duration=self._timings.lease_duration,
        )
        written = self._port.create(record) if step is Step.CREATE else self._port.update(record)
        with self._lock:
            if self._stop.is_set():
                return  # shutting down: never (re)gain authority after stop() revoked it
            became = not self._leading
            if became:
                self._terms += 1
            self._leading = True
            self._renewed_at = started
            self._last_record = written
        self._observed = observe(written, None, started)
        if became:
            self._metrics.leader.set(1)
            self._metrics.leadership_changes.labels(change="acquired").inc()
            log.info(
                "became leader (%s): this replica reconciles now",
                decision.reason,
                extra={"event": "leader-acquired", "identity": self.identity},
            )
            self._on_elected()

    def _revoke(self, why: str) -> bool:
        with self._lock:
            was = self._leading
            self._leading = False
            self._renewed_at = None
        if was:
            self._metrics.leader.set(0)
            self._metrics.leadership_changes.labels(change="lost").inc()
            log.warning(
                "no longer leader: %s; deletions stop now",
                why,
                extra={"event": "leader-lost", "identity": self.identity},
            )
        return was

    def _release(self) -> None:
        try:
            lease = self._port.get()
            if lease is None or lease.holder != self.identity:
                return
            self._port.update(released_record(lease, now=self._wall()))
        except Exception as exc:
            log.warning("could not release the lease (%s); it expires on its own", exc)
            return
        self._metrics.leadership_changes.labels(change="released").inc()
        log.info("released the lease: another replica can lead at once")

    def _api_trouble(self, what: str, exc: Exception) -> None:
        self._metrics.lease_errors.inc()
        # One warning when trouble starts, then debug: no storm while the API is down.
        level = logging.DEBUG if self._api_failing else logging.WARNING
        self._api_failing = True
        log.log(level, "could not %s: %s", what, exc, extra={"event": "lease-error"})

    def _api_ok(self) -> None:
        if self._api_failing:
            log.info("lease API reachable again")
        self._api_failing = False


__all__ = [
    "WRITE_ATTEMPTS",
    "Elector",
    "LeaseConflictError",
    "LeasePort",
    "LeaseRecord",
    "Step",
    "Timings",
    "default_identity",
]
