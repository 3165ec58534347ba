"""The order a digest reaches the workloads on its tag (autoroll.core.rollorder), through the
planner (plan_rolls): quarantine, waves, a first workload that proves the digest.

Decisions come from the real ``decide`` with a health window, so "done", "proven" and
"inside its window" mean what they mean in a pass. Each row breaks when its rule is removed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from autoroll.core.decide import Decision, Sighting, decide
from autoroll.core.guardrails import RollPlan, plan_rolls
from autoroll.core.holds import HoldReason
from autoroll.core.model import (
    ContainerStatusView,
    ContainerView,
    Digest,
    Enrolled,
    PodView,
)
from autoroll.core.policy import HEALTH_WINDOW, PAUSED, WAVE, Guardrails, workload_policy
from autoroll.core.quarantine import (
    QuarantineBook,
    QuarantineEntry,
    QuarantineKey,
    QuarantineReason,
)
from autoroll.core.rollorder import onto, standing
from tests.support.guardrail_plans import BORN, HOST, NEW, NOW, OLD, REF, own_configs
from tests.support.views import deployment_view, pod_view

IMAGE = f"{HOST}/team/app:latest"
KEY = QuarantineKey.named(HOST, "team/app", "latest")
OTHER = Digest("sha256:" + "2" * 64)
CONTENTS = own_configs(OLD, NEW, OTHER)
WINDOW = timedelta(seconds=30)
#: No budget, no min-age: only the order is under test; a 30 s health window.
ORDERED = Guardrails(deletions_per_period=0, in_flight=0, healthy=WINDOW)
AT_ONCE = Guardrails(deletions_per_period=0, in_flight=0, healthy=timedelta(0))


def pod(name: str, digest: Digest = OLD, *, ready_for: timedelta = timedelta(days=1)) -> PodView:
    """A Ready pod on ``digest``, Ready for ``ready_for``."""
    return pod_view(
        name,
        IMAGE,
        f"{HOST}/team/app@{digest}",
        namespace="shop",
        created=min(BORN, NOW - ready_for),
        ready_changed_at=NOW - ready_for,
    )


def workload(name: str, pods: Sequence[PodView] | None = None, **annotations: str) -> Enrolled:
    pods = list(pods) if pods is not None else [pod(f"{name}-1"), pod(f"{name}-2")]
    view = deployment_view(
        namespace="shop",
        name=name,
        replicas=len(pods),
        containers=(ContainerView("app", IMAGE),),
        annotations=tuple(sorted(annotations.items())),
    )
    return Enrolled(view, tuple(pods))


def waved(name: str, wave: int, pods: Sequence[PodView] | None = None) -> Enrolled:
    return workload(name, pods, **{WAVE: str(wave)})


def decided(
    items: Sequence[Enrolled], guardrails: Guardrails = ORDERED
) -> list[tuple[Enrolled, Decision]]:
    found = []
    for item in items:
        policy = workload_policy(dict(item.workload.annotations), defaults=guardrails)
        decision = decide(
            workload=item.workload,
            pods=item.pods,
            registries={HOST},
            resolved={REF: NEW},
            sightings={REF: Sighting(NEW, NOW - timedelta(hours=1))},
            children={NEW: frozenset()},
            contents=CONTENTS,
            now=NOW,
            health=policy.health_window,
        )
        found.append((item, decision))
    return found


def plan(
    items: Sequence[Enrolled],
    guardrails: Guardrails = ORDERED,
    *,
    book: QuarantineBook | None = None,
    others: Sequence[Enrolled] = (),
) -> RollPlan:
    return plan_rolls(
        items=decided(items, guardrails),
        sightings={REF: Sighting(NEW, NOW - timedelta(hours=1))},
        guardrails=guardrails,
        deleted_at=[],
        now=NOW,
        quarantine=book or QuarantineBook(),
        others=decided(others, guardrails),
    )


def going(result: RollPlan) -> list[str]:
    return sorted(a.workload for a in result.go)


def held(result: RollPlan) -> dict[str, HoldReason]:
    return {h.action.workload: h.reason for h in result.holds}


def quarantined(digest: Digest = NEW, *, cleared: bool = False) -> QuarantineBook:
    entry = QuarantineEntry(
        KEY,
        digest,
        QuarantineReason.FAILED_HEALTH_WINDOW,
        "shop/deployment/canary",
        "canary-3",
        "replacement canary-3 restarted 1 time(s)",
        NOW - timedelta(minutes=5),
        NOW if cleared else None,
    )
    return QuarantineBook({KEY: entry}, "7")


# --- a new digest proves itself on one workload first ---------------------------------------


def test_a_new_digest_goes_to_one_workload_first_the_others_wait_unproven() -> None:
    result = plan([workload(n) for n in "abc"])
    assert len(result.go) == 1
    first = result.go[0].workload
    assert sorted(held(result).values()) == [HoldReason.UNPROVEN] * 2
    hold = result.holds[0]
    assert f"it proves itself on shop/deployment/{first} first" in hold.detail
    assert hold.until is None


def test_while_the_first_replacement_is_inside_its_window_the_others_wait() -> None:
    canary = workload("a", [pod("a-1"), pod("a-3", NEW, ready_for=timedelta(seconds=10))])
    result = plan([canary, workload("b"), workload("c")])
    assert result.go == ()
    assert held(result) == {"b": HoldReason.UNPROVEN, "c": HoldReason.UNPROVEN}
    assert "on shop/deployment/a first" in result.holds[0].detail


def pulling(name: str) -> PodView:
    """A replacement made, its image still being pulled: no digest reported yet."""
    made = pod(name, ready_for=timedelta(seconds=1))
    status = ContainerStatusView("app", image_id="", ready=False)
    return replace(made, ready=False, statuses=(status,), ready_changed_at=None)


def test_a_workload_whose_replacement_has_no_digest_yet_rolls_the_digest_already() -> None:
    """Seen on the real node: the pass after the first deletion finds the replacement still
    pulling (no digest) or not made yet (the deleted pod terminating): the first workload
    must still count as rolling, or a second one starts."""
    for coming in (pulling("a-3"), replace(pod("a-1"), deleting=True)):
        first = workload("a", [coming, pod("a-2")])
        result = plan([first, workload("b"), workload("c")])
        assert result.go == (), coming
        assert held(result) == {"b": HoldReason.UNPROVEN, "c": HoldReason.UNPROVEN}, coming


def test_once_a_replacement_has_run_through_its_window_the_digest_is_proven() -> None:
    canary = workload("a", [pod("a-1"), pod("a-3", NEW, ready_for=timedelta(seconds=31))])
    result = plan([canary, workload("b"), workload("c")])
    assert going(result) == ["a", "b", "c"]


def test_a_workload_already_on_the_digest_goes_on_at_its_own_pace() -> None:
    """Two workloads found on the digest (a restart mid-roll, a scale-up): neither waits
    for the other to prove it; each one's own window paces it."""
    a = workload("a", [pod("a-1"), pod("a-3", NEW, ready_for=timedelta(seconds=31))])
    b = workload("b", [pod("b-1"), pod("b-3", NEW, ready_for=timedelta(seconds=5))])
    result = plan([a, b, workload("c")])
    # a's replacement proved it; b's own replacement is inside b's window (decide waits)
    assert going(result) == ["a", "c"]


