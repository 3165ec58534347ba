"""Per-tag debounce: a burst of deliveries for one tag costs at most two passes, none is
lost, and tags never wait for each other."""

from __future__ import annotations

import itertools
import threading
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from prometheus_client import CollectorRegistry

from autoroll.controller.worker import Nudge, Worker
from autoroll.core import debounce
from autoroll.core.scope import FULL, ImageTag, Scope
from autoroll.instruments.metrics import Metrics
from tests.support.wait import wait_until

A = ImageTag.named("forgejo.example", "team/app", "latest")
B = ImageTag.named("forgejo.example", "team/other", "latest")


@pytest.mark.parametrize(
    ("now", "taken", "deferred", "due", "later"),
    [
        pytest.param(10.0, {}, {}, {A}, {}, id="never taken: due at once"),
        pytest.param(10.0, {A: 4.0}, {}, {A}, {}, id="taken a whole interval ago: due"),
        pytest.param(10.0, {A: 5.0}, {}, {A}, {}, id="exactly one interval: due"),
        pytest.param(10.0, {A: 8.0}, {}, set(), {A: 13.0}, id="taken 2 s ago: deferred to +5"),
        pytest.param(
            10.0, {A: 8.0}, {A: 13.0}, set(), {A: 13.0}, id="already deferred: keeps its time"
        ),
        pytest.param(
            12.9, {A: 2.0}, {A: 13.0}, set(), {A: 13.0}, id="deferred never moves earlier or later"
        ),
        pytest.param(10.0, {B: 9.0}, {B: 14.0}, {A}, {}, id="another tag's clock: no effect"),
    ],
)
def test_arrive_splits_a_delivery_into_due_and_deferred(
    now: float,
    taken: dict[ImageTag, float],
    deferred: dict[ImageTag, float],
    due: set[ImageTag],
    later: dict[ImageTag, float],
) -> None:
    arrival = debounce.arrive([A], now=now, taken=taken, deferred=deferred, interval=5.0)
    assert arrival.due == due
    assert dict(arrival.deferred) == later


def test_ripe_next_due_and_forget_old() -> None:
    deferred = {A: 13.0, B: 20.0}
    assert debounce.ripe(deferred, now=12.9) == frozenset()
    assert debounce.ripe(deferred, now=13.0) == {A}
    assert debounce.next_due(deferred) == 13.0
    assert debounce.next_due({}) is None
    assert debounce.forget_old({A: 4.0, B: 9.0}, now=10.0, interval=5.0) == {B: 9.0}


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@dataclass(frozen=True)
class Pass:
    at: float
    scope: Scope


def simulate(deliveries: list[tuple[float, ImageTag]], interval: float) -> list[Pass]:
    """An instant worker: it takes whatever is due at every delivery and at every moment a
    deferral could come due (each delivery's time plus the interval, a superset)."""
    clock = Clock()
    nudge = Nudge(tag_interval_seconds=interval, clock=clock)
    moments = sorted(
        {(t, 1, tag) for t, tag in deliveries}
        | {(t + interval, 0, None) for t, _ in deliveries}
        | {(t + 2 * interval, 0, None) for t, _ in deliveries},
        key=lambda m: (m[0], m[1]),
    )
    passes = []
    for at, kind, tag in moments:
        clock.now = at
        if kind == 1 and tag is not None:
            nudge.deliver(Scope.of([tag]))
        scope = nudge.take()
        if scope is not None:
            passes.append(Pass(at, scope))
    assert not nudge.pending
    return passes


def taking(passes: list[Pass], tag: ImageTag) -> list[float]:
    return [p.at for p in passes if p.scope.tags is not None and tag in p.scope.tags]


deliveries_of_two_tags = st.lists(
    st.tuples(st.floats(0, 60, allow_nan=False), st.sampled_from([A, B])), max_size=60
)


