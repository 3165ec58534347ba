"""What each guardrail hold says, word for word, and that it names the workload it holds: the
sentences ``autoroll plan``, the log and the Events carry (``autoroll.core.holds``,
``autoroll.core.budget``). Which clause holds is tested in ``test_guardrails.py`` and
``test_guardrails_budget.py``; this file pins what it tells the operator."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import timedelta
from typing import Any

import pytest

from autoroll.core.budget import Deletion
from autoroll.core.holds import Hold, HoldReason
from autoroll.core.images import TagRef
from autoroll.core.model import Digest, Enrolled, Unknown
from autoroll.core.policy import MIN_AGE, PAUSED, WINDOW, Guardrails
from autoroll.core.sightings import observe_targets
from autoroll.core.windows import parse_windows
from tests.support import guardrail_plans as plans

NOW, OPEN, REF, SIDE = plans.NOW, plans.OPEN, plans.REF, plans.SIDE
OLD, NEW, SIDE_OLD, SIDE_NEW = plans.OLD, plans.NEW, plans.SIDE_OLD, plans.SIDE_NEW

SLOW = replace(OPEN, min_age=timedelta(minutes=10))


def only_hold(workloads: Sequence[Enrolled], guardrails: Guardrails = OPEN, **kwargs: Any) -> Hold:
    [hold] = plans.plan(workloads, guardrails, **kwargs).holds
    return hold


def test_every_unreadable_annotation_is_listed_and_the_workload_named() -> None:
    hold = only_hold([plans.workload("a", annotations={PAUSED: "x", MIN_AGE: "y"})])
    assert (hold.workload, hold.reason) == ("shop/deployment/a", HoldReason.INVALID_POLICY)
    assert hold.detail == (
        f"annotation {PAUSED}='x': expected true or false;"
        f" annotation {MIN_AGE}='y': expected a duration such as 90s, 10m, 1h30m or 2d"
        " (units d, h, m, s, in that order), or a whole number of seconds;"
        " not rolled until fixed"
    )


def test_a_cluster_wide_pause_names_its_setting() -> None:
    hold = only_hold([plans.workload("a")], replace(OPEN, paused=True))
    assert (hold.workload, hold.detail) == (
        "shop/deployment/a",
        "paused cluster-wide (ROLL_PAUSED=true)",
    )


def test_two_young_tags_are_both_named_and_it_rolls_when_the_younger_is_old_enough() -> None:
    two = plans.workload("a", [plans.pod("a-1", OLD, side=SIDE_OLD)], side=True)
    both = plans.sighted(NOW - timedelta(minutes=4), side=NOW - timedelta(minutes=1))
    hold = only_hold([two], SLOW, sightings=both)
    rolls_at = (NOW + timedelta(minutes=9)).isoformat(timespec="seconds")
    assert hold.detail == (
        f"{REF} has been {NEW.short} for 4m; {SIDE} has been {SIDE_NEW.short} for 1m,"
        f" less than its min-age of 10m; rolls at {rolls_at} (in 9m)"
    )
    assert hold.until == NOW + timedelta(minutes=9)


def test_a_tag_never_seen_has_no_age_and_no_time_to_roll() -> None:
    """The side tag resolves, but no pass has seen it as a target yet: its age is unknown."""
    two = plans.workload("a", [plans.pod("a-1", OLD, side=SIDE_OLD)], side=True)
    hold = only_hold([two], SLOW, sightings=plans.sighted(NOW - timedelta(minutes=4)))
    assert hold.detail == (
        f"{REF} has been {NEW.short} for 4m; {SIDE}: the age of its digest is unknown,"
        " less than its min-age of 10m"
    )
    assert hold.until is None


def test_an_unknown_tag_first_does_not_hide_the_young_one_after_it() -> None:
    two = plans.workload("a", [plans.pod("a-1", OLD, side=SIDE_OLD)], side=True)
    resolved: dict[TagRef, Digest | Unknown] = {REF: Unknown("offline"), SIDE: SIDE_NEW}
    seen = observe_targets({}, {SIDE: SIDE_NEW}, now=NOW - timedelta(minutes=1))
    hold = only_hold([two], SLOW, sightings=seen, resolved=resolved)
    assert hold.detail == (
        f"{REF}: the age of its digest is unknown; {SIDE} has been {SIDE_NEW.short} for 1m,"
        " less than its min-age of 10m"
    )


def test_a_namespace_at_its_share_of_deletions_is_told_when_one_frees() -> None:
    """A share of 2 of 4: the namespace's two deletions in the period hold it, until the older
    of them leaves the period (not until the cluster-wide count would free)."""
    recent = [
        Deletion(NOW - timedelta(seconds=50), "shop"),
        Deletion(NOW - timedelta(seconds=20), "shop"),
    ]
    hold = only_hold(
        [plans.workload("a")], plans.budget(deletions=4, shares=True), deleted_at=recent
    )
    assert (hold.workload, hold.reason, hold.until) == (
        "shop/deployment/a",
        HoldReason.BUDGET,
        NOW + timedelta(seconds=10),
    )
    assert hold.detail == (
        "namespace shop has had 2 of its share of 2 deletions in the last 1m"
        " (ROLL_BUDGET_DELETIONS_PER_NAMESPACE)"
    )


@pytest.mark.parametrize(("in_flight", "holders"), [(2, ["m"]), (4, ["m1", "m2"])])
def test_a_namespace_at_its_share_of_slots_names_who_holds_them(
    in_flight: int, holders: list[str]
) -> None:
    """The share is half the slots: one of two, two of four, each holder named."""
    busy = [plans.half_rolled(name) for name in holders]
    result = plans.plan(
        [*busy, plans.workload("a")], plans.budget(in_flight=in_flight, shares=True)
    )
    assert sorted(plans.going(result)) == holders
    [hold] = result.holds
    named = ", ".join(f"shop/deployment/{name}" for name in holders)
    assert (hold.workload, hold.detail) == (
        "shop/deployment/a",
        f"namespace shop has {len(holders)} of its share of {len(holders)} workloads mid-roll"
        f" ({named}; ROLL_BUDGET_IN_FLIGHT_PER_NAMESPACE)",
    )


@pytest.mark.parametrize(
    ("holders", "named"),
    [
        (3, "shop/deployment/m1, shop/deployment/m2, shop/deployment/m3"),
        (4, "shop/deployment/m1, shop/deployment/m2, shop/deployment/m3 and 1 more"),
    ],
)
def test_up_to_three_slot_holders_are_named_the_rest_counted(holders: int, named: str) -> None:
    busy = [plans.half_rolled(f"m{i}") for i in range(1, holders + 1)]
    hold = only_hold([*busy, plans.workload("a")], plans.budget(in_flight=holders))
    assert hold.detail == (
        f"{holders} of {holders} workloads mid-roll ({named}; ROLL_BUDGET_IN_FLIGHT)"
    )


def test_the_sighting_of_the_container_that_is_stale_orders_the_deletion() -> None:
    """``x`` is stale only on its side tag, pushed a minute ago; ``y`` on the app tag, pushed
    an hour ago: ``y`` goes first, whatever ``x``'s other (current) container says."""
    x = plans.workload("x", [plans.pod("x-1", NEW, side=SIDE_OLD)], side=True)
    y = plans.workload("y", [plans.pod("y-1", OLD)])
    seen = plans.sighted(NOW - timedelta(hours=1), side=NOW - timedelta(minutes=1))
    assert plans.going(plans.plan([x, y], plans.budget(deletions=1), sightings=seen)) == ["y"]


def test_a_pause_annotation_names_itself() -> None:
    hold = only_hold([plans.workload("a", annotations={PAUSED: "true"})])
    assert (hold.workload, hold.detail) == (
        "shop/deployment/a",
        "paused by annotation autoroll.aethnet.se/paused",
    )


@pytest.mark.parametrize(
    ("annotations", "guardrails", "source"),
    [
        ({WINDOW: "Sat 02:00-04:00 UTC"}, OPEN, "annotation autoroll.aethnet.se/window"),
        ({}, replace(OPEN, windows=parse_windows("Sat 02:00-04:00 UTC")), "ROLL_WINDOW"),
    ],
)
def test_a_closed_window_names_where_it_comes_from_and_when_it_opens(
    annotations: dict[str, str], guardrails: Guardrails, source: str
) -> None:
    hold = only_hold([plans.workload("a", annotations=annotations)], guardrails)
    assert (hold.workload, hold.detail) == (
        "shop/deployment/a",
        f"outside its window Sat 02:00-04:00 UTC ({source}); next opens Sat 2026-12-12"
        " 02:00 UTC, 2026-12-12T02:00:00+00:00 (in 4d14h)",
    )
