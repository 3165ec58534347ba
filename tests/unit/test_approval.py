"""The approved digest (autoroll.core.approval): the target once its roll may proceed, the
digest the workload was last rolled to while the target is held, nothing when neither is
known. Decisions come from the real ``decide`` and plans from the real ``plan_rolls``; the
properties check approval against the planner itself: never the target while the
guardrails hold it, never a digest a hold names."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from autoroll.core.approval import (
    Approval,
    HeldBy,
    PlanOutcome,
    approve_workload,
    confirm,
    previous_digest,
)
from autoroll.core.decide import Decision, Sighting, decide
from autoroll.core.guardrails import plan_rolls
from autoroll.core.holds import HoldReason
from autoroll.core.images import TagRef
from autoroll.core.model import (
    ContainerView,
    Digest,
    Enrolled,
    PodView,
    Unknown,
)
from autoroll.core.policy import MIN_AGE, PAUSED, WINDOW, Guardrails, workload_policy
from tests.support.guardrail_plans import BORN, HOST, NEW, NOW, OLD, REF, own_configs
from tests.support.views import deployment_view, pod_view

IMAGE = f"{HOST}/team/app:latest"
OLDER = Digest("sha256:" + "2" * 64)
CONTENTS = own_configs(OLD, NEW, OLDER)
OPEN = Guardrails(deletions_per_period=0, in_flight=0)


def pod(
    name: str,
    digest: Digest = OLD,
    *,
    created: datetime = BORN,
    pinned: bool = False,
    repository: str = "team/app",
    config: bool = False,
) -> PodView:
    image = f"{IMAGE}@{digest}" if pinned else IMAGE
    image_id = str(digest) if config else f"{HOST}/{repository}@{digest}"
    return pod_view(name, image, image_id, namespace="shop", created=created)


def workload(
    pods: Sequence[PodView] = (), *, annotations: Mapping[str, str] | None = None
) -> Enrolled:
    pods = list(pods) or [pod("web-1")]
    view = deployment_view(
        "shop",
        "web",
        len(pods),
        (ContainerView("app", IMAGE),),
        annotations=tuple(sorted((annotations or {}).items())),
    )
    return Enrolled(view, tuple(pods))


def decided(
    enrolled: Enrolled, resolved: Digest | Unknown = NEW, seen: datetime | None = None
) -> tuple[Decision, dict[TagRef, Sighting]]:
    sightings = {REF: Sighting(resolved, seen)} if isinstance(resolved, Digest) and seen else {}
    decision = decide(
        workload=enrolled.workload,
        pods=enrolled.pods,
        registries={HOST},
        resolved={REF: resolved},
        sightings=sightings,
        children={NEW: frozenset(), OLD: frozenset()},
        contents=CONTENTS,
    )
    return decision, sightings


def approve(
    enrolled: Enrolled,
    guardrails: Guardrails = OPEN,
    *,
    resolved: Digest | Unknown = NEW,
    seen: datetime | None = NOW - timedelta(days=1),
    planned: PlanOutcome | None = None,
    holds: object | None = None,
    now: datetime = NOW,
) -> Approval:
    decision, sightings = decided(enrolled, resolved, seen)
    if planned is None:
        plan = plan_rolls(
            items=[(enrolled, decision)],
            sightings=sightings,
            guardrails=guardrails,
            deleted_at=(),
            now=now,
        )
        hold = plan.hold_for(enrolled.workload.key)
        planned = (
            PlanOutcome(let_go=True)
            if plan.go
            else PlanOutcome(held=hold.reason.value, detail=hold.detail, until=hold.until)
            if hold
            else PlanOutcome()
        )
    kwargs = {"holds": holds} if holds is not None else {}
    (approval,) = approve_workload(
        enrolled=enrolled,
        decision=decision,
        policy=workload_policy(dict(enrolled.workload.annotations), defaults=guardrails),
        guardrails=guardrails,
        sightings=sightings,
        now=now,
        planned=planned,
        **kwargs,  # type: ignore[arg-type]
    )
    return approval


class Quarantine:
    """A DigestHolds, as issue 26's quarantine will be wired in."""

    def __init__(self, *digests: Digest) -> None:
        self.digests = set(digests)

    def held(self, ref: TagRef, digest: Digest) -> str | None:
        return f"{digest.short} is quarantined for {ref}" if digest in self.digests else None


# --- the target, once its roll may proceed --------------------------------------------------


def test_with_nothing_held_the_target_is_approved() -> None:
    approval = approve(workload())
    assert (approval.digest, approval.held_by, approval.needs_presence) == (NEW, None, False)


def test_a_workload_whose_pods_all_run_the_target_is_approved_on_it() -> None:
    approval = approve(workload([pod("web-1", NEW)]), Guardrails(paused=False))
    assert approval.digest == NEW


def test_a_roll_under_way_is_approved_on_its_target_even_over_budget() -> None:
    # One pod runs the target already: its replacements must get it too.
    pods = [pod("web-1", NEW, pinned=True), pod("web-2", OLD)]
    approval = approve(workload(pods), planned=PlanOutcome(held="budget", detail="spent"))
    assert approval.digest == NEW