def test_with_no_health_window_every_workload_goes_at_once() -> None:
    assert going(plan([workload(n) for n in "abc"], AT_ONCE)) == ["a", "b", "c"]


def test_a_workload_whose_own_window_is_off_does_not_wait_for_proof() -> None:
    off = workload("b", None, **{HEALTH_WINDOW: "0"})
    canary = workload("a", [pod("a-1"), pod("a-3", NEW, ready_for=timedelta(seconds=10))])
    result = plan([canary, off])
    assert going(result) == ["b"]


def test_a_fresh_read_s_plan_sees_the_rest_of_the_pass() -> None:
    """The plan again over one workload right before its DELETE: another workload of the
    pass already on the digest, inside its window, still holds it."""
    canary = workload("a", [pod("a-1"), pod("a-3", NEW, ready_for=timedelta(seconds=10))])
    alone = plan([workload("b")])
    assert going(alone) == ["b"]
    with_pass = plan([workload("b")], others=[canary])
    assert held(with_pass) == {"b": HoldReason.UNPROVEN}


# --- waves ------------------------------------------------------------------------------------


def test_wave_one_waits_until_every_workload_of_wave_zero_is_done() -> None:
    result = plan([waved("a", 0), waved("b", 1), waved("c", 2)], AT_ONCE)
    assert going(result) == ["a"]
    assert held(result) == {"b": HoldReason.WAVE, "c": HoldReason.WAVE}
    detail = {h.action.workload: h.detail for h in result.holds}
    assert "wave 1 (autoroll.aethnet.se/wave)" in detail["b"]
    assert detail["b"].endswith("shop/deployment/a")
    assert "shop/deployment/a, shop/deployment/b" in detail["c"]


