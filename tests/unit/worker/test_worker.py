"""The reconcile worker: no overlap, nudges coalesce, failures survive, stop is explicit.

The rig and fixtures are in ``tests.support.worker_rig``; health in ``test_worker_health.py``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pytest

from autoroll.controller.worker import Nudge, Worker, WorkerStopTimeoutError
from autoroll.core.scope import FULL, ImageTag, Scope
from autoroll.instruments.metrics import Metrics
from tests.support.wait import wait_until
from tests.support.worker_rig import LONG, GatedTick, settle


def start_with_the_first_pass_held(worker: Worker, tick: GatedTick) -> None:
    """Start ``worker`` and return once its first pass is running, held open until the test
    sets ``tick.gate``."""
    tick.gate.clear()
    worker.start()
    assert tick.started.acquire(timeout=5)


def test_first_pass_runs_at_start_not_after_one_interval(worker: Worker, tick: GatedTick) -> None:
    worker.start()
    assert tick.started.acquire(timeout=5)
    settle(worker, 1)
    assert tick.calls == 1


def test_100_concurrent_nudges_during_a_pass_cause_exactly_one_follow_up(
    worker: Worker, tick: GatedTick, nudge: Nudge, metrics: Metrics
) -> None:
    start_with_the_first_pass_held(worker, tick)

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
    start_with_the_first_pass_held(worker, tick)
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
    start_with_the_first_pass_held(worker, tick)
    nudge.nudge(APP)
    nudge.nudge(API)
    nudge.nudge(APP)
    tick.gate.set()
    settle(worker, 2)
    assert tick.scopes == [FULL, APP.merge(API)]


def test_a_full_nudge_absorbs_targeted_ones_pending_with_it(
    worker: Worker, tick: GatedTick, nudge: Nudge
) -> None:
    start_with_the_first_pass_held(worker, tick)
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
    w = Worker(tick, nudge=nudge, interval_seconds=LONG, metrics=metrics)
    start_with_the_first_pass_held(w, tick)
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
