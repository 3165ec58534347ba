"""The decision table's rows for the loop guard: pods created after the target was seen are not
deleted again, within one pass and across passes.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any

import pytest

from autoroll.controller.rolls import RollMemory
from autoroll.core.decide import Decision, PodState, Reason, Sighting, Verdict
from autoroll.core.images import TagRef
from autoroll.core.model import Digest, Enrolled, PodView
from autoroll.core.sightings import listed_uids, observe_targets
from tests.support.decide_cases import (
    AFTER,
    BEFORE,
    HOST,
    NEW,
    OLD,
    OTHER,
    REF,
    SEEN,
    Case,
    check_rule,
    deployment,
    pod,
)
from tests.support.decide_scene import decide_app


def beside_a_replacement(
    case_id: str, rule: str, a: PodView, verdict: Verdict, reason: Reason, **fields: Any
) -> Case:
    """A row of the stale pod ``a`` beside ``b``, a replacement on the target created after
    the sighting; ``fields`` are the row's other ``Case`` fields."""
    return Case(case_id, rule, [a, pod("b", digest=NEW, created=AFTER)], verdict, reason, **fields)


def guarded(case_id: str, rule: str, a: PodView, **fields: Any) -> Case:
    """A row where the loop guard spares ``a`` (``beside_a_replacement``)."""
    return beside_a_replacement(
        case_id, rule, a, Verdict.LOOP_GUARD, Reason.CREATED_AFTER_TARGET, **fields
    )


def deleted(case_id: str, rule: str, a: PodView, **fields: Any) -> Case:
    """A row where ``a`` goes, the guard notwithstanding (``beside_a_replacement``)."""
    return beside_a_replacement(
        case_id, rule, a, Verdict.STALE, Reason.STALE_POD, deletes="a", **fields
    )


