"""The webhook hand-off between replicas: a follower publishes on the Lease, the leader watches.

Every replica verifies webhook signatures itself (``autoroll.edge.web``); with leader
election only the leader reconciles. ``HandOff`` is where a verified webhook goes: to the
local worker while this replica leads, else published by patching the Lease's
``autoroll.aethnet.se/nudge`` annotation. The leader's ``NudgeWatcher`` watches its Lease and
nudges its own worker when that value changes. Both ends coalesce, so a burst of webhooks
costs at most one follow-up pass (docs/adr/004-leader-election-and-webhook-handoff.md).
Holding the Lease is the ``Elector``'s (``autoroll.controller.leader``); both classes here
ask it whether this replica leads.
"""

from __future__ import annotations

import itertools
import logging
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Final

from autoroll.controller.leader import Elector
from autoroll.core.ports import LeasePort
from autoroll.core.scope import FULL, Scope
from autoroll.instruments.metrics import Metrics

#: The hand-off's lines keep the logger name they always had: log queries select on it.
log = logging.getLogger("autoroll.controller.leader")

#: Least seconds between two nudge publications by one follower: a burst of webhooks must
#: not starve the leader's renewals with conflicting writes.
PUBLISH_INTERVAL_SECONDS: Final = 0.5


def _wall() -> datetime:
    return datetime.now(UTC)


class _HandOffEnd(ABC):
    """What both hand-off ends share: the Lease, the elector, the metrics and one thread,
    started once; ``stop`` asks it to end (``request_stop``, each end's own) and raises if it
    has not within ``timeout``."""

    def __init__(
        self, port: LeasePort, elector: Elector, metrics: Metrics, *, thread: str, what: str
    ) -> None:
        self._port = port
        self._elector = elector
        self._metrics = metrics
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=thread, daemon=True)
        self._what = what  # names the thread in the error

    @abstractmethod
    def _run(self) -> None:
        """The thread's body, until ``_stop`` is set."""

    def start(self) -> None:
        self._thread.start()

    @abstractmethod
    def request_stop(self) -> None:
        """Tell the thread to end, without waiting for it."""

    def stop(self, timeout: float) -> None:
        self.request_stop()
        if self._thread.ident is None:
            return
        self._thread.join(timeout)
        if self._thread.is_alive():
            raise RuntimeError(f"{self._what} still running after {timeout:g}s")


class NudgeWatcher(_HandOffEnd):
    """The leader's inbox: watches its Lease and nudges the worker when the nudge changes.

    Runs for the life of the process but only watches while ``elector.leading``. A fresh
    watch starts from the Lease the elector last saw, so a nudge published between that read
    and the watch is still delivered as an event.
    """

    def __init__(
        self,
        port: LeasePort,
        *,
        elector: Elector,
        on_nudge: Callable[[], None],
        metrics: Metrics,
        watch_timeout_seconds: int = 60,
        idle_seconds: float = 0.2,
    ) -> None:
        super().__init__(port, elector, metrics, thread="autoroll-nudges", what="nudge watcher")
        self._on_nudge = on_nudge
        self._timeout = watch_timeout_seconds
        self._idle = idle_seconds

    def request_stop(self) -> None:
        """End the watch now (it is aborted), without waiting for the thread."""
        self._stop.set()
        self._port.abort_watch()

    def _deliver(self) -> None:
        self._metrics.handoffs.labels(outcome="received").inc()
        log.info("webhook handed over by another replica: reconciling")
        self._on_nudge()

    def _run(self) -> None:
        seen: str | None = None
        while not self._stop.is_set():
            start = self._elector.last_record
            if not self._elector.leading or start is None:
                seen = None
                self._stop.wait(self._idle)
                continue
            if seen is None:
                # Nudges before we led were for the previous leader; being elected nudges
                # the worker anyway (Elector's on_elected).
                seen = start.nudge
            elif start.nudge and start.nudge != seen:
                # Published between two watches: the new watch starts after it, so deliver it.
                seen = start.nudge
                self._deliver()
            try:
                for record in self._port.watch(start.resource_version, self._timeout):
                    if self._stop.is_set() or not self._elector.leading:
                        break
                    if record.nudge and record.nudge != seen:
                        seen = record.nudge
                        self._deliver()
            except Exception as exc:
                if not self._stop.is_set():
                    log.warning("watching the lease for nudges failed: %s; retrying", exc)
                    self._stop.wait(1.0)


