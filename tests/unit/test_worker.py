"""The reconcile worker: no overlap, nudges coalesce, failures survive, stop is explicit."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator

import pytest
from prometheus_client import CollectorRegistry

from autoroll.metrics import Metrics
from autoroll.worker import Nudge, Worker, WorkerStopTimeoutError

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

    def __call__(self, stopping: Callable[[], bool]) -> None:
        with self._lock:
            self.calls += 1
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


def wait_until(predicate: Callable[[], bool], timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached in time")
        time.sleep(0.005)


def settle(worker: Worker, passes: int) -> None:
    """Wait for ``passes`` passes, then give a wrongly queued extra pass time to show up."""
    wait_until(lambda: worker.passes >= passes)
    time.sleep(0.2)


def test_first_pass_runs_at_start_not_after_one_interval(worker: Worker, tick: GatedTick) -> None:
    worker.start()
    assert tick.started.acquire(timeout=5)
    settle(worker, 1)
    assert tick.calls == 1


def test_100_concurrent_nudges_during_a_pass_cause_exactly_one_follow_up(
    worker: Worker, tick: GatedTick, nudge: Nudge, metrics: Metrics
) -> None:
    tick.gate.clear()
    worker.start()
    assert tick.started.acquire(timeout=5)  # pass 1 is running and held open

    barrier = threading.Barrier(100)

    def fire() -> None:
        barrier.wait()
        nudge.nudge()

    threads = [threading.Thread(target=fire) for _ in range(100)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    tick.gate.set()

    settle(worker, 2)
    assert tick.calls == 2  # the held pass plus ONE follow-up, not 100
    assert tick.max_running == 1
    assert metrics.registry.get_sample_value("autoroll_nudges_total") == 100
    assert metrics.registry.get_sample_value("autoroll_nudges_coalesced_total") == 99


def test_nudges_during_a_pass_are_not_lost(worker: Worker, tick: GatedTick, nudge: Nudge) -> None:
    tick.gate.clear()
    worker.start()
    assert tick.started.acquire(timeout=5)
    nudge.nudge()
    tick.gate.set()
    settle(worker, 2)
    assert tick.calls == 2


def test_a_nudge_when_idle_runs_one_pass(worker: Worker, tick: GatedTick, nudge: Nudge) -> None:
    worker.start()
    settle(worker, 1)
    nudge.nudge()
    settle(worker, 2)
    assert tick.calls == 2


def test_passes_never_overlap_under_a_nudge_storm(
    worker: Worker, tick: GatedTick, nudge: Nudge
) -> None:
    worker.start()
    stop_at = time.monotonic() + 0.5
    while time.monotonic() < stop_at:
        nudge.nudge()
    tick.gate.set()
    assert tick.max_running == 1


def test_the_poll_interval_alone_drives_passes(
    tick: GatedTick, nudge: Nudge, metrics: Metrics
) -> None:
    w = Worker(tick, nudge=nudge, interval_seconds=0.05, metrics=metrics)
    w.start()
    try:
        wait_until(lambda: tick.calls >= 3)
    finally:
        w.stop(timeout=5)


def test_a_failing_pass_is_counted_and_survived(
    worker: Worker,
    tick: GatedTick,
    nudge: Nudge,
    metrics: Metrics,
    caplog: pytest.LogCaptureFixture,
) -> None:
    tick.fail_next = True
    worker.start()
    settle(worker, 1)
    assert "reconcile pass failed" in caplog.text
    nudge.nudge()
    settle(worker, 2)
    assert worker.alive
    assert metrics.registry.get_sample_value("autoroll_ticks_total", {"outcome": "error"}) == 1
    assert metrics.registry.get_sample_value("autoroll_ticks_total", {"outcome": "ok"}) == 1
    assert metrics.registry.get_sample_value("autoroll_tick_duration_seconds_count") == 2


def test_expected_errors_log_one_line_without_traceback(
    nudge: Nudge, metrics: Metrics, caplog: pytest.LogCaptureFixture
) -> None:
    def tick(stopping: Callable[[], bool]) -> None:
        raise ConnectionError("API at https://127.0.0.1:1 refused the connection")

    w = Worker(
        tick,
        nudge=nudge,
        interval_seconds=LONG,
        metrics=metrics,
        expected_errors=(ConnectionError,),
    )
    w.start()
    try:
        settle(w, 1)
    finally:
        w.stop(timeout=5)
    [record] = [r for r in caplog.records if "reconcile pass failed" in r.getMessage()]
    assert "refused the connection" in record.getMessage()
    assert record.exc_info is None


def test_stop_wakes_an_idle_worker_promptly(worker: Worker) -> None:
    worker.start()
    settle(worker, 1)
    started = time.monotonic()
    worker.stop(timeout=5)
    assert not worker.alive
    assert time.monotonic() - started < 1.0


def test_stop_lets_the_pass_see_stopping(nudge: Nudge, metrics: Metrics) -> None:
    seen: list[bool] = []
    entered = threading.Event()

    def tick(stopping: Callable[[], bool]) -> None:
        entered.set()
        wait_until(stopping)
        seen.append(stopping())

    w = Worker(tick, nudge=nudge, interval_seconds=LONG, metrics=metrics)
    w.start()
    assert entered.wait(5)
    w.stop(timeout=5)
    assert seen == [True]
    assert w.passes == 1  # no pass starts once stop was requested


def test_stop_raises_when_the_thread_does_not_finish(
    tick: GatedTick, nudge: Nudge, metrics: Metrics
) -> None:
    tick.gate.clear()
    w = Worker(tick, nudge=nudge, interval_seconds=LONG, metrics=metrics)
    w.start()
    assert tick.started.acquire(timeout=5)
    with pytest.raises(WorkerStopTimeoutError, match="still running"):
        w.stop(timeout=0.1)
    tick.gate.set()
    w.stop(timeout=5)
    assert not w.alive


def test_stop_before_start_is_a_no_op(worker: Worker) -> None:
    worker.stop(timeout=0.1)
    assert not worker.alive


def test_a_non_positive_interval_is_refused(
    tick: GatedTick, nudge: Nudge, metrics: Metrics
) -> None:
    with pytest.raises(ValueError, match="interval_seconds"):
        Worker(tick, nudge=nudge, interval_seconds=0, metrics=metrics)
