"""The controller as one object: what it holds, what the HTTP edge asks of it, its start
and stop.

``Controller`` holds the metrics registry, the nudge, the reconciler and its one reconcile
thread, the watched cache and, with ``LEADER_ELECTION``, the elector, the nudge watcher and
the webhook hand-off (``Election``); ``autoroll.edge.wiring.build_controller`` builds it from
a ``Config``. The HTTP edge sees it only through the ``ControllerLink`` calls it answers:
``deliver`` a verified webhook's scope, ``status`` of the loop for the probes,
``exposition`` of the metrics, and the start and stop.

Shutdown order (docs/adr/002): ``begin_stop`` tells the reconcile thread, the cache and the
notifier at once; ``stop`` joins the reconcile thread within ``RECONCILE_STOP_SECONDS`` of
that, then every other thread against one deadline ``THREADS_STOP_SECONDS`` away (the
elector last), and releases the Lease only if the reconcile thread stopped in time.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from prometheus_client import generate_latest

from autoroll.controller.handoff import HandOff, NudgeWatcher
from autoroll.controller.leader import Elector
from autoroll.controller.loop_health import Health, LoopStatus
from autoroll.controller.notifier import Notifier
from autoroll.controller.reconciler import Reconciler
from autoroll.controller.worker import Nudge, Worker
from autoroll.core.scope import Scope
from autoroll.edge.pinning_service import PinningService
from autoroll.instruments.metrics import Metrics
from autoroll.kube import WatchCache

#: The controller's lines keep the logger name they always had: log queries select on it.
log = logging.getLogger("autoroll.edge.wiring")

#: Seconds the reconcile thread gets after SIGTERM (counted from the signal: the pass is
#: told to stop while gunicorn still drains requests).
RECONCILE_STOP_SECONDS: Final = 10.0
#: Seconds every other thread gets to stop, together, once the reconcile thread has: the
#: three election threads, the watched cache's (they wait on a socket, aborted at once), the
#: notifier's (a send in flight is abandoned: a daemon) and the pinning webhook's. One
#: deadline, not one each, so the sum in ``runtime.ShutdownBudget`` stays a bound however
#: many are on.
THREADS_STOP_SECONDS: Final = 3.0


@dataclass(frozen=True, slots=True)
class Election:
    """The leader-election threads of one replica (``LEADER_ELECTION=true`` only)."""

    elector: Elector
    watcher: NudgeWatcher
    handoff: HandOff


class Controller:
    """Everything that reconciles (module docstring); one per pod."""

    def __init__(
        self,
        *,
        metrics: Metrics,
        nudge: Nudge,
        reconciler: Reconciler,
        worker: Worker,
        deliver: Callable[[Scope], None],
        deliver_later: Callable[[Scope, float], None],
        election: Election | None = None,
        cache: WatchCache | None = None,
        notifier: Notifier | None = None,
        pinning: PinningService | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.metrics = metrics
        self.notifier = notifier
        self.pinning = pinning
        self.nudge = nudge
        self.reconciler = reconciler
        self.worker = worker
        self.election = election
        self.cache = cache
        self._deliver = deliver
        self._deliver_later = deliver_later
        self._clock = clock
        self._stop_requested_at: float | None = None

    # -- what the HTTP edge asks ------------------------------------------------------------

    def deliver(self, scope: Scope) -> None:
        """A verified webhook's nudge: debounced per tag, or handed to the leader."""
        self._deliver(scope)

    def deliver_later(self, scope: Scope, seconds: float) -> None:
        """A verified delivery to look at ``seconds`` from now (the receivers' re-checks)."""
        self._deliver_later(scope, seconds)

    def status(self) -> LoopStatus:
        return self.worker.status()

    def liveness(self) -> Health:
        return self.worker.liveness()

    def readiness(self) -> Health:
        return self.worker.readiness()

    def exposition(self) -> bytes:
        """Every metric, as ``/metrics`` serves it."""
        return generate_latest(self.metrics.registry)

    # -- lifecycle --------------------------------------------------------------------------

    def start(self) -> None:
        """Start the watched cache and campaigning (if on), then the reconcile thread."""
        if self.cache is not None:
            self.cache.start()
        if self.election is not None:
            self.election.elector.start()
            self.election.watcher.start()
            self.election.handoff.start()
        if self.notifier is not None:
            self.notifier.start()
        if self.pinning is not None:
            self.pinning.start()
        self.worker.start()

    def begin_stop(self) -> None:
        """SIGTERM arrived: tell the reconcile thread to stop now, without waiting, so the
        pass winds down while requests drain, not after. Once; later calls return at once.

        It takes the locks of the threads it tells, so it is no signal handler's work where
        the main thread may hold one (the reconcile process only sets a flag there:
        ``reconcile_main``). gunicorn's worker calls it from its handler only in the
        one-process runtime, whose main thread never takes them.
        """
        if self._stop_requested_at is not None:
            return
        self._stop_requested_at = self._clock()
        self.worker.request_stop()
        if self.cache is not None:
            self.cache.request_stop()
        if self.notifier is not None:
            self.notifier.request_stop()

    def stop(self, timeout: float = RECONCILE_STOP_SECONDS) -> None:
        """Stop the reconcile thread, then the others; hand the lease back only if that first
        stop was clean.

        The reconcile thread gets ``timeout`` seconds from ``begin_stop`` (or from now); the
        others then share ``THREADS_STOP_SECONDS``. Raises ``WorkerStopTimeoutError`` after
        releasing nothing when a pass is stuck: the lease then simply expires, and the stuck
        pass cannot delete past the renew deadline.
        """
        self.begin_stop()
        assert self._stop_requested_at is not None
        left = timeout - (self._clock() - self._stop_requested_at)
        stopped = False
        try:
            self.worker.stop(timeout=max(0.1, left))
            stopped = True
        finally:
            self._stop_the_rest(release=stopped)

    def _stop_the_rest(self, *, release: bool) -> None:
        # All are told first, then joined against one deadline: one stuck must not keep the
        # others (or the release) from running, and the process exits anyway. The elector is
        # last, so the others' time never comes out of the Lease release's own bound.
        steps: list[tuple[str, Callable[[float], None]]] = []
        if self.election is not None:
            election = self.election
            election.handoff.request_stop()
            election.watcher.request_stop()
            election.elector.request_stop()
            steps += [("hand-off", election.handoff.stop), ("nudge watcher", election.watcher.stop)]
        if self.cache is not None:
            steps.append(("watched cache", self.cache.stop))
        if self.notifier is not None:
            steps.append(("notifier", self.notifier.stop))
        if self.pinning is not None:
            steps.append(("pinning webhook", self.pinning.stop))
        if self.election is not None:
            elector = self.election.elector
            steps.append(("elector", lambda left: elector.stop(left, release=release)))
        deadline = self._clock() + THREADS_STOP_SECONDS
        for name, stop in steps:
            try:
                stop(max(0.05, deadline - self._clock()))
            except Exception as exc:  # daemon threads: say so, and go on to the next
                log.error("stopping the %s: %s", name, exc)


__all__ = [
    "RECONCILE_STOP_SECONDS",
    "THREADS_STOP_SECONDS",
    "Controller",
    "Election",
]
