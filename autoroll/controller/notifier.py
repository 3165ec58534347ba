"""The notifier: sends happenings (``autoroll.core.happenings``) to people, off the pass.

Lifecycle (explicit, as the worker's)::

    Announcer ──► post(happening) ──► waiting[kind], wake Event ──┐
    a throttled kind comes due ───────────────────────────────────┼──► notifier thread: send
    request_stop() / stop(timeout) ──► stop Event ────────────────┘    what is due, repeat

``post`` never blocks and never raises: a pass must not wait on a chat service. Sending
(``NotifyPort.send``, which may take seconds per URL) happens on the notifier's own thread,
throttled per kind (``autoroll.core.throttle``): what comes within the interval goes as one
message at its end. At most ``MAX_WAITING`` happenings wait in all; more are dropped and
counted (``autoroll_notifications_total{outcome="dropped"}``). On shutdown what waits is
not sent (the thread is told to stop and joined briefly); the Events stay in the cluster.

The URLs are a secret: autoroll's own lines about a send name the happening, never where it
went; what the libraries under Apprise log is the adapter's to keep quiet
(``autoroll.notify``).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Final

from autoroll.core.happenings import Happening, HappeningKind
from autoroll.core.ports import NotifyPort
from autoroll.core.throttle import due
from autoroll.instruments.metrics import Metrics

log = logging.getLogger(__name__)

#: Happenings waiting to be sent, at most (a 500-workload roll's ``done`` fits).
MAX_WAITING: Final = 1000
#: Happenings listed in one message; the rest are counted in its last line.
MAX_LISTED: Final = 20
#: The longest the thread sleeps without a reason (a missed wake is never fatal).
_IDLE_SECONDS: Final = 30.0


class Notifier:
    """Throttled, non-blocking notifications on a thread of their own."""

    def __init__(
        self,
        port: NotifyPort,
        *,
        metrics: Metrics,
        happenings: frozenset[HappeningKind] = frozenset(HappeningKind),
        throttle_seconds: float = 60.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._port = port
        self._metrics = metrics
        self._wanted = happenings
        self._interval = throttle_seconds
        self._clock = clock
        self._lock = threading.Lock()
        self._waiting: dict[HappeningKind, list[Happening]] = {}
        self._last_sent: dict[HappeningKind, float] = {}
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def post(self, happening: Happening) -> None:
        """Queue ``happening`` to be sent (if its kind is wanted); never blocks."""
        if happening.kind not in self._wanted:
            return
        with self._lock:
            if sum(len(v) for v in self._waiting.values()) >= MAX_WAITING:
                self._metrics.notifications.labels(
                    happening=happening.kind.value, outcome="dropped"
                ).inc()
                return
            self._waiting.setdefault(happening.kind, []).append(happening)
        self._wake.set()

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="autoroll-notifier", daemon=True)
        self._thread.start()

    def request_stop(self) -> None:
        self._stop.set()
        self._wake.set()

    def stop(self, timeout: float) -> None:
        """Stop the thread; a send in flight may outlive ``timeout`` (it is a daemon)."""
        self.request_stop()
        if self._thread is not None:
            self._thread.join(timeout)

    def send_due(self) -> float | None:
        """Send every kind that is due now; when the next waiting one is (None: none)."""
        with self._lock:
            counts = {k: len(v) for k, v in self._waiting.items()}
            ready, next_at = due(
                counts, self._last_sent, now=self._clock(), interval=self._interval
            )
            batches = [(kind, self._waiting.pop(kind)) for kind in sorted(ready)]
            for kind, _ in batches:
                self._last_sent[kind] = self._clock()
        for kind, batch in batches:
            self._send(kind, batch)
        return next_at

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                next_at = self.send_due()
            except Exception:  # one failure is logged and survived
                log.exception("sending notifications raised")
                next_at = None
            wait = _IDLE_SECONDS if next_at is None else max(0.0, next_at - self._clock())
            self._wake.wait(min(wait, _IDLE_SECONDS))
            self._wake.clear()

    def _send(self, kind: HappeningKind, batch: list[Happening]) -> None:
        title, body = message(kind, batch)
        sent = self._port.send(title=title, body=body, warning=kind.is_warning)
        outcome = "sent" if sent else "failed"
        self._metrics.notifications.labels(happening=kind.value, outcome=outcome).inc(len(batch))
        level = logging.INFO if sent else logging.WARNING
        # The URLs are a secret: the line names the happening, never where it went.
        log.log(
            level,
            "notification %s: %s (%d happening(s))",
            outcome,
            title,
            len(batch),
            extra={"event": "notification", "happening": kind.value, "outcome": outcome},
        )


def message(kind: HappeningKind, batch: list[Happening]) -> tuple[str, str]:
    """One message for a batch of one kind: its title, and a line per happening."""
    if len(batch) == 1:
        return batch[0].title, batch[0].message
    title = f"autoroll: {len(batch)} rolls {kind.value}"
    lines = [f"{h.workload.key}: {h.message}" for h in batch[:MAX_LISTED]]
    if len(batch) > MAX_LISTED:
        lines.append(f"… and {len(batch) - MAX_LISTED} more")
    return title, "\n".join(lines)


__all__ = ["MAX_WAITING", "Notifier", "message"]
