"""The reconcile process's SIGTERM: the handler takes no lock, the main loop stops it.

A Python signal handler runs in the main thread between two bytecodes. In the reconcile
process that thread answers the worker's messages, holding the controller's locks while it
does (a scrape's exposition, a delivery's nudge), and the worker sends SIGTERM twice. A
handler that stopped the controller itself once waited for its own lock for ever: the
e2e HA test saw the process killed at the worker's bound, the Lease left to expire.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from multiprocessing.connection import Pipe

import pytest

from autoroll.controller.loop_health import LoopStatus
from autoroll.edge.link import MetricsText, MetricsWanted
from autoroll.edge.reconcile_main import run

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="the owner lock is Linux-only"
)


class LockedController:
    """Answers a scrape while holding its lock, and is sent SIGTERM twice meanwhile.

    ``begin_stop`` takes the same lock, with a timeout instead of for ever, so a handler that
    called it would be seen here as a refusal rather than as a hung test.
    """

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.refused: list[str] = []
        self.stopped: list[float] = []
        self.began = 0

    def start(self) -> None:
        pass

    def status(self) -> LoopStatus:
        return LoopStatus(last_progress=time.monotonic(), liveness_bound=60.0)

    def exposition(self) -> bytes:
        with self.lock:
            os.kill(os.getpid(), signal.SIGTERM)  # the worker's handler
            os.kill(os.getpid(), signal.SIGTERM)  # the worker's wait
            time.sleep(0.05)  # bytecodes run here: so would a handler
            return b"autoroll_ticks_total 1\n"

    def begin_stop(self) -> None:
        self.began += 1
        if not self.lock.acquire(timeout=1.0):
            self.refused.append("begin_stop waited for a lock its own thread held")
            return
        self.lock.release()

    def stop(self, timeout: float) -> None:
        self.begin_stop()
        self.stopped.append(timeout)

    def deliver(self, scope: object) -> None:  # pragma: no cover - not sent here
        raise AssertionError("no delivery in this test")

    deliver_later = deliver


def test_sigterm_during_a_scrape_stops_the_controller_from_the_main_loop_not_the_handler() -> None:
    ours, theirs = Pipe(duplex=True)
    controller = LockedController()
    ours.send(MetricsWanted(1))
    before = signal.getsignal(signal.SIGTERM)

    owner = f"test-{time.monotonic_ns()}"
    code = run(theirs, owner, lambda: controller)  # type: ignore[arg-type,return-value]

    assert code == 0
    assert controller.refused == []
    assert len(controller.stopped) == 1  # stopped once, by the loop, after the two signals
    answer = ours.recv()
    while not isinstance(answer, MetricsText):  # status lines come first or between
        answer = ours.recv()
    assert answer == MetricsText(1, b"autoroll_ticks_total 1\n")  # the scrape was answered
    assert signal.getsignal(signal.SIGTERM) == before  # the test process's handler is back
    ours.close()
