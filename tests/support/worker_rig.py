"""The reconcile worker's rig: a tick the test holds open and releases, and the ``metrics``,
``tick``, ``nudge`` and ``worker`` fixtures (``tests/unit/worker/conftest.py`` imports them).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator

import pytest
from prometheus_client import CollectorRegistry

from autoroll.controller.worker import Nudge, Worker
from autoroll.core.scope import Scope
from autoroll.instruments.metrics import Metrics
from tests.support.wait import wait_until

LONG = 3600.0  # a poll interval that never fires during a test


class GatedTick:
    """A tick that records every pass and can be held open until the test releases it."""

    def __init__(self) -> None:
        self.started = threading.Semaphore(0)
        self.gate = threading.Event()
        self.gate.set()
        self.calls = 0
        self.running = 0
        self.max_running = 0
        self._lock = threading.Lock()
        self.fail_next = False
        self.scopes: list[Scope] = []

    def __call__(self, stopping: Callable[[], bool], scope: Scope) -> None:
        with self._lock:
            self.calls += 1
            self.scopes.append(scope)
            self.running += 1
            self.max_running = max(self.max_running, self.running)
            fail, self.fail_next = self.fail_next, False
        self.started.release()
        try:
            self.gate.wait(10)
            if fail:
                raise RuntimeError("boom")
        finally:
            with self._lock:
                self.running -= 1


@pytest.fixture
def metrics() -> Metrics:
    return Metrics(CollectorRegistry())


@pytest.fixture
def tick() -> GatedTick:
    return GatedTick()


@pytest.fixture
def nudge(metrics: Metrics) -> Nudge:
    return Nudge(metrics)


@pytest.fixture
def worker(tick: GatedTick, nudge: Nudge, metrics: Metrics) -> Iterator[Worker]:
    w = Worker(tick, nudge=nudge, interval_seconds=LONG, metrics=metrics)
    yield w
    tick.gate.set()
    w.stop(timeout=5)


def settle(worker: Worker, passes: int) -> None:
    """Wait for ``passes`` passes, then give a wrongly queued extra pass time to show up."""
    wait_until(lambda: worker.passes >= passes)
    time.sleep(0.2)
