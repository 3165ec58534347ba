"""The guardrails planner (autoroll.core.guardrails.plan_rolls), clause by clause.

Decisions come from the real ``decide`` over small workloads, so "stale", "settled" and
"mid-roll" mean what they mean in a pass. Each test breaks when its clause is removed.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from autoroll.core.budget import Deletion, is_mid_roll, pods_started
from autoroll.core.decide import Decision, Sighting, decide
from autoroll.core.guardrails import RollPlan, plan_rolls
from autoroll.core.holds import HoldReason
from autoroll.core.images import TagRef
from autoroll.core.model import (
    ContainerStatusView,
    ContainerView,
    Digest,
    Enrolled,
    ImageContent,
    PodView,
    Unknown,
)
from autoroll.core.policy import MIN_AGE, PAUSED, WINDOW, Guardrails
from autoroll.core.sightings import observe_targets
from autoroll.core.windows import parse_windows
from tests.support.views import deployment_view

HOST = "forgejo.example"
REF = TagRef(HOST, "team/app", "latest")
SIDE = TagRef(HOST, "team/side", "v1")
OLD, NEW, SIDE_OLD, SIDE_NEW = (Digest("sha256:" + c * 64) for c in "0123")
CONTENTS = {
    d: ImageContent(frozenset({Digest("sha256:" + c * 64)}))
    for d, c in zip((OLD, NEW, SIDE_OLD, SIDE_NEW), "abcd", strict=True)
}
NOW = datetime(2026, 12, 7, 12, 0, tzinfo=UTC)  # a Monday
LONG_AGO = NOW - timedelta(days=1)  # when the targets were first seen
BORN = NOW - timedelta(days=2)  # when the old pods were created
#: No budget, no pause, no window, no min-age, no health window (so no first workload
#: proving a digest: test_rollorder.py): only the clause under test is switched on.
OPEN = Guardrails(deletions_per_period=0, in_flight=0, healthy=timedelta(0))


def pod(
    name: str,
    digest: Digest = OLD,
    *,
    created: datetime = BORN,
    ready: bool = True,
    deleting: bool = False,
    side: Digest | None = None,
) -> PodView:
    statuses = [ContainerStatusView("app", image_id=f"{HOST}/team/app@{digest}", ready=ready)]
    containers = [ContainerView("app", f"{HOST}/team/app:latest")]
    if side is not None:
        statuses.append(ContainerStatusView("side", image_id=f"{HOST}/team/side@{side}"))
        containers.append(ContainerView("side", f"{HOST}/team/side:v1"))
    return PodView(
        namespace="shop",
        name=name,
        uid=f"uid-{name}",
        created_at=created,
        ready=ready,
        deleting=deleting,
        containers=tuple(containers),
        statuses=tuple(statuses),
    )


def workload(
    name: str,
    pods: Sequence[PodView] | None = None,
    *,
    annotations: Mapping[str, str] | None = None,
    side: bool = False,
) -> Enrolled:
    pods = list(pods) if pods is not None else [pod(f"{name}-1")]
    containers = [ContainerView("app", f"{HOST}/team/app:latest")]
    if side:
        containers.append(ContainerView("side", f"{HOST}/team/side:v1"))
    view = deployment_view(
        namespace="shop",
        name=name,
        replicas=len([p for p in pods if not p.deleting]),
        containers=tuple(containers),
        annotations=tuple(sorted((annotations or {}).items())),
    )
    return Enrolled(view, tuple(pods))


def sighted(seen_at: datetime = LONG_AGO, **more: datetime) -> dict[TagRef, Sighting]:
    found = {REF: Sighting(NEW, seen_at)}
    if "side" in more:
        found[SIDE] = Sighting(SIDE_NEW, more["side"])
    return found


def decided(
    workloads: Sequence[Enrolled],
    sightings: Mapping[TagRef, Sighting],
    resolved: Mapping[TagRef, Digest | Unknown] | None = None,
) -> list[tuple[Enrolled, Decision]]:
    answers = resolved if resolved is not None else {REF: NEW, SIDE: SIDE_NEW}
    return [
        (
            e,
            decide(
                workload=e.workload,
                pods=e.pods,
                registries={HOST},
                resolved=answers,
                sightings=sightings,
                children={NEW: frozenset(), SIDE_NEW: frozenset()},
                contents=CONTENTS,
            ),
        )
        for e in workloads
    ]


def plan(
    workloads: Sequence[Enrolled],
    guardrails: Guardrails = OPEN,
    *,
    sightings: Mapping[TagRef, Sighting] | None = None,
    deleted_at: Sequence[datetime] = (),
    now: datetime = NOW,
    resolved: Mapping[TagRef, Digest | Unknown] | None = None,
) -> RollPlan:
    seen = sightings if sightings is not None else sighted()
    return plan_rolls(
        items=decided(workloads, seen, resolved),
        sightings=seen,
        guardrails=guardrails,
        deleted_at=deleted_at,
        now=now,
    )


def going(result: RollPlan) -> list[str]:
    return [a.workload for a in result.go]


def held(result: RollPlan) -> dict[str, HoldReason]:
    return {h.action.workload: h.reason for h in result.holds}


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


# --- the cluster-wide budget: deletions per period ------------------------------------------


def budget(
    deletions: int = 0, in_flight: int = 0, seconds: int = 60, *, shares: bool = False
) -> Guardrails:
    """The cluster-wide budget; the per-namespace shares (every workload here is in one
    namespace) only with ``shares``, their own table below."""
    off = {} if shares else {"deletions_per_namespace": 0, "in_flight_per_namespace": 0}
    return Guardrails(
        deletions_per_period=deletions,
        period=timedelta(seconds=seconds),
        in_flight=in_flight,
        healthy=timedelta(0),  # every workload at once: the budget alone orders them
        **off,  # type: ignore[arg-type]
    )


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


def test_zero_means_unlimited() -> None:
    many = [workload(f"w{i}") for i in range(50)]
    result = plan(many, budget(deletions=0, in_flight=0), deleted_at=[NOW] * 1000)
    assert len(result.go) == 50
    assert result.budget.remaining is None


# --- the cluster-wide budget: workloads mid-roll -----------------------------------------------


def half_rolled(name: str) -> Enrolled:
    """Three replicas, one already on the new digest: mid-roll."""
    return workload(name, [pod(f"{name}-1"), pod(f"{name}-2"), pod(f"{name}-3", NEW, created=NOW)])


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
