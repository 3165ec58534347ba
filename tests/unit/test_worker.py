"""The reconcile worker: no overlap, nudges coalesce, failures survive, stop is explicit."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator

import pytest
import structlog
from prometheus_client import CollectorRegistry

from autoroll.controller.loop_health import liveness, liveness_bound
from autoroll.controller.worker import Nudge, Worker, WorkerStopTimeoutError
from autoroll.core.scope import FULL, ImageTag, Scope
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


APP = Scope.of([ImageTag.named("forgejo.example", "team/app", "latest")])
API = Scope.of([ImageTag.named("forgejo.example", "team/api", "v2")])


def test_the_first_pass_and_the_poll_are_full_and_a_targeted_nudge_runs_its_scope(
    worker: Worker, tick: GatedTick, nudge: Nudge
) -> None:
    worker.start()
    settle(worker, 1)
    nudge.nudge(APP)
    settle(worker, 2)
    assert tick.scopes == [FULL, APP]


def test_targeted_nudges_during_a_pass_merge_into_one_follow_up_for_all_their_tags(
    worker: Worker, tick: GatedTick, nudge: Nudge
) -> None:
    tick.gate.clear()
    worker.start()
    assert tick.started.acquire(timeout=5)
    nudge.nudge(APP)
    nudge.nudge(API)
    nudge.nudge(APP)
    tick.gate.set()
    settle(worker, 2)
    assert tick.scopes == [FULL, APP.merge(API)]


def test_a_full_nudge_absorbs_targeted_ones_pending_with_it(
    worker: Worker, tick: GatedTick, nudge: Nudge
) -> None:
    tick.gate.clear()
    worker.start()
    assert tick.started.acquire(timeout=5)
    nudge.nudge(APP)
    nudge.nudge()
    nudge.nudge(API)
    tick.gate.set()
    settle(worker, 2)
    assert tick.scopes == [FULL, FULL]


def test_a_stream_of_targeted_nudges_never_starves_the_poll(
    tick: GatedTick, nudge: Nudge, metrics: Metrics
) -> None:
    """The poll is its own clock: full passes keep coming while webhooks keep arriving."""
    w = Worker(tick, nudge=nudge, interval_seconds=0.3, metrics=metrics)
    done = threading.Event()

    def webhooks() -> None:
        while not done.is_set():
            nudge.nudge(APP)
            time.sleep(0.02)

    sender = threading.Thread(target=webhooks)
    w.start()
    sender.start()
    try:
        wait_until(lambda: tick.scopes.count(FULL) >= 4, 30, "four full passes")
        assert APP in tick.scopes
    finally:
        done.set()
        sender.join(5)
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
    def tick(stopping: Callable[[], bool], scope: Scope) -> None:
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

    def tick(stopping: Callable[[], bool], scope: Scope) -> None:
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


# -- health: liveness follows the loop, readiness the thread -----------------------------------


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.mark.parametrize(
    ("quiet", "live"), [(0.0, True), (459.0, True), (460.0, True), (460.5, False), (9999.0, False)]
)
def test_liveness_fails_only_past_the_bound(quiet: float, live: bool) -> None:
    assert liveness(now=1000.0 + quiet, last_progress=1000.0, bound=460.0).ok is live


def test_the_liveness_bound_is_poll_interval_plus_pass_timeout_plus_one_step() -> None:
    assert liveness_bound(interval_seconds=120, pass_timeout_seconds=300, step_seconds=40) == 460


def test_a_hung_pass_fails_liveness_and_a_finished_one_restores_it(
    tick: GatedTick, nudge: Nudge, metrics: Metrics
) -> None:
    clock = FakeClock()
    w = Worker(
        tick,
        nudge=nudge,
        interval_seconds=LONG,
        metrics=metrics,
        clock=clock,
        pass_timeout_seconds=300,
        step_seconds=40,
    )
    tick.gate.clear()
    w.start()
    try:
        assert tick.started.acquire(timeout=5)  # pass 1 hangs
        assert w.liveness().ok and w.readiness().ok
        clock.now += w.liveness_bound + 1
        health = w.liveness()
        assert not health.ok and "no reconcile pass finished" in health.detail
        assert w.readiness().ok  # it can still serve: only a restart helps, not a removal
        tick.gate.set()
        wait_until(lambda: w.passes == 1)
        assert w.liveness().ok
    finally:
        tick.gate.set()
        w.stop(timeout=5)
    assert not w.readiness().ok  # stopped


@pytest.mark.parametrize(
    ("failing", "expected", "shown"),
    [
        (RuntimeError("boom"), False, "the last pass raised RuntimeError"),
        # Expected adapter errors carry a clear message: /livez says it too.
        (ConnectionError("API refused"), False, "ConnectionError: API refused"),
        (None, True, "last pass finished"),
    ],
)
def test_a_pass_that_raised_is_no_progress_for_liveness(
    nudge: Nudge,
    metrics: Metrics,
    failing: Exception | None,
    expected: bool,
    shown: str,
) -> None:
    clock = FakeClock()
    raising = [failing]

    def tick(stopping: Callable[[], bool], scope: Scope) -> None:
        if raising[0] is not None:
            raise raising[0]

    w = Worker(
        tick,
        nudge=nudge,
        interval_seconds=LONG,
        metrics=metrics,
        clock=clock,
        expected_errors=(ConnectionError,),
        pass_timeout_seconds=300,
        step_seconds=40,
    )
    w.start()
    try:
        settle(w, 1)
        clock.now += w.liveness_bound - 1
        nudge.nudge()  # another pass, just inside the bound: it raises too (or not)
        settle(w, 2)
        clock.now += 2  # past the bound since the loop started, not since a pass ended
        health = w.liveness()
        assert health.ok is expected
        assert shown in health.detail
        raising[0] = None  # the cause is fixed: the next pass restores liveness
        nudge.nudge()
        settle(w, 3)
        assert w.liveness().ok
    finally:
        w.stop(timeout=5)


def test_a_pass_is_told_to_stop_once_it_runs_past_its_timeout(
    nudge: Nudge, metrics: Metrics
) -> None:
    clock = FakeClock()
    seen: list[bool] = []
    done = threading.Event()

    def tick(stopping: Callable[[], bool], scope: Scope) -> None:
        seen.append(stopping())
        clock.now += 301
        seen.append(stopping())
        done.set()

    w = Worker(
        tick,
        nudge=nudge,
        interval_seconds=LONG,
        metrics=metrics,
        clock=clock,
        pass_timeout_seconds=300,
    )
    w.start()
    try:
        assert done.wait(5)
        wait_until(lambda: w.passes == 1)
    finally:
        w.stop(timeout=5)
    assert seen == [False, True]


def test_every_line_of_a_pass_carries_its_pass_id_and_the_pass_ends_with_its_duration(
    nudge: Nudge, metrics: Metrics, caplog: pytest.LogCaptureFixture
) -> None:
    inner = logging.getLogger("autoroll.test.inner")
    ids: list[str] = []

    def tick(stopping: Callable[[], bool], scope: Scope) -> None:
        inner.info("deciding")
        raise RuntimeError("boom")  # the worker's own failure line is part of the pass too

    class IdRecorder(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            ids.append(str(structlog.contextvars.get_contextvars().get("pass_id")))

    recorder = IdRecorder()
    logging.getLogger().addHandler(recorder)
    caplog.set_level(logging.INFO)
    w = Worker(tick, nudge=nudge, interval_seconds=LONG, metrics=metrics)
    try:
        w.start()
        wait_until(lambda: w.passes == 1)
        nudge.nudge()
        wait_until(lambda: w.passes == 2)
    finally:
        w.stop(timeout=5)
        logging.getLogger().removeHandler(recorder)
    done = [r for r in caplog.records if getattr(r, "event", None) == "pass-done"]
    assert [getattr(r, "outcome", None) for r in done] == ["error", "error"]
    assert all(isinstance(getattr(r, "duration_seconds", None), float) for r in done)
    # deciding, failed, pass done: one id per pass, two passes, none outside them
    pass_ids = [i for i in ids if i != "None"]
    assert len(pass_ids) == 6 and len(set(pass_ids[:3])) == 1 and len(set(pass_ids[3:])) == 1
    assert pass_ids[0] != pass_ids[3]
