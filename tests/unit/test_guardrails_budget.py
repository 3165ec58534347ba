"""The guardrails planner's cluster-wide budget, clause by clause: deletions per period (this
process's and a previous leader's evidence) and workloads mid-roll.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest

from autoroll.core.budget import BudgetState, Deletion, is_mid_roll, pods_started
from autoroll.core.holds import HoldReason
from autoroll.core.model import PodView, Unknown
from tests.support.guardrail_plans import (
    NEW,
    NOW,
    REF,
    SIDE,
    SIDE_NEW,
    SIDE_OLD,
    budget,
    decided,
    going,
    half_rolled,
    held,
    plan,
    pod,
    sighted,
    workload,
)

# --- the cluster-wide budget: deletions per period ------------------------------------------


def test_the_rate_lets_n_deletions_go_and_holds_the_rest_until_one_frees() -> None:
    result = plan([workload(n) for n in "abcd"], budget(deletions=2))
    assert len(result.go) == 2
    assert sorted(held(result).values()) == [HoldReason.BUDGET] * 2
    assert all(h.until == NOW + timedelta(seconds=60) for h in result.holds)
    assert "2 of 2 deletions in the last 1m" in result.holds[0].detail
    assert result.budget.remaining == 0


def test_this_process_s_deletions_in_the_period_count() -> None:
    recent = [NOW - timedelta(seconds=50), NOW - timedelta(seconds=59)]
    result = plan([workload(n) for n in "abc"], budget(deletions=3), deleted_at=recent)
    assert len(result.go) == 1
    assert result.budget.used == 2
    # The older of the two leaves the period first.
    assert result.holds[0].until == NOW + timedelta(seconds=1)


def test_deletions_older_than_the_period_do_not_count() -> None:
    old = [NOW - timedelta(seconds=60), NOW - timedelta(minutes=5)]
    assert len(plan([workload(n) for n in "ab"], budget(deletions=2), deleted_at=old).go) == 2


def test_deletions_a_period_ahead_are_unreadable_not_recent() -> None:
    # A clock far ahead, or a stamp that is not one, must not stop rolling for ever.
    later = [NOW + timedelta(days=1)]
    assert len(plan([workload("a")], budget(deletions=1), deleted_at=later).go) == 1


def test_the_evidence_of_a_previous_leader_is_the_pods_created_in_the_period() -> None:
    items = [
        workload("r", [pod("r-1", NEW, created=NOW - timedelta(seconds=30))]),
        workload("s", [pod("s-1", NEW, created=NOW - timedelta(seconds=60))]),  # the edge
        workload("o", [pod("o-1", created=NOW - timedelta(seconds=61))]),  # before the period
        workload("f", [pod("f-1", created=NOW + timedelta(days=3))]),  # unreadable
    ]
    found = pods_started(items, now=NOW, period=timedelta(seconds=60))
    # Whole-second stamps rounded up: a pod stamped 60 s ago may be 59.5 s old.
    assert found == [
        Deletion(NOW - timedelta(seconds=59), "shop"),
        Deletion(NOW - timedelta(seconds=29), "shop"),
    ]


def test_a_pod_listed_twice_is_one_start() -> None:
    shared = pod("x-1", NEW, created=NOW - timedelta(seconds=5))
    items = [workload("a", [shared]), workload("b", [shared])]  # overlapping selectors
    assert len(pods_started(items, now=NOW, period=timedelta(seconds=60))) == 1


def test_pods_without_a_uid_are_told_apart_by_name() -> None:
    """A pod read before the API server gave it a uid (a test double, an old cache entry)."""
    a, b = (replace(pod(n, NEW, created=NOW - timedelta(seconds=5)), uid="") for n in "ab")
    assert len(pods_started([workload("w", [a, b])], now=NOW, period=timedelta(seconds=60))) == 2


def test_a_stamp_exactly_one_period_ahead_still_counts() -> None:
    period = timedelta(seconds=60)
    ahead = pod("x-1", NEW, created=NOW + period - timedelta(seconds=1))  # rounded up: NOW + 60 s
    assert pods_started([workload("x", [ahead])], now=NOW, period=period) == [
        Deletion(NOW + period, "shop")
    ]


def test_deletions_of_no_known_namespace_count_in_full_with_shares_on() -> None:
    """A previous leader's evidence without a namespace is no tenant's: no share caps it."""
    recent = [NOW - timedelta(seconds=10)] * 3  # 3 of 4, the share of a namespace being 2
    result = plan([workload(n) for n in "abc"], budget(deletions=4, shares=True), deleted_at=recent)
    assert len(result.go) == 1
    assert len(result.holds) == 2
    assert all(h.workload == f"shop/deployment/{h.action.workload}" for h in result.holds)
    assert result.holds[0].detail == "4 of 4 deletions in the last 1m (ROLL_BUDGET_DELETIONS)"


def test_the_plan_reports_the_budget_as_it_found_and_spent_it() -> None:
    result = plan(
        [workload(n) for n in "abc"],
        budget(deletions=2, in_flight=5),
        deleted_at=[NOW - timedelta(seconds=30)],
    )
    assert result.budget == BudgetState(
        limit=2,
        period=timedelta(seconds=60),
        used=1,
        granted=1,
        in_flight_limit=5,
        mid_roll=(),
        frees_at=NOW + timedelta(seconds=30),  # the earlier of the two leaves the period
    )


def test_a_deletion_stamped_exactly_a_period_ahead_still_counts() -> None:
    ahead = [NOW + timedelta(seconds=60)]
    assert plan([workload("a")], budget(deletions=1), deleted_at=ahead).go == ()


def test_a_plan_needs_a_clock_with_a_zone() -> None:
    with pytest.raises(ValueError, match=r"^now must be timezone-aware$"):
        plan([workload("a")], now=NOW.replace(tzinfo=None))


def test_zero_means_unlimited() -> None:
    many = [workload(f"w{i}") for i in range(50)]
    result = plan(many, budget(deletions=0, in_flight=0), deleted_at=[NOW] * 1000)
    assert len(result.go) == 50
    assert result.budget.remaining is None


# --- the cluster-wide budget: workloads mid-roll -----------------------------------------------


def test_a_workload_held_for_a_slot_is_told_who_holds_them() -> None:
    result = plan([half_rolled("m"), workload("a")], budget(in_flight=1))
    [hold] = result.holds
    assert (hold.workload, hold.detail) == (
        "shop/deployment/a",
        "1 of 1 workloads mid-roll (shop/deployment/m; ROLL_BUDGET_IN_FLIGHT)",
    )


def test_a_workload_mid_roll_goes_on_without_a_new_slot() -> None:
    result = plan([half_rolled("m"), workload("a")], budget(in_flight=1))
    assert going(result) == ["m"]
    assert held(result) == {"a": HoldReason.BUDGET}
    assert "1 of 1 workloads mid-roll (shop/deployment/m" in result.holds[0].detail
    assert result.budget.mid_roll == ("shop/deployment/m",)


def test_starting_a_roll_takes_a_slot() -> None:
    result = plan([workload(n) for n in "abc"], budget(in_flight=2))
    assert len(result.go) == 2
    assert list(held(result).values()) == [HoldReason.BUDGET]


def test_the_rate_holds_a_workload_mid_roll_too() -> None:
    result = plan([half_rolled("m")], budget(deletions=1), deleted_at=[NOW])
    assert held(result) == {"m": HoldReason.BUDGET}


@pytest.mark.parametrize(
    ("pods", "expected"),
    [
        # not begun: every pod stale, the workload settled
        ([pod("x-1"), pod("x-2")], False),
        # begun and not finished: one on the target, one stale
        ([pod("x-1"), pod("x-2", NEW)], True),
        # begun: a stale pod left while a replacement is on its way (one terminating)
        ([pod("x-1"), pod("x-2", deleting=True)], True),
        # begun: a stale pod left while another is not Ready
        ([pod("x-1"), pod("x-2", ready=False)], True),
        # the last replacement is starting: on the target, not Ready yet
        ([pod("x-1", NEW), pod("x-2", NEW, ready=False)], True),
        # finished: all on the target and Ready
        ([pod("x-1", NEW), pod("x-2", NEW)], False),
    ],
)
def test_mid_roll_is_read_from_the_pods(pods: list[PodView], expected: bool) -> None:
    [(enrolled, decision)] = decided([workload("x", pods)], sighted())
    assert is_mid_roll(decision, enrolled.pods) is expected


def test_a_workload_whose_registry_answer_is_unknown_is_not_mid_roll() -> None:
    [(enrolled, decision)] = decided(
        [workload("x", [pod("x-1"), pod("x-2", NEW)])], sighted(), {REF: Unknown("offline")}
    )
    assert not is_mid_roll(decision, enrolled.pods)


def test_an_unknown_first_container_does_not_hide_a_mid_roll_side() -> None:
    """The app tag's answer is unknown; the side tag is half rolled: mid-roll all the same."""
    pods = [pod("x-1", NEW, side=SIDE_OLD), pod("x-2", NEW, side=SIDE_NEW)]
    [(enrolled, decision)] = decided(
        [workload("x", pods, side=True)],
        sighted(side=NOW),
        {REF: Unknown("offline"), SIDE: SIDE_NEW},
    )
    assert is_mid_roll(decision, enrolled.pods)


def test_with_no_deletion_limit_none_are_counted_as_used() -> None:
    result = plan([workload("a")], budget(in_flight=5), deleted_at=[NOW - timedelta(seconds=10)])
    assert (result.budget.used, result.budget.remaining) == (0, None)
