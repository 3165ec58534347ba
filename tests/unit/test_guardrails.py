"""The guardrails planner (autoroll.core.guardrails.plan_rolls), clause by clause.

Decisions come from the real ``decide`` over small workloads, so "stale", "settled" and
"mid-roll" mean what they mean in a pass (``tests.support.guardrail_plans``). Each test breaks
when its clause is removed. The cluster-wide budget is in ``test_guardrails_budget.py``.
"""

from __future__ import annotations

import hashlib
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from autoroll.core.decide import Sighting, decide
from autoroll.core.guardrails import plan_rolls
from autoroll.core.holds import HoldReason
from autoroll.core.images import TagRef
from autoroll.core.model import Digest, ImageContent, Unknown
from autoroll.core.policy import MIN_AGE, PAUSED, WINDOW
from autoroll.core.sightings import observe_targets
from autoroll.core.windows import parse_windows
from tests.support.guardrail_plans import (
    CONTENTS,
    HOST,
    LONG_AGO,
    NEW,
    NOW,
    OLD,
    OPEN,
    REF,
    SIDE,
    SIDE_NEW,
    SIDE_OLD,
    budget,
    going,
    held,
    plan,
    pod,
    sighted,
    workload,
)

# --- nothing to hold -------------------------------------------------------------------------


def test_with_no_guardrail_every_decided_deletion_goes() -> None:
    result = plan([workload("a"), workload("b"), workload("c")])
    assert sorted(going(result)) == ["a", "b", "c"]
    assert result.holds == ()


def test_a_workload_with_nothing_to_delete_is_not_held() -> None:
    result = plan([workload("a", [pod("a-1", NEW)])], replace(OPEN, paused=True))
    assert result.go == () and result.holds == ()


# --- the per-workload ladder -----------------------------------------------------------------


def test_an_unreadable_annotation_holds_that_workload_only() -> None:
    result = plan([workload("a", annotations={WINDOW: "weekends"}), workload("b")])
    assert going(result) == ["b"]
    assert held(result) == {"a": HoldReason.INVALID_POLICY}
    [hold] = result.holds
    assert WINDOW in hold.detail and "weekends" in hold.detail and hold.until is None
    assert result.invalid == ("shop/deployment/a",)


def test_an_unreadable_annotation_wins_over_a_pause() -> None:
    result = plan([workload("a", annotations={PAUSED: "true", MIN_AGE: "soon"})])
    assert held(result) == {"a": HoldReason.INVALID_POLICY}


def test_a_global_pause_holds_everything_and_says_so() -> None:
    result = plan([workload("a"), workload("b")], replace(OPEN, paused=True))
    assert held(result) == {"a": HoldReason.PAUSED, "b": HoldReason.PAUSED}
    assert all("ROLL_PAUSED" in h.detail for h in result.holds)
    assert result.paused_globally


def test_a_pause_annotation_holds_its_workload_only() -> None:
    result = plan([workload("a", annotations={PAUSED: "true"}), workload("b")])
    assert going(result) == ["b"]
    assert held(result) == {"a": HoldReason.PAUSED}
    assert "annotation" in result.holds[0].detail
    assert result.paused == ("shop/deployment/a",)


def test_paused_false_rolls() -> None:
    assert going(plan([workload("a", annotations={PAUSED: "false"})])) == ["a"]


def test_a_closed_window_holds_until_the_next_opening() -> None:
    result = plan([workload("a", annotations={WINDOW: "Sat 02:00-04:00 Europe/Stockholm"})])
    [hold] = result.holds
    assert hold.reason is HoldReason.OUTSIDE_WINDOW
    assert hold.until == datetime(2026, 12, 12, 1, 0, tzinfo=UTC)  # 02:00 CET
    assert "Sat 2026-12-12 02:00 Europe/Stockholm" in hold.detail
    assert "annotation autoroll.aethnet.se/window" in hold.detail


def test_an_open_window_rolls() -> None:
    assert going(plan([workload("a", annotations={WINDOW: "Mon 11:00-13:00 UTC"})])) == ["a"]


def test_the_cluster_wide_window_applies_and_always_lifts_it() -> None:
    closed = replace(OPEN, windows=parse_windows("Sat 02:00-04:00 UTC"))
    result = plan([workload("a"), workload("b", annotations={WINDOW: "always"})], closed)
    assert going(result) == ["b"]
    assert held(result) == {"a": HoldReason.OUTSIDE_WINDOW}
    assert "ROLL_WINDOW" in result.holds[0].detail


def test_a_young_digest_is_held_until_it_has_its_min_age() -> None:
    young = sighted(NOW - timedelta(minutes=4))
    result = plan([workload("a")], replace(OPEN, min_age=timedelta(minutes=10)), sightings=young)
    [hold] = result.holds
    assert hold.reason is HoldReason.MATURING
    assert hold.until == NOW + timedelta(minutes=6)
    assert "4m" in hold.detail and "10m" in hold.detail


def test_a_maturing_hold_says_how_old_the_digest_is_and_when_it_rolls() -> None:
    young = sighted(NOW - timedelta(minutes=4))
    result = plan(
        [workload("a"), workload("b")],
        replace(OPEN, min_age=timedelta(minutes=10)),
        sightings=young,
    )
    hold = result.hold_for("shop/deployment/b")
    assert hold is not None and hold.workload == "shop/deployment/b"
    rolls_at = (NOW + timedelta(minutes=6)).isoformat(timespec="seconds")
    assert hold.detail == (
        f"{REF} has been {NEW.short} for 4m, less than its min-age of 10m;"
        f" rolls at {rolls_at} (in 6m)"
    )
    assert result.hold_for("shop/deployment/c") is None