def test_the_plan_letting_the_first_deletion_go_approves_the_target() -> None:
    approval = approve(workload(), planned=PlanOutcome(let_go=True))
    assert approval.digest == NEW


# --- held: the digest it was last rolled to -------------------------------------------------


@pytest.mark.parametrize(
    ("guardrails", "annotations", "seen", "held_by"),
    [
        (Guardrails(deletions_per_period=0, in_flight=0, paused=True), {}, None, HeldBy.PAUSED),
        (OPEN, {PAUSED: "true"}, None, HeldBy.PAUSED),
        (OPEN, {PAUSED: "maybe"}, None, HeldBy.INVALID_POLICY),
        (OPEN, {"autoroll.aethnet.se/mni-age": "1h"}, None, HeldBy.INVALID_POLICY),
        (OPEN, {WINDOW: "Sat 02:00-04:00 UTC"}, None, HeldBy.OUTSIDE_WINDOW),
        (OPEN, {MIN_AGE: "1h"}, NOW - timedelta(minutes=10), HeldBy.MATURING),
        (OPEN, {MIN_AGE: "1h"}, None, HeldBy.MATURING),  # age unknown: not old enough
    ],
)
def test_a_held_target_keeps_new_pods_on_the_digest_last_rolled_to(
    guardrails: Guardrails, annotations: Mapping[str, str], seen: datetime | None, held_by: HeldBy
) -> None:
    approval = approve(workload(annotations=annotations), guardrails, seen=seen)
    assert (approval.digest, approval.target, approval.held_by) == (OLD, NEW, held_by)
    assert approval.needs_presence


def test_the_maturing_hold_says_until_when() -> None:
    approval = approve(workload(annotations={MIN_AGE: "1h"}), seen=NOW - timedelta(minutes=10))
    assert approval.until == NOW + timedelta(minutes=50)
    matured = approve(workload(annotations={MIN_AGE: "1h"}), seen=NOW - timedelta(hours=1))
    assert matured.digest == NEW


def test_a_closed_window_says_when_it_opens() -> None:
    approval = approve(workload(annotations={WINDOW: "Sat 02:00-04:00 UTC"}))
    assert approval.until == datetime(2026, 12, 12, 2, 0, tzinfo=UTC)


def test_a_budget_hold_before_the_roll_began_keeps_the_old_digest() -> None:
    guardrails = Guardrails(deletions_per_period=1, in_flight=0)
    decision, sightings = decided(workload(), NEW, NOW - timedelta(days=1))
    plan = plan_rolls(
        items=[(workload(), decision)],
        sightings=sightings,
        guardrails=guardrails,
        deleted_at=[NOW - timedelta(seconds=1)],
        now=NOW,
    )
    assert plan.holds[0].reason is HoldReason.BUDGET
    approval = approve(workload(), guardrails, planned=PlanOutcome(held="budget", detail="1 of 1"))
    assert (approval.digest, approval.held_by) == (OLD, HeldBy.BUDGET)


def test_a_roll_that_has_not_begun_waits_on_the_old_digest() -> None:
    # Not settled (a pod not Ready), so no deletion was chosen: its roll has not begun.
    approval = approve(workload(), planned=PlanOutcome())
    assert (approval.digest, approval.held_by) == (OLD, HeldBy.WAITING)


def test_a_quarantined_target_is_held_through_the_holds_hook() -> None:
    approval = approve(workload(), holds=Quarantine(NEW))
    assert (approval.digest, approval.held_by) == (OLD, HeldBy.QUARANTINED)


def test_a_quarantined_previous_digest_is_never_pinned_to() -> None:
    pods = [pod("web-1", OLD), pod("web-2", OLDER, created=BORN - timedelta(days=1))]
    approval = approve(workload(pods), Guardrails(paused=True), holds=Quarantine(OLD))
    assert approval.digest == OLDER


def test_an_unknown_registry_answer_pins_nothing() -> None:
    approval = approve(workload(), resolved=Unknown("timeout"))
    assert (approval.digest, approval.held_by) == (None, HeldBy.REGISTRY_UNKNOWN)


# --- what the workload was last rolled to ---------------------------------------------------


def test_previous_prefers_most_pods_then_the_newest_pod() -> None:
    pods = [
        pod("a", OLDER, created=BORN),
        pod("b", OLD, created=BORN + timedelta(hours=1)),
        pod("c", OLDER, created=BORN + timedelta(minutes=1)),
    ]
    assert approve(workload(pods), Guardrails(paused=True)).digest == OLDER
    tie = [pod("a", OLDER, created=BORN), pod("b", OLD, created=BORN + timedelta(hours=1))]
    assert approve(workload(tie), Guardrails(paused=True)).digest == OLD


def test_a_pinned_pod_says_what_it_runs_whatever_the_runtime_names() -> None:
    # containerd may name another repository's manifest of the same config; the pin is exact.
    pinned = pod("a", OLD, pinned=True, repository="mirror/app")
    assert approve(workload([pinned]), Guardrails(paused=True)).digest == OLD


