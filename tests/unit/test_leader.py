"""Leader election: the pure lease decisions (table-tested) and the elector over a fake Lease.

The fake Lease keeps a resourceVersion and refuses stale writes with a conflict, exactly the
property the real API server gives; two electors share it under one fake monotonic clock,
so a test can walk a timeline and check after every step that never two replicas may act.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest
from prometheus_client import CollectorRegistry

from autoroll.controller.leader import Elector
from autoroll.core.election import (
    Observation,
    Step,
    Timings,
    authority_left,
    decide_lease,
    has_authority,
    next_record,
    observe,
    released_record,
)
from autoroll.core.ports import LeaseConflictError
from autoroll.core.records import LeaseRecord
from autoroll.instruments.metrics import Metrics

T0 = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
ME = "autoroll-a"
OTHER = "autoroll-b"
HELD = LeaseRecord(OTHER, 15, acquired_at=T0, renewed_at=T0, transitions=2, resource_version="7")


def seen(record: LeaseRecord, at: float) -> Observation:
    return Observation(record.election_fields, at)


# --------------------------------------------------------------------------------------------
# Pure decisions


@pytest.mark.parametrize(
    ("why", "lease", "observed", "now", "leading", "step"),
    [
        ("no lease object yet: create it", None, None, 100.0, False, Step.CREATE),
        ("the lease is ours: renew", replace(HELD, holder=ME), None, 100.0, True, Step.RENEW),
        (
            "ours although we stepped down (e.g. the API was away): renewing is safe",
            replace(HELD, holder=ME),
            None,
            100.0,
            False,
            Step.RENEW,
        ),
        ("held by another, first sight: wait", HELD, None, 100.0, False, Step.WAIT),
        (
            "held by another, unchanged for less than its duration: wait",
            HELD,
            seen(HELD, 100.0),
            114.9,
            False,
            Step.WAIT,
        ),
        (
            "held by another, unchanged for its full duration: acquire",
            HELD,
            seen(HELD, 100.0),
            115.0,
            False,
            Step.ACQUIRE,
        ),
        (
            "renewed meanwhile (renewTime moved): the timer restarts, wait",
            replace(HELD, renewed_at=T0 + timedelta(seconds=2), resource_version="8"),
            seen(HELD, 100.0),
            130.0,
            False,
            Step.WAIT,
        ),
        (
            "only a nudge changed (new resourceVersion): the timer keeps running, acquire",
            replace(HELD, nudge="x", resource_version="9"),
            seen(HELD, 100.0),
            115.0,
            False,
            Step.ACQUIRE,
        ),
        (
            "the holder declared a longer duration than ours: honour it",
            replace(HELD, duration_seconds=30),
            seen(replace(HELD, duration_seconds=30), 100.0),
            120.0,
            False,
            Step.WAIT,
        ),
        (
            "released (no holder): acquire at once",
            replace(HELD, holder=""),
            None,
            1.0,
            False,
            Step.ACQUIRE,
        ),
        ("we led but the lease names another: step down", HELD, None, 100.0, True, Step.STEP_DOWN),
    ],
)
def test_decide_lease(
    *,
    why: str,
    lease: LeaseRecord | None,
    observed: Observation | None,
    now: float,
    leading: bool,
    step: Step,
) -> None:
    decision = decide_lease(
        lease=lease, observed=observed, identity=ME, now=now, leading=leading, lease_duration=15
    )
    assert decision.step is step, why
    assert decision.reason
    assert (decision.expires_in is not None) == (step is Step.WAIT)


def test_a_waiting_contender_knows_when_the_lease_may_expire() -> None:
    decision = decide_lease(
        lease=HELD,
        observed=seen(HELD, 100.0),
        identity=ME,
        now=112.5,
        leading=False,
        lease_duration=15,
    )
    assert decision.step is Step.WAIT
    assert decision.expires_in == pytest.approx(2.5)


def test_observation_keeps_its_first_sight_until_the_holder_record_changes() -> None:
    first = observe(HELD, None, 10.0)
    assert first == Observation(HELD.election_fields, 10.0)
    assert observe(replace(HELD, nudge="n", resource_version="99"), first, 20.0) is first
    moved = replace(HELD, renewed_at=T0 + timedelta(seconds=2))
    assert observe(moved, first, 20.0) == Observation(moved.election_fields, 20.0)
    assert observe(None, first, 30.0) is None


@pytest.mark.parametrize(
    ("renewed_at", "now", "expected"),
    [
        (None, 0.0, False),  # never renewed: no authority
        (100.0, 100.0, True),
        (100.0, 109.99, True),
        (100.0, 110.0, False),  # exactly at the deadline: already stopped
        (100.0, 200.0, False),
    ],
)
def test_has_authority(renewed_at: float | None, now: float, expected: bool) -> None:
    assert has_authority(renewed_at=renewed_at, now=now, renew_deadline=10.0) is expected


@pytest.mark.parametrize(
    ("renewed_at", "now", "left"),
    [
        (None, 0.0, 0.0),  # never renewed
        (100.0, 100.0, 15.0),  # the whole lease duration: no contender can lead before
        (100.0, 109.0, 6.0),
        (100.0, 109.99, 5.01),  # the last moment a DELETE may start: D - R is left
        (100.0, 110.0, 0.0),  # past the renew deadline: none, even though 5 s remain
    ],
)
def test_authority_left_is_until_a_contender_could_lead(
    renewed_at: float | None, now: float, left: float
) -> None:
    found = authority_left(renewed_at=renewed_at, now=now, renew_deadline=10.0, lease_duration=15.0)
    assert found == pytest.approx(left)


def test_next_record_for_each_write() -> None:
    now = T0 + timedelta(seconds=30)
    created = next_record(Step.CREATE, None, identity=ME, now=now, duration=15)
    assert created == LeaseRecord(ME, 15, acquired_at=now, renewed_at=now, transitions=0)
    acquired = next_record(Step.ACQUIRE, HELD, identity=ME, now=now, duration=15)
    assert (acquired.holder, acquired.acquired_at, acquired.transitions) == (ME, now, 3)
    assert acquired.resource_version == "7"  # the write is conditional on what was read
    mine = replace(HELD, holder=ME)
    renewed = next_record(Step.RENEW, mine, identity=ME, now=now, duration=15)
    assert (renewed.acquired_at, renewed.renewed_at, renewed.transitions) == (T0, now, 2)
    with pytest.raises(ValueError, match="no record to write"):
        next_record(Step.WAIT, HELD, identity=ME, now=now, duration=15)


def test_released_record_has_no_holder() -> None:
    released = released_record(replace(HELD, holder=ME), now=T0)
    assert released.holder == ""
    assert released.resource_version == "7"


# --------------------------------------------------------------------------------------------
# The elector over a fake Lease


class FakeLease:
    """An in-memory Lease with resourceVersion semantics; ``down`` makes every call fail."""

    def __init__(self) -> None:
        self.record: LeaseRecord | None = None
        self.version = 0
        self.down = False
        self.aborts = 0
        self.writes: list[tuple[str, str]] = []
        self.before_write: list[str] = []  # e.g. ["nudge"]: a nudge sneaks in before a write
        self.lock = threading.Lock()
        self.changed = threading.Condition(self.lock)

    def _bump(self, record: LeaseRecord) -> LeaseRecord:
        self.version += 1
        self.record = replace(record, resource_version=str(self.version))
        self.changed.notify_all()
        return self.record

    def _check(self) -> None:
        if self.down:
            raise ConnectionError("API server unreachable")

    def get(self) -> LeaseRecord | None:
        with self.lock:
            self._check()
            return self.record

    def create(self, record: LeaseRecord) -> LeaseRecord:
        with self.lock:
            self._check()
            if self.record is not None:
                raise LeaseConflictError("exists")
            self.writes.append(("create", record.holder))
            return self._bump(record)

    def update(self, record: LeaseRecord) -> LeaseRecord:
        with self.lock:
            self._check()
            if self.before_write:
                self.before_write.pop(0)
                assert self.record is not None
                self._bump(replace(self.record, nudge=f"sneaky-{self.version}"))
            if self.record is None or record.resource_version != self.record.resource_version:
                raise LeaseConflictError("stale")
            self.writes.append(("update", record.holder))
            return self._bump(replace(record, nudge=self.record.nudge))

    def publish_nudge(self, value: str) -> None:
        with self.lock:
            self._check()
            assert self.record is not None
            self._bump(replace(self.record, nudge=value))

    def watch(self, resource_version: str, timeout_seconds: int) -> Iterator[LeaseRecord]:
        last = int(resource_version or 0)
        aborts = self.aborts
        while True:
            with self.lock:
                self.changed.wait_for(functools.partial(self._newer, last, aborts), timeout=0.2)
                self._check()
                if self.aborts != aborts:
                    return  # like a shut-down socket: the watch just ends
                if self.version <= last:
                    continue
                last = self.version
                record = self.record
            assert record is not None
            yield record

    def _newer(self, version: int, aborts: int) -> bool:
        return self.version > version or self.down or self.aborts != aborts

    def abort_watch(self) -> None:
        with self.lock:
            self.aborts += 1
            self.changed.notify_all()


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


TIMINGS = Timings(lease_duration=15, renew_deadline=10, retry_period=2)


def elector(lease: FakeLease, clock: Clock, identity: str) -> tuple[Elector, Metrics]:
    metrics = Metrics(CollectorRegistry())
    wall = lambda: T0 + timedelta(seconds=clock.now)  # noqa: E731
    return Elector(
        lease, identity=identity, timings=TIMINGS, metrics=metrics, clock=clock, wall=wall
    ), metrics


def test_first_replica_creates_the_lease_and_leads_the_second_waits() -> None:
    lease, clock = FakeLease(), Clock()
    a, metrics_a = elector(lease, clock, "a")
    b, _ = elector(lease, clock, "b")
    assert a.cycle() is Step.CREATE
    assert b.cycle() is Step.WAIT
    assert a.may_act() and not b.may_act()
    assert metrics_a.registry.get_sample_value("autoroll_leader") == 1
    assert lease.record is not None and lease.record.holder == "a"


def test_a_crashed_leader_stops_before_the_other_can_take_over() -> None:
    """Walk a timeline in 0.5 s steps: at no instant may both replicas act."""
    lease, clock = FakeLease(), Clock()
    a, metrics_a = elector(lease, clock, "a")
    b, _ = elector(lease, clock, "b")
    a.cycle()
    b.cycle()
    last_renew = clock.now
    # a renews twice more, then its process freezes (no more cycles, no I/O).
    for _ in range(2):
        clock.now += 2
        a.cycle()
        b.cycle()
        last_renew = clock.now
    took_over_at = None
    while took_over_at is None:
        clock.now += 0.5
        assert not (a.may_act() and b.may_act()), f"two leaders at t={clock.now}"
        if b.cycle() is Step.ACQUIRE:
            took_over_at = clock.now
    assert not a.may_act()
    assert b.may_act()
    # a stopped acting 10 s after its last renew; b took over 15 s after first seeing it.
    assert took_over_at - last_renew == pytest.approx(15.0, abs=0.51)
    assert metrics_a.registry.get_sample_value("autoroll_leader") == 1  # frozen, as it was
    # When a thaws, its first cycle steps it down (deadline long past) and writes nothing.
    writes = len(lease.writes)
    assert a.cycle() is Step.WAIT
    assert len(lease.writes) == writes
    assert metrics_a.registry.get_sample_value("autoroll_leader") == 0


def test_a_leader_whose_lease_was_taken_steps_down_on_its_next_read() -> None:
    lease, clock = FakeLease(), Clock()
    a, _ = elector(lease, clock, "a")
    a.cycle()
    assert lease.record is not None
    lease.update(replace(lease.record, holder="intruder"))  # e.g. an admin edited it
    clock.now += 1  # well within a's renew deadline
    assert a.cycle() is Step.STEP_DOWN
    assert not a.may_act()


def test_a_leader_that_cannot_renew_steps_down_at_the_renew_deadline() -> None:
    lease, clock = FakeLease(), Clock()
    a, metrics = elector(lease, clock, "a")
    a.cycle()
    renewed = clock.now
    lease.down = True
    clock.now = renewed + 9.9
    assert a.cycle() is None  # the API failed; authority is still within the deadline
    assert a.may_act()
    clock.now = renewed + 10.0
    assert not a.may_act()  # lazily, without waiting for the elector thread
    a.cycle()
    assert metrics.registry.get_sample_value("autoroll_leader") == 0
    assert (
        metrics.registry.get_sample_value("autoroll_leadership_changes_total", {"change": "lost"})
        == 1
    )
    assert metrics.registry.get_sample_value("autoroll_lease_errors_total") == 2
    # The API comes back and the lease still names a: renewing makes it leader again,
    # in a new term (what it remembered may be another leader's history by now).
    term = a.term
    lease.down = False
    assert a.cycle() is Step.RENEW
    assert a.may_act()
    assert a.term == term + 1
    assert a.authority_left() == pytest.approx(15.0)


def test_a_released_lease_is_taken_at_once() -> None:
    lease, clock = FakeLease(), Clock()
    a, metrics_a = elector(lease, clock, "a")
    b, _ = elector(lease, clock, "b")
    a.cycle()
    b.cycle()
    a.stop(timeout=1, release=True)
    assert not a.may_act()
    assert lease.record is not None and lease.record.holder == ""
    assert b.cycle() is Step.ACQUIRE  # no clock advance at all
    assert b.may_act()
    assert (
        metrics_a.registry.get_sample_value(
            "autoroll_leadership_changes_total", {"change": "released"}
        )
        == 1
    )


def test_a_write_that_meets_a_newer_version_reads_again_and_renews() -> None:
    lease, clock = FakeLease(), Clock()
    a, _ = elector(lease, clock, "a")
    a.cycle()
    lease.before_write = ["nudge"]  # a follower's nudge lands between our read and write
    clock.now += 2
    assert a.cycle() is Step.RENEW
    assert a.may_act()
    assert lease.record is not None and lease.record.nudge.startswith("sneaky")


def test_two_contenders_racing_for_an_expired_lease_produce_one_leader() -> None:
    lease, clock = FakeLease(), Clock()
    dead, _ = elector(lease, clock, "dead")
    dead.cycle()
    b, _ = elector(lease, clock, "b")
    c, _ = elector(lease, clock, "c")
    b.cycle()
    c.cycle()
    clock.now += 15
    # Both read the same expired record; only the first write carries the current version.
    stale = lease.get()
    assert b.cycle() is Step.ACQUIRE
    assert stale is not None
    with pytest.raises(LeaseConflictError):
        lease.update(replace(stale, holder="c"))
    assert c.cycle() is Step.WAIT
    assert b.may_act() and not c.may_act()


def test_the_elector_thread_campaigns_and_calls_on_elected() -> None:
    lease = FakeLease()
    elected = threading.Event()
    metrics = Metrics(CollectorRegistry())
    e = Elector(
        lease,
        identity="a",
        timings=Timings(lease_duration=3, renew_deadline=2, retry_period=0.05),
        metrics=metrics,
        on_elected=elected.set,
    )
    e.start()
    try:
        assert elected.wait(5)
        assert e.may_act()
    finally:
        e.stop(timeout=5, release=True)
    assert not e.may_act()
    assert lease.record is not None and lease.record.holder == ""