def test_a_digest_of_its_min_age_rolls() -> None:
    aged = sighted(NOW - timedelta(minutes=10))
    assert going(
        plan([workload("a")], replace(OPEN, min_age=timedelta(minutes=10)), sightings=aged)
    ) == ["a"]


def test_a_tag_that_moved_again_restarts_the_clock() -> None:
    # An hour on SIDE_OLD's digest, then the tag moved to NEW 30 s ago: NEW's age is 30 s.
    first = observe_targets({}, {REF: SIDE_OLD}, now=NOW - timedelta(hours=1))
    moved = observe_targets(first, {REF: NEW}, now=NOW - timedelta(seconds=30))
    result = plan([workload("a")], replace(OPEN, min_age=timedelta(minutes=1)), sightings=moved)
    assert held(result) == {"a": HoldReason.MATURING}
    assert result.holds[0].until == NOW + timedelta(seconds=30)


def test_the_min_age_annotation_replaces_the_cluster_wide_one() -> None:
    young = sighted(NOW - timedelta(minutes=4))
    slow = replace(OPEN, min_age=timedelta(minutes=10))
    result = plan(
        [workload("a", annotations={MIN_AGE: "0"}), workload("b", annotations={MIN_AGE: "1h"})],
        slow,
        sightings=young,
    )
    assert going(result) == ["a"]
    assert held(result) == {"b": HoldReason.MATURING}


def test_every_tag_the_deletion_would_pull_must_be_old_enough() -> None:
    # The pod is stale for app (old enough); its side container's tag moved a minute ago.
    # Deleting the pod would start the young side image too: held.
    both = sighted(LONG_AGO, side=NOW - timedelta(minutes=1))
    two = workload("a", [pod("a-1", OLD, side=SIDE_OLD)], side=True)
    result = plan([two], replace(OPEN, min_age=timedelta(minutes=10)), sightings=both)
    [hold] = result.holds
    assert hold.reason is HoldReason.MATURING and str(SIDE) in hold.detail


def test_a_tag_the_pod_already_runs_does_not_count_toward_its_age() -> None:
    both = sighted(LONG_AGO, side=NOW - timedelta(minutes=1))
    two = workload("a", [pod("a-1", OLD, side=SIDE_NEW)], side=True)
    assert going(plan([two], replace(OPEN, min_age=timedelta(minutes=10)), sightings=both)) == ["a"]


def test_a_tag_whose_digest_is_unknown_has_no_known_age() -> None:
    two = workload("a", [pod("a-1", OLD, side=SIDE_OLD)], side=True)
    unknown_side: dict[TagRef, Digest | Unknown] = {REF: NEW, SIDE: Unknown("offline")}
    result = plan([two], replace(OPEN, min_age=timedelta(minutes=10)), resolved=unknown_side)
    [hold] = result.holds
    assert hold.reason is HoldReason.MATURING and hold.until is None
    assert "unknown" in hold.detail


def test_the_ladder_order_pause_before_window_before_min_age() -> None:
    everything = replace(
        OPEN,
        windows=parse_windows("Sat 02:00-04:00 UTC"),
        min_age=timedelta(days=2),
    )
    result = plan(
        [
            workload("p", annotations={PAUSED: "true"}),
            workload("w"),
            workload("m", annotations={WINDOW: "always"}),
        ],
        everything,
    )
    assert held(result) == {
        "p": HoldReason.PAUSED,
        "w": HoldReason.OUTSIDE_WINDOW,
        "m": HoldReason.MATURING,
    }


# --- fairness --------------------------------------------------------------------------------


def test_the_oldest_sighting_goes_first_whatever_the_list_order() -> None:
    side_only = workload("z-older", [pod("z-1", NEW, side=SIDE_OLD)], side=True)
    app_only = workload("a-newer", [pod("a-1", OLD)])
    seen = sighted(NOW - timedelta(minutes=1), side=NOW - timedelta(hours=1))
    result = plan([app_only, side_only], budget(deletions=1), sightings=seen)
    assert going(result) == ["z-older"]


def test_one_pushs_workloads_are_ordered_by_a_hash_not_by_name() -> None:
    names = [f"w{i:02d}" for i in range(20)]
    result = plan([workload(n) for n in names], budget(deletions=20))
    expected = sorted(
        names, key=lambda n: hashlib.sha256(f"shop/deployment/{n}\0{NEW}".encode()).hexdigest()
    )
    assert going(result) == expected
    assert going(result) != names


def test_no_workload_is_always_last() -> None:
    # Another push (another digest) orders the same workloads differently.
    names = ["a", "b", "c", "d", "e"]
    lasts = set()
    for digit in "456789":
        target = Digest("sha256:" + digit * 64)
        contents = {**CONTENTS, target: ImageContent(frozenset({Digest("sha256:" + "e" * 64)}))}
        seen = {REF: Sighting(target, LONG_AGO)}
        items = [
            (
                e,
                decide(
                    workload=e.workload,
                    pods=e.pods,
                    registries={HOST},
                    resolved={REF: target},
                    sightings=seen,
                    children={target: frozenset()},
                    contents=contents,
                ),
            )
            for e in (workload(n) for n in names)
        ]
        result = plan_rolls(items=items, sightings=seen, guardrails=OPEN, deleted_at=(), now=NOW)
        lasts.add(result.go[-1].workload)
    assert len(lasts) > 1


def test_now_must_be_timezone_aware() -> None:
    with pytest.raises(ValueError, match="timezone-aware"):
        plan([workload("a")], now=NOW.replace(tzinfo=None))