def test_a_wave_is_done_when_every_pod_runs_the_digest_settled_and_past_its_window() -> None:
    done = waved("a", 0, [pod("a-1", NEW, ready_for=timedelta(minutes=5))])
    result = plan([done, waved("b", 1), waved("c", 2)])
    assert going(result) == ["b"]
    assert held(result) == {"c": HoldReason.WAVE}


def test_a_wave_inside_its_window_is_not_done() -> None:
    rolled = waved("a", 0, [pod("a-1", NEW, ready_for=timedelta(seconds=10))])
    result = plan([rolled, waved("b", 1)])
    assert held(result) == {"b": HoldReason.WAVE}


def test_a_held_earlier_wave_holds_the_later_ones() -> None:
    paused = workload("a", None, **{WAVE: "0", PAUSED: "true"})
    result = plan([paused, waved("b", 1)], AT_ONCE)
    assert held(result) == {"a": HoldReason.PAUSED, "b": HoldReason.WAVE}


def test_workloads_of_one_wave_go_together_once_the_digest_is_proven() -> None:
    done = waved("a", 0, [pod("a-1", NEW, ready_for=timedelta(minutes=5))])
    result = plan([done, waved("b", 1), waved("c", 1), waved("d", 2)])
    assert going(result) == ["b", "c"]  # a's pods proved the digest
    assert held(result) == {"d": HoldReason.WAVE}


def test_without_waves_every_workload_is_wave_zero() -> None:
    result = plan([workload("a"), waved("b", 0)], AT_ONCE)
    assert going(result) == ["a", "b"]


def test_an_unreadable_wave_is_an_invalid_policy() -> None:
    for raw in ("-1", "one", "101", "1.5"):
        result = plan([workload("a", None, **{WAVE: raw})], AT_ONCE)
        assert held(result) == {"a": HoldReason.INVALID_POLICY}, raw
        assert "expected a whole number, 0 (the first wave) to 100" in result.holds[0].detail


# --- quarantine -----------------------------------------------------------------------------


def test_a_quarantined_digest_is_rolled_onto_nowhere_and_says_how_to_clear_it() -> None:
    result = plan([workload(n) for n in "abc"], AT_ONCE, book=quarantined())
    assert result.go == ()
    assert sorted(held(result).values()) == [HoldReason.QUARANTINED] * 3
    detail = result.holds[0].detail
    assert "quarantined for forgejo.example/team/app:latest: failed-health-window" in detail
    assert "autoroll quarantine clear forgejo.example/team/app:latest" in detail


def test_a_cleared_quarantine_holds_nothing() -> None:
    assert going(plan([workload("a")], AT_ONCE, book=quarantined(cleared=True))) == ["a"]


def test_a_quarantine_of_another_digest_of_the_tag_holds_nothing() -> None:
    assert going(plan([workload("a")], AT_ONCE, book=quarantined(OTHER))) == ["a"]


def test_the_quarantine_is_said_before_a_window_or_a_min_age() -> None:
    shut = Guardrails(
        deletions_per_period=0, in_flight=0, healthy=timedelta(0), min_age=timedelta(days=9)
    )
    assert held(plan([workload("a")], shut, book=quarantined())) == {"a": HoldReason.QUARANTINED}
    paused = workload("p", None, **{PAUSED: "true"})
    assert held(plan([paused], shut, book=quarantined())) == {"p": HoldReason.PAUSED}