@settings(max_examples=300, deadline=None)
@given(deliveries_of_two_tags, st.sampled_from([1.0, 2.0, 5.0]))
def test_no_delivery_is_lost_and_a_tag_is_taken_at_most_once_per_interval(
    deliveries: list[tuple[float, ImageTag]], interval: float
) -> None:
    passes = simulate(deliveries, interval)
    for tag in (A, B):
        times = taking(passes, tag)
        assert all(b - a >= interval - 1e-9 for a, b in itertools.pairwise(times)), times
        for at, delivered in deliveries:
            if delivered == tag:
                # Looked at by a pass no earlier than the delivery, within one interval.
                assert any(at <= t <= at + interval + 1e-9 for t in times), (at, times)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.floats(0, 4.99, allow_nan=False), min_size=1, max_size=200),
    st.lists(st.floats(0, 60, allow_nan=False), max_size=20),
)
def test_a_burst_shorter_than_the_interval_costs_two_passes_and_never_delays_another_tag(
    burst: list[float], others: list[float]
) -> None:
    passes = simulate([(t, A) for t in burst] + [(t, B) for t in others], 5.0)
    assert len(taking(passes, A)) <= 2
    first_b = {t for t in others if not any(0 < t - u < 5.0 for u in taking(passes, B))}
    for t in first_b:
        assert t in taking(passes, B)  # due at once: A's burst does not hold it


def test_a_full_scope_is_never_deferred_and_takes_the_deferrals_with_it() -> None:
    clock = Clock()
    nudge = Nudge(tag_interval_seconds=5.0, clock=clock)
    nudge.deliver(Scope.of([A]))
    assert nudge.take() == Scope.of([A])
    clock.now = 1.0
    nudge.deliver(Scope.of([A]))
    assert nudge.take() is None and nudge.pending  # deferred to 5.0
    nudge.deliver(FULL)
    assert nudge.take() == FULL
    assert not nudge.pending


def test_a_nudge_in_some_seconds_comes_due_then_and_never_later_than_one_due_sooner() -> None:
    """The pacer's ask for a pass when a health window ends (``Nudge.nudge_in``)."""
    clock = Clock()
    nudge = Nudge(clock=clock)
    nudge.nudge_in(Scope.of([A]), 20.0)
    nudge.nudge_in(Scope.of([A]), 30.0)  # a later ask does not postpone it
    assert nudge.take() is None and nudge.pending
    clock.now = 19.9
    assert nudge.take() is None
    clock.now = 20.0
    assert nudge.wait(0.0)
    assert nudge.take() == Scope.of([A])
    assert not nudge.pending


def test_off_when_the_interval_is_zero() -> None:
    nudge = Nudge(clock=Clock())
    for _ in range(3):
        nudge.deliver(Scope.of([A]))
        assert nudge.take() == Scope.of([A])


@pytest.fixture
def worker_and_nudge() -> Iterator[tuple[Worker, Nudge, list[Scope]]]:
    metrics = Metrics(CollectorRegistry())
    nudge = Nudge(metrics, tag_interval_seconds=0.5)
    scopes: list[Scope] = []
    lock = threading.Lock()

    def tick(stopping: object, scope: Scope) -> None:
        with lock:
            scopes.append(scope)

    worker = Worker(tick, nudge=nudge, interval_seconds=3600, metrics=metrics)
    worker.start()
    wait_until(lambda: len(scopes) == 1, timeout=10, what="the first full pass")
    yield worker, nudge, scopes
    worker.stop(10)


def test_the_worker_wakes_for_a_deferral_when_its_interval_ends(
    worker_and_nudge: tuple[Worker, Nudge, list[Scope]],
) -> None:
    worker, nudge, scopes = worker_and_nudge
    nudge.deliver(Scope.of([A]))
    wait_until(lambda: len(scopes) == 2, timeout=10, what="the delivery's pass")
    for _ in range(100):
        nudge.deliver(Scope.of([A]))
    wait_until(lambda: len(scopes) == 3, timeout=10, what="the burst's one trailing pass")
    assert scopes[1:] == [Scope.of([A]), Scope.of([A])]
    assert not nudge.pending
    assert worker.passes == 3
