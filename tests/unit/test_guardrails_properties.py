"""The guardrails' safety rules over any sequence of passes, pushes, clock steps and
controller restarts (hypothesis), through the real shell (``Reconciler``) on a fake clock.

The world is a few enrolled workloads on two tags. A deletion's replacement is created at
once (as a ReplicaSet does), stamped in whole seconds as the API server stamps
``creationTimestamp``, pulls the tag's digest of that moment and becomes Ready after a
delay. Checked over every deletion the cluster received:

1. no window of one budget period holds more deletions than the budget, across restarts,
   but for the one case the design names (docs/adr/016-guardrails.md): a restarted
   controller knows a previous one's deletions only by the replacements it lists as it
   starts, so a deletion whose replacement was itself deleted before then is not known;
2. no workload loses a pod outside its window, or while it (or the cluster) is paused;
3. no deletion starts an image before its min-age: every tag a deleted pod's replacement
   pulls has had that digest for at least the workload's min-age (counted from the push:
   the controller's sighting can only be later);
4. workloads mid-roll never exceed the in-flight budget because of a deletion, counted as
   the deciding pass can know them: a targeted pass counts a workload it cannot judge whole
   as that workload was last judged (or mid-roll, if a pod of it was deleted since), so one
   that turned mid-roll since without a deletion (a crash) waits for the next full pass to
   be counted (``InFlightLedger``, docs/adr/016-guardrails.md);
5. no pod is deleted while a pod already running a target it is stale on is inside its
   health window (``ROLL_HEALTHY_SECONDS`` or the workload's annotation): every such pod
   has been Ready, since its last restart, for the whole window. Pods crash now and then
   (a restart: unready, then Ready again after the start delay).

The world itself is ``tests.support.guardrail_world``.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from hypothesis import event, given, settings

from autoroll.core.images import TagRef
from autoroll.core.policy import Guardrails, workload_policy
from autoroll.core.scope import ImageTag, Scope
from tests.support.guardrail_world import (
    TAGS,
    Deletion,
    InFlightLedger,
    Workload,
    World,
    controller,
    mid_roll_now,
    worlds,
)
from tests.support.quarantine import MemoryQuarantine


@settings(max_examples=300, deadline=None)
@given(worlds())
def test_no_sequence_of_passes_and_pushes_breaks_a_guardrail(
    case: tuple[World, Guardrails, list[tuple[str, object]]],
) -> None:
    world, guardrails, steps = case
    reconciler = controller(world, guardrails)
    ledger = InFlightLedger()
    for kind, arg in steps:
        if kind in {"pass", "targeted"}:
            # A targeted pass (a webhook's, the pacer's) is held to every guardrail too.
            world.first_pass.setdefault(world.process, world.now)
            before = len(world.deletions)
            whole = ledger.whole(world, arg if isinstance(arg, TagRef) else None)
            mid_before = ledger.count(world, whole, mid_roll_now(world))
            if isinstance(arg, TagRef):
                reconciler.tick(scope=Scope.of([ImageTag.of(arg)]))
            else:
                reconciler.tick()
            deleted = {d.workload for d in world.deletions[before:]}
            mid_after = mid_roll_now(world)  # judged once, for the check and the ledger
            if guardrails.in_flight and deleted:
                # A pass may finish rolls and start others, never start past the budget:
                # counted as the pass can know it (4. in the module docstring).
                after = ledger.count(world, whole, mid_after, deleted)
                assert after <= max(guardrails.in_flight, mid_before), (after, mid_before)
                if len(whole) < len(world.workloads):
                    event("in flight: a targeted pass deleted beside workloads it cannot see")
            ledger.passed(world, whole, mid_after, deleted)
        elif kind == "wait":
            assert isinstance(arg, float)
            world.now += timedelta(seconds=arg)
        elif kind == "push":
            assert isinstance(arg, TagRef)
            world.push(arg)
        elif kind == "crash":
            assert isinstance(arg, int)
            world.crash(arg)
        else:
            world.process += 1
            reconciler = controller(world, guardrails)  # every memory lost
            ledger.new_term()
    event(f"deletions: {min(len(world.deletions), 10)}{'+' if len(world.deletions) >= 10 else ''}")
    by_name = {w.name: w for w in world.workloads}
    for index, deletion in enumerate(world.deletions):
        # 1. the budget, in every period that ends at a deletion: the deletions made up to it
        # (one made later at the same instant, by a later process, ends a period of its own)
        if guardrails.deletions_per_period:
            window = [
                d
                for d in world.deletions[: index + 1]
                if deletion.at - guardrails.period < d.at <= deletion.at
            ]
            began = world.first_pass[deletion.process]
            unknown = [d for d in window if hidden(d, deletion.process, began)]
            if unknown:
                event("budget: a previous process's deletion unknown to the deciding one")
            assert len(window) - len(unknown) <= guardrails.deletions_per_period, (
                deletion.at,
                len(window),
                len(unknown),
            )
        # 2. the window and the pauses
        workload = by_name[deletion.workload]
        policy = workload_policy(workload.annotations, defaults=guardrails)
        assert policy.is_valid
        assert not guardrails.paused and not policy.paused
        if policy.windows is not None:
            assert policy.windows.is_open(deletion.at), (deletion.at, policy.windows)
        # 3. the min-age of everything the replacement pulled
        for tag, pulled in deletion.pulls.items():
            age = deletion.at - world.pushed_at[pulled]
            assert age >= policy.min_age, (tag, age, policy.min_age)
        # 5. the health window of every pod already on a target the deleted pod was not
        if policy.healthy and deletion.on_target_ready:
            event("health window: a deletion beside pods on the target")
        for ready_at in deletion.on_target_ready if policy.healthy else ():
            assert ready_at is not None, deletion.at
            assert ready_at + policy.healthy <= deletion.at, (ready_at, deletion.at)


def hidden(deletion: Deletion, process: int, began: datetime) -> bool:
    """Is ``deletion`` one the controller ``process`` (acting since ``began``) cannot know?
    Made by an earlier process, and its replacement gone before this one began to act."""
    gone = deletion.replacement.deleted_at
    return deletion.process < process and gone is not None and gone <= began


def test_the_world_rolls_when_nothing_holds_it() -> None:
    """The property is not vacuous: the same world, unhindered, deletes."""
    workload = Workload("w0", TAGS[:1], 2, {})
    world = World([workload], ready_seconds=0.0)
    world.push(TAGS[0])
    unhindered = Guardrails(
        deletions_per_period=1, period=timedelta(seconds=5), healthy=timedelta(0)
    )
    reconciler = controller(world, unhindered)
    for _ in range(4):
        reconciler.tick()
        world.now += timedelta(seconds=5)
    assert len(world.deletions) == 2
    # Exactly a period apart: within a term the budget counts this process's own deletions.
    assert (world.deletions[1].at - world.deletions[0].at).total_seconds() == 5.0


def test_the_next_pod_goes_once_the_replacement_is_through_its_window() -> None:
    """Property 5 is not vacuous either: with a 30 s window the second pod goes
    once the first replacement has been Ready for 30 s, not before; a crash of that
    replacement inside the window holds the roll until it has had a whole window again,
    and quarantines the digest, which holds it until a person clears it."""
    workload = Workload("w0", TAGS[:1], 3, {})
    world = World([workload], ready_seconds=3.0)
    world.push(TAGS[0])
    guardrails = Guardrails(deletions_per_period=0, in_flight=0, healthy=timedelta(seconds=30))
    record = MemoryQuarantine()
    reconciler = controller(world, guardrails, record)
    reconciler.tick()
    assert len(world.deletions) == 1
    first = world.deletions[0].replacement
    for _ in range(6):  # up to 30 s after the replacement was created: Ready 27 s
        world.now += timedelta(seconds=5)
        reconciler.tick()
    assert len(world.deletions) == 1
    world.now += timedelta(seconds=5)  # Ready for 32 s
    reconciler.tick()
    assert len(world.deletions) == 2
    second = world.deletions[1].replacement
    world.now += timedelta(seconds=20)
    world.crash([p.uid for p in workload.pods].index(second.uid))
    for _ in range(6):  # Ready again 3 s after the crash; 30 s after that it may go on
        world.now += timedelta(seconds=5)
        reconciler.tick()
        assert len(world.deletions) == 2
    world.now += timedelta(seconds=5)
    report = reconciler.tick()
    assert len(world.deletions) == 2, "through its window again, but its digest is quarantined"
    assert [h.reason.value for h in report.plan.holds] == ["quarantined"]  # type: ignore[union-attr]
    [entry] = record.book.active
    record.clear(entry.key, now=world.now)
    reconciler.tick()  # a full pass reads the record again
    assert len(world.deletions) == 3
    assert first.restarts == 0 and second.restarts == 1