class HandOff(_HandOffEnd):
    """Where a verified webhook goes when replicas elect a leader.

    ``nudge(scope)`` is what the webhook handler calls: it only records the scope and sets
    an event. A thread then nudges the local worker with that scope if this replica leads,
    or publishes the nudge on the Lease for the leader, whose pass is then a full one (the
    Lease carries that a webhook came, not what it named). Requests arriving while one is
    being delivered fold into one more delivery, their scopes merged. ``nudge_in(scope,
    seconds)`` is the same delivery that many seconds from now (a registry that notifies
    before it has written the tag: docs/adr/025); a sooner request takes it along.
    """

    def __init__(
        self,
        port: LeasePort,
        *,
        elector: Elector,
        local: Callable[[Scope], None],
        metrics: Metrics,
        wall: Callable[[], datetime] = _wall,
        min_interval_seconds: float = PUBLISH_INTERVAL_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__(port, elector, metrics, thread="autoroll-handoff", what="hand-off thread")
        self._local = local
        self._wall = wall
        self._min_interval = min_interval_seconds
        self._clock = clock
        self._wake = threading.Event()
        self._lock = threading.Lock()
        self._scope: Scope | None = None
        self._due = 0.0  # when the pending scope is to be delivered (clock seconds)
        self._serial = itertools.count(1)

    def nudge(self, scope: Scope = FULL) -> None:
        """Request a reconcile of ``scope`` by whichever replica leads; never blocks."""
        self.nudge_in(scope, 0.0)

    def nudge_in(self, scope: Scope, seconds: float) -> None:
        """``nudge(scope)``, delivered ``seconds`` from now (or sooner, with a sooner one)."""
        with self._lock:
            at = self._clock() + max(0.0, seconds)
            self._due = at if self._scope is None else min(self._due, at)
            self._scope = scope if self._scope is None else self._scope.merge(scope)
        self._wake.set()

    def request_stop(self) -> None:
        """Deliver nothing more, without waiting for the thread."""
        self._stop.set()
        self._wake.set()

    def _run(self) -> None:
        while not self._stop.is_set():
            self._wake.wait()
            if self._stop.is_set():
                break
            self._wake.clear()  # before delivering: a webhook meanwhile means one more
            with self._lock:
                wait = self._due - self._clock() if self._scope is not None else 0.0
            if wait > 0:
                # Not due yet (nudge_in): wait for it, or for a sooner request or a stop.
                if not self._wake.wait(wait):
                    self._wake.set()
                continue
            with self._lock:
                scope, self._scope = self._scope or FULL, None
            self._deliver(scope)
            self._stop.wait(self._min_interval)

    def _deliver(self, scope: Scope) -> None:
        if self._elector.leading:
            self._metrics.handoffs.labels(outcome="local").inc()
            self._local(scope)
            return
        stamp = self._wall().strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        value = f"{stamp} {self._elector.identity} {next(self._serial)}"
        try:
            self._port.publish_nudge(value)
        except Exception as exc:
            # The leader's poll timer still finds the change; say why the webhook was slow.
            self._metrics.handoffs.labels(outcome="error").inc()
            log.warning("could not hand the webhook to the leader: %s", exc)
            return
        self._metrics.handoffs.labels(outcome="published").inc()
        log.info("webhook handed to the leader through the lease", extra={"event": "handoff"})


__all__ = ["PUBLISH_INTERVAL_SECONDS", "HandOff", "NudgeWatcher"]