@pytest.mark.parametrize(
    "running",
    [
        pod("a", OLD, repository="mirror/app"),  # another repository's name: not pullable here
        pod("a", OLD, config=True),  # a config ID is not a manifest
    ],
)
def test_a_digest_that_cannot_be_pulled_from_the_tag_s_repository_is_not_previous(
    running: PodView,
) -> None:
    approval = approve(workload([running]), Guardrails(paused=True))
    assert approval.digest is None
    assert "no pod says what it was last rolled to" in approval.detail


def test_the_held_target_itself_is_never_previous() -> None:
    decision, _ = decided(workload([pod("a", NEW)]))
    assert previous_digest(REF, decision.containers, [pod("a", NEW)], target=NEW) is None


# --- presence in the registry ---------------------------------------------------------------


def test_a_held_back_digest_the_registry_no_longer_holds_is_not_pinned() -> None:
    approval = approve(workload(), Guardrails(paused=True))
    assert confirm(approval, True) == approval
    gone = confirm(approval, False)
    assert (gone.digest, gone.needs_presence) == (None, False)
    assert "no longer holds it" in gone.detail
    assert confirm(approval, None).digest is None
    on_target = approve(workload())
    assert confirm(on_target, False) == on_target  # the target needs no such check


# --- the properties -------------------------------------------------------------------------

_POLICY_REASONS = {
    HoldReason.INVALID_POLICY,
    HoldReason.PAUSED,
    HoldReason.OUTSIDE_WINDOW,
    HoldReason.MATURING,
}


@settings(max_examples=150, deadline=None)
@given(
    digests=st.lists(st.sampled_from([OLD, NEW, OLDER]), min_size=1, max_size=4),
    pinned=st.lists(st.booleans(), min_size=4, max_size=4),
    paused=st.booleans(),
    annotations=st.sampled_from(
        [
            {},
            {PAUSED: "true"},
            {WINDOW: "Sat 02:00-04:00 UTC"},
            {WINDOW: "Mon 11:00-13:00 UTC"},
            {MIN_AGE: "1h"},
            {MIN_AGE: "10m"},
            {PAUSED: "nope"},
        ]
    ),
    age=st.sampled_from([None, timedelta(minutes=5), timedelta(minutes=30), timedelta(hours=2)]),
    budget=st.sampled_from([0, 1]),
    quarantined=st.sets(st.sampled_from([OLD, NEW, OLDER])),
)
def test_never_the_target_while_the_guardrails_hold_it_never_a_digest_a_hold_names(
    *,
    digests: list[Digest],
    pinned: list[bool],
    paused: bool,
    annotations: dict[str, str],
    age: timedelta | None,
    budget: int,
    quarantined: set[Digest],
) -> None:
    pods = [
        pod(f"web-{i}", d, created=BORN + timedelta(minutes=i), pinned=pinned[i])
        for i, d in enumerate(digests)
    ]
    enrolled = workload(pods, annotations=annotations)
    guardrails = Guardrails(deletions_per_period=budget, in_flight=0, paused=paused)
    seen = NOW - age if age is not None else None
    decision, sightings = decided(enrolled, NEW, seen)
    plan = plan_rolls(
        items=[(enrolled, decision)],
        sightings=sightings,
        guardrails=guardrails,
        deleted_at=[NOW - timedelta(seconds=1)] if budget else [],
        now=NOW,
    )
    approval = approve(
        enrolled,
        guardrails,
        seen=seen,
        holds=Quarantine(*quarantined),
        planned=PlanOutcome(let_go=bool(plan.go))
        if plan.go
        else PlanOutcome(held=plan.holds[0].reason.value)
        if plan.holds
        else PlanOutcome(),
    )
    # Approval's own rungs, even with the plan at its most permissive (the deletion let go):
    # whatever the planner holds by policy, no new pod may pull either.
    permissive = approve(
        enrolled, guardrails, seen=seen, holds=Quarantine(*quarantined), planned=PlanOutcome(True)
    )
    hold = plan.hold_for(enrolled.workload.key)
    if hold is not None and hold.reason in _POLICY_REASONS:
        assert approval.digest != NEW
        assert permissive.digest != NEW
    if approval.digest is not None:
        assert approval.digest not in quarantined
        if approval.digest != NEW:
            # Held back: only a digest one of the workload's own pods runs.
            assert approval.digest in digests
            assert approval.needs_presence
    if NEW in quarantined:
        assert approval.digest != NEW


def test_a_workload_already_on_the_target_is_not_held_by_its_window_or_delay() -> None:
    closed = {WINDOW: "Sat 02:00-04:00 UTC", MIN_AGE: "1h"}
    approval = approve(workload([pod("web-1", NEW)], annotations=closed), seen=None)
    assert (approval.digest, approval.held_by) == (NEW, None)
    # A hold on the digest itself (the quarantine) still counts: nothing is pinned to it.
    quarantined = approve(workload([pod("web-1", NEW)]), holds=Quarantine(NEW))
    assert quarantined.digest is None
