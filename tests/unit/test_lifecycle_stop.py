"""The controller's stop: the reconcile thread first, then every other thread against one
deadline (the elector last), and the Lease handed back only after a clean first stop.

The parts are stand-ins that record the timeout each was given and, when "stuck", use all
of it on a fake clock: the bound in ``runtime.ShutdownBudget`` is only a bound if the others
share ``THREADS_STOP_SECONDS`` however many are on and however slow each is.
"""

from __future__ import annotations

from typing import Any, cast

import pytest

from autoroll.controller.worker import WorkerStopTimeoutError
from autoroll.edge.lifecycle import (
    RECONCILE_STOP_SECONDS,
    THREADS_STOP_SECONDS,
    Controller,
    Election,
)

FLOOR = 0.05  # the least any join is given, even past the deadline


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class Part:
    """One thread's owner: ``stop(timeout)`` records the timeout; a stuck one uses it all
    and raises, as the real ones do when their thread is still alive."""

    def __init__(self, name: str, clock: Clock, log: list[tuple[str, float]], *, stuck: bool):
        self.name, self.clock, self.log, self.stuck = name, clock, log, stuck
        self.requested = False

    def request_stop(self) -> None:
        self.requested = True

    def stop(self, timeout: float, **kwargs: Any) -> None:
        self.log.append((self.name, timeout))
        if self.stuck:
            self.clock.now += timeout
            raise RuntimeError(f"{self.name} still running after {timeout:g}s")


class Worker(Part):
    def stop(self, timeout: float, **kwargs: Any) -> None:
        self.log.append((self.name, timeout))
        if self.stuck:
            self.clock.now += timeout
            raise WorkerStopTimeoutError(f"reconcile thread still running after {timeout:g}s")


class Elector(Part):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.released: bool | None = None

    def stop(self, timeout: float, **kwargs: Any) -> None:
        self.released = kwargs["release"]
        super().stop(timeout)


def controller(*, stuck: set[str]) -> tuple[Controller, Clock, list[tuple[str, float]], Elector]:
    clock, log = Clock(), list[tuple[str, float]]()

    def part(name: str) -> Any:
        return Part(name, clock, log, stuck=name in stuck)

    elector: Any = Elector("elector", clock, log, stuck="elector" in stuck)
    election = Election(elector=elector, watcher=part("watcher"), handoff=part("hand-off"))
    built = Controller(
        metrics=cast(Any, None),
        nudge=cast(Any, None),
        reconciler=cast(Any, None),
        worker=cast(Any, Worker("reconcile", clock, log, stuck="reconcile" in stuck)),
        deliver=lambda scope: None,
        deliver_later=lambda scope, seconds: None,
        election=election,
        cache=part("cache"),
        notifier=part("notifier"),
        pinning=part("pinning"),
        clock=clock,
    )
    return built, clock, log, elector


@pytest.mark.parametrize(
    "stuck",
    [set(), {"cache"}, {"hand-off", "cache", "notifier", "pinning"}, {"reconcile", "cache"}],
    ids=["none-stuck", "cache-stuck", "all-but-the-elector-stuck", "pass-and-cache-stuck"],
)
def test_the_other_threads_share_one_deadline_and_the_elector_goes_last(stuck: set[str]) -> None:
    built, clock, log, elector = controller(stuck=stuck)
    if "reconcile" in stuck:
        with pytest.raises(WorkerStopTimeoutError):
            built.stop()
    else:
        built.stop()
    names = [name for name, _ in log]
    assert names == ["reconcile", "hand-off", "watcher", "cache", "notifier", "pinning", "elector"]
    assert log[0][1] == RECONCILE_STOP_SECONDS
    others = log[1:]
    # However many are stuck, they use the one deadline, plus the floor for each after it.
    spent_after_reconcile = clock.now - (RECONCILE_STOP_SECONDS if "reconcile" in stuck else 0)
    assert spent_after_reconcile <= THREADS_STOP_SECONDS + FLOOR * len(others)
    if stuck - {"reconcile"}:
        assert spent_after_reconcile >= THREADS_STOP_SECONDS  # a stuck one got all there was
    # Only a clean reconcile stop hands the Lease back (a stuck pass lets it expire).
    assert elector.released is ("reconcile" not in stuck)


def test_begin_stop_tells_the_reconcile_thread_the_cache_and_the_notifier_at_once() -> None:
    built, _, log, elector = controller(stuck=set())
    built.begin_stop()
    assert log == []  # nothing waited on: it runs in a signal handler
    assert cast(Any, built.worker).requested
    assert cast(Any, built.cache).requested and cast(Any, built.notifier).requested
    assert not elector.requested  # campaigning goes on while the pass winds down
