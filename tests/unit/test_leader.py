"""Leader election: the pure lease decisions, table-tested.

The elector over a fake Lease (``tests.support.fake_lease``) is in ``test_leader_elector.py``.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest

from autoroll.core.election import (
    Observation,
    Step,
    authority_left,
    decide_lease,
    has_authority,
    next_record,
    observe,
    released_record,
)
from autoroll.core.records import LeaseRecord
from tests.support.fake_lease import T0

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
