"""The reconcile worker's health: liveness follows the loop (a hung or raising pass is no
progress), a pass past its timeout is told to stop, every line of a pass carries its id.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

import pytest
import structlog

from autoroll.controller.loop_health import liveness, liveness_bound
from autoroll.controller.worker import Nudge, Worker
from autoroll.core.scope import Scope
from autoroll.instruments.metrics import Metrics
from tests.support.wait import wait_until
from tests.support.worker_rig import LONG, GatedTick, settle
from tests.unit.worker.test_worker import start_with_the_first_pass_held

# -- health: liveness follows the loop, readiness the thread -----------------------------------


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


TIMEOUT = 300.0  # a pass's timeout, seconds
STEP = 40.0  # one step of a pass, seconds: the liveness bound's slack


def on_the_clock(
    tick: Callable[[Callable[[], bool], Scope], None],
    clock: FakeClock,
    nudge: Nudge,
    metrics: Metrics,
    **options: Any,
) -> Worker:
    """A worker that polls rarely (``LONG``) and reads ``clock``, which the test moves;
    ``options`` are the ``Worker``'s others."""
    return Worker(
        tick,
        nudge=nudge,
        interval_seconds=LONG,
        metrics=metrics,
        clock=clock,
        pass_timeout_seconds=TIMEOUT,
        step_seconds=STEP,
        **options,
    )


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
    w = on_the_clock(tick, clock, nudge, metrics)
    try:
        start_with_the_first_pass_held(w, tick)  # pass 1 hangs
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

    w = on_the_clock(tick, clock, nudge, metrics, expected_errors=(ConnectionError,))
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
        clock.now += TIMEOUT + 1
        seen.append(stopping())
        done.set()

    w = on_the_clock(tick, clock, nudge, metrics)
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