def test_a_halted_workload_s_own_next_pod_waits_for_the_quarantine_too() -> None:
    """Its replacement recovered and ran through a whole window: the digest failed once, so
    nothing more rolls onto it until a person clears it or the tag moves."""
    recovered = workload("a", [pod("a-1"), pod("a-3", NEW, ready_for=timedelta(minutes=5))])
    assert held(plan([recovered], book=quarantined())) == {"a": HoldReason.QUARANTINED}


# --- the order's inputs ------------------------------------------------------------------------


def test_a_deletion_rolls_onto_the_targets_its_pod_does_not_run() -> None:
    [(_, decision)] = decided([workload("a")], AT_ONCE)
    assert onto(decision, decision.actions[0]) == [(REF, NEW)]


def test_standing_reads_done_and_proven_from_the_pods() -> None:
    rolled = waved("a", 3, [pod("a-1", NEW, ready_for=timedelta(minutes=5))])
    [(item, decision)] = decided([rolled])
    policy = workload_policy(dict(item.workload.annotations), defaults=ORDERED)
    found = standing(decision.containers[0], decision, policy)
    assert (found.wave, found.done, found.on_target, found.proven) == (3, True, True, True)


# --- a property over any mix of workloads ----------------------------------------------------

#: A workload's state on the digest: not started, a replacement inside or past its window,
#: or every pod on it inside or past its window.
STATES = ("old", "canary-inside", "canary-past", "done-inside", "done-past")


def pods_for(name: str, state: str) -> list[PodView]:
    inside, past = timedelta(seconds=10), timedelta(minutes=5)
    return {
        "old": [pod(f"{name}-1"), pod(f"{name}-2")],
        "canary-inside": [pod(f"{name}-1"), pod(f"{name}-3", NEW, ready_for=inside)],
        "canary-past": [pod(f"{name}-1"), pod(f"{name}-3", NEW, ready_for=past)],
        "done-inside": [pod(f"{name}-3", NEW, ready_for=inside)],
        "done-past": [pod(f"{name}-3", NEW, ready_for=past)],
    }[state]


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 3), st.sampled_from(STATES)), min_size=1, max_size=6),
    st.booleans(),
    st.sampled_from(["none", "active", "cleared"]),
)
def test_no_deletion_outruns_its_wave_the_proof_or_the_quarantine(
    spec: list[tuple[int, str]], window_on: bool, quarantine: str
) -> None:
    """Whatever the mix: a deletion goes only if (1) the digest is not quarantined, (2)
    every workload of an earlier wave is done on it (every pod on it, past its window), and
    (3) with a window, the digest is proven or no other workload rolls it (at most one new
    workload per digest in a plan)."""
    items = [waved(f"w{i}", wave, pods_for(f"w{i}", state)) for i, (wave, state) in enumerate(spec)]
    guardrails = ORDERED if window_on else AT_ONCE
    book = {
        "none": QuarantineBook(),
        "active": quarantined(),
        "cleared": quarantined(cleared=True),
    }[quarantine]
    result = plan(items, guardrails, book=book)
    states = {f"w{i}": (wave, state) for i, (wave, state) in enumerate(spec)}
    if quarantine == "active":
        assert result.go == ()
        return
    went = {a.workload for a in result.go}
    done = {"done-past"} if window_on else {"done-past", "done-inside"}  # 0 s: no window
    for name in went:
        wave, _ = states[name]
        assert all(s in done for w, s in states.values() if w < wave), (name, states)
    if window_on:
        proven = any(s in ("canary-past", "done-past") for _, s in states.values())
        on_it = {n for n, (_, s) in states.items() if s != "old"}
        if not proven:
            starters = went - on_it
            assert len(starters) <= 1, (starters, states)
            assert not (starters and on_it), (starters, on_it)


def test_an_order_hold_names_the_workload_it_holds() -> None:
    """The wave and quarantine holds carry their workload's key, like every other hold, so
    the plan row and the Event land on the right workload."""
    result = plan([waved("a", 0), waved("d", 2)])
    [wave] = result.holds
    assert (wave.workload, wave.reason) == ("shop/deployment/d", HoldReason.WAVE)
    caught = plan([workload("q")], AT_ONCE, book=quarantined())
    assert [(h.workload, h.reason) for h in caught.holds] == [
        ("shop/deployment/q", HoldReason.QUARANTINED)
    ]