CASES = [
    # --- loop guard ---------------------------------------------------------------------------
    guarded(
        "created-after-sighting-not-deleted",
        "loop guard",
        pod("a", created=AFTER),
    ),
    deleted(
        "created-before-sighting-deleted",
        "loop guard (boundary: the last whole second surely before the sighting)",
        pod("a", created=SEEN - timedelta(seconds=1)),
    ),
    guarded(
        "created-in-the-sightings-second-not-deleted",
        "loop guard (creationTimestamp has whole seconds: the same second may be after)",
        pod("a", created=SEEN),
        sightings={REF: Sighting(NEW, SEEN + timedelta(milliseconds=822))},
    ),
    # Pods the sighting's own pass listed are older than it, whatever their stamp says.
    deleted(
        "listed-at-sighting-same-second-deleted",
        "loop guard (a pod listed before the registry was asked predates the sighting)",
        pod("a", created=SEEN),
        sightings={REF: Sighting(NEW, SEEN + timedelta(milliseconds=822), frozenset({"uid-a"}))},
    ),
    guarded(
        "not-listed-same-second-not-deleted",
        "loop guard (a pod the sighting did not list is judged by its whole-second stamp)",
        pod("a", created=SEEN),
        sightings={REF: Sighting(NEW, SEEN + timedelta(milliseconds=822), frozenset({"uid-b"}))},
    ),
    deleted(
        "not-listed-created-well-before-deleted",
        "loop guard (timestamps still count for pods the sighting did not list)",
        pod("a", created=BEFORE),
        sightings={REF: Sighting(NEW, SEEN, frozenset({"uid-b"}))},
    ),
    deleted(
        "listed-at-sighting-deleted-despite-a-skewed-stamp",
        "loop guard (the API server's clock ahead of ours does not spare a listed pod)",
        pod("a", created=SEEN + timedelta(seconds=3)),
        sightings={REF: Sighting(NEW, SEEN, frozenset({"uid-a"}))},
    ),
    guarded(
        "uid-less-pod-never-counts-as-listed",
        "loop guard (an empty UID matches nothing remembered)",
        replace(pod("a", created=SEEN), uid=""),
        sightings={REF: Sighting(NEW, SEEN, frozenset({""}))},
    ),
    beside_a_replacement(
        "listed-for-another-digest-not-deleted",
        "loop guard (a sighting of another digest guards nothing: no deletion without it)",
        pod("a", created=SEEN),
        Verdict.SKIPPED,
        Reason.SIGHTING_MISSING,
        sightings={REF: Sighting(OLD, SEEN, frozenset({"uid-a"}))},
    ),
    # A pod made after the sighting by someone else (a drain, a scale-up, a revert within
    # one poll) while the tag pointed elsewhere is no replacement of autoroll's: it rolls.
    deleted(
        "created-after-sighting-before-any-deletion-deleted",
        "loop guard (no deletion in this roll yet: no pod can be autoroll's replacement)",
        pod("a", created=AFTER),
        rolled_from=None,
    ),
    deleted(
        "created-after-sighting-listed-before-the-first-deletion-deleted",
        "loop guard (a pod read right before autoroll's first deletion is not its replacement)",
        pod("a", created=AFTER),
        rolled_from=frozenset({"uid-a", "uid-x"}),
    ),
    guarded(
        "created-after-the-first-deletion-not-deleted",
        "loop guard (a pod not read before autoroll's first deletion may be its replacement)",
        pod("a", created=AFTER),
        rolled_from=frozenset({"uid-x", "uid-b"}),
    ),
    Case(
        "guard-picks-the-old-pod",
        "loop guard",
        [pod("new", created=AFTER), pod("old", created=BEFORE)],
        Verdict.STALE,
        Reason.STALE_POD,
        deletes="old",
    ),
    Case(
        "sighting-missing-never-deletes",
        "loop guard needs the first-seen time",
        [pod("a"), pod("b", digest=NEW)],
        Verdict.SKIPPED,
        Reason.SIGHTING_MISSING,
        sightings={},
    ),
    Case(
        "sighting-of-another-digest-never-deletes",
        "loop guard needs the first-seen time",
        [pod("a"), pod("b", digest=NEW)],
        Verdict.SKIPPED,
        Reason.SIGHTING_MISSING,
        sightings={REF: Sighting(OLD, SEEN)},
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_rule(case: Case) -> None:
    check_rule(case)


def test_loop_guard_bounds_deletions_when_runtime_reports_old_digest() -> None:
    """A runtime that keeps reporting the old digest: each original pod goes once, no more."""
    pods = [pod(f"p{i}", created=BEFORE + timedelta(seconds=i)) for i in range(3)]
    deletions = 0
    clock = AFTER
    rolls = RollMemory()  # as the reconciler keeps it
    workload = deployment(replicas=3)
    for _ in range(30):
        decision = decide_app(pods, workload=workload, rolled_from=rolls.rolled_from(workload.key))
        for action in decision.actions:
            rolls.deleting(Enrolled(workload, tuple(pods)))
            deletions += 1
            clock += timedelta(minutes=1)
            pods = [p for p in pods if p.name != action.name]
            pods.append(pod(f"r{deletions}", digest=OLD, created=clock))  # still "old"
    assert deletions == 3
    assert decision.loop_guard_hits == 3
    assert decision.containers[0].verdict is Verdict.LOOP_GUARD


def test_loop_guard_memory_across_passes_closes_the_same_second_window() -> None:
    """The shell's pure flow over three passes: list, observe, decide.

    Pass 1 first sees NEW in the second pod "a" was created: "a" was listed, so it goes.
    Pass 2: its replacement, stamped in that same second, still reports OLD (a runtime
    quirk): it was not listed at the sighting, so the guard spares it. Pass 3: the tag moves
    to OTHER; the replacement was listed at that sighting, so it is stale again, not guarded.
    """
    dep = deployment(replicas=2)
    second = SEEN  # a whole second: what creationTimestamp can say
    pods = [pod("a", created=second), pod("b", digest=NEW, created=BEFORE)]
    memory: dict[TagRef, Sighting] = {}
    rolls = RollMemory()

    def one_pass(now: datetime, target: Digest) -> Decision:
        nonlocal memory
        listed = listed_uids([(dep, pods)], registries={HOST})
        memory = observe_targets(memory, {REF: target}, now=now, listed=listed)
        decision = decide_app(
            pods,
            workload=dep,
            resolved={REF: target},
            sightings=memory,
            children={target: frozenset()},
            rolled_from=rolls.rolled_from(dep.key),
        )
        if decision.actions:
            rolls.deleting(Enrolled(dep, tuple(pods)))
        rolls.settle([(dep.key, decision)])
        return decision

    first = one_pass(second + timedelta(milliseconds=400), NEW)
    assert [a.name for a in first.actions] == ["a"]
    pods = [pod("a2", created=second), pods[1]]  # created at .600, stamped in the same second

    spared = one_pass(second + timedelta(seconds=30), NEW)
    assert spared.actions == ()
    assert spared.containers[0].verdict is Verdict.LOOP_GUARD
    assert memory[REF].older_uids == frozenset({"uid-a", "uid-b"})

    moved = one_pass(second + timedelta(seconds=60), OTHER)
    states = {f.pod: f.state for f in moved.containers[0].pods}
    assert states == {"a2": PodState.STALE, "b": PodState.STALE}  # "b", the oldest, goes first
    assert [a.name for a in moved.actions] == ["b"]
    assert memory[REF] == Sighting(
        OTHER, second + timedelta(seconds=60), frozenset({"uid-a2", "uid-b"})
    )


def test_every_spared_pod_is_named() -> None:
    """Two replacements of autoroll's deletions both report the old digest: both spared."""
    pods = [pod("a", created=AFTER), pod("c", created=AFTER), pod("b", digest=NEW, created=AFTER)]
    decision = decide_app(pods, workload=deployment(replicas=3), rolled_from=frozenset({"uid-x"}))
    [verdict] = decision.containers
    assert (verdict.verdict, verdict.detail) == (Verdict.LOOP_GUARD, "not deleting a, c")
    spared = [(f.pod, f.uid, f.digest) for f in verdict.pods if f.state is PodState.LOOP_GUARD]
    assert spared == [("a", "uid-a", OLD), ("c", "uid-c", OLD)]  # what they run, kept


def test_without_a_sighting_of_the_target_it_names_the_target() -> None:
    pods = [pod("a"), pod("b", digest=NEW, created=AFTER)]
    seen_other = {REF: Sighting(OLD, SEEN)}
    [verdict] = decide_app(pods, sightings=seen_other).containers
    assert (verdict.reason, verdict.detail) == (Reason.SIGHTING_MISSING, f"no sighting of {NEW}")
