"""The elector over a fake Lease (``tests.support.fake_lease``): two electors share it under one
fake monotonic clock, so a test can walk a timeline and check after every step that never
two replicas may act.
"""

from __future__ import annotations

import threading
from dataclasses import replace
from datetime import timedelta

import pytest
from prometheus_client import CollectorRegistry

from autoroll.controller.leader import Elector
from autoroll.core.election import Step, Timings
from autoroll.core.ports import LeaseConflictError
from autoroll.instruments.metrics import Metrics
from tests.support.fake_lease import T0, FakeLease

# --------------------------------------------------------------------------------------------
# The elector over a fake Lease


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
