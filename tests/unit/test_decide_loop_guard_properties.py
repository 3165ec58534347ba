"""The loop guard over many passes (hypothesis): the shell's flow (list, observe, decide)
against a simulated ReplicaSet bounds the deletions per tag move and still replaces every
pod that predates the move.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from hypothesis import event, given, settings
from hypothesis import strategies as st

from autoroll.controller.rolls import RollMemory
from autoroll.core.decide import Sighting, decide
from autoroll.core.images import TagRef
from autoroll.core.model import ContainerStatusView, ContainerView, Digest, Enrolled, PodView
from autoroll.core.sightings import listed_uids, observe_targets
from tests.support.decide_strategies import DIGESTS, HOST, IMAGES, REFS, T0, EachItsOwn, mostly
from tests.support.views import deployment_view

# -- many passes: the shell's flow (list, observe, decide) against a simulated ReplicaSet ----


@st.composite
def passes(draw: st.DrawFn) -> dict[str, object]:
    """Pods that predate the first pass by up to 3 s, then passes 0.4-2.5 s apart; the tag
    may move before a pass, and each replacement is created 1-400 ms after its deletion."""
    steps = draw(
        st.lists(
            st.tuples(
                st.integers(min_value=401, max_value=2500),  # ms since the previous pass
                mostly(False, True),  # the tag moves to a fresh digest before this pass
                st.integers(min_value=1, max_value=400),  # ms until a replacement exists
            ),
            min_size=1,
            max_size=25,
        )
    )
    return {
        "ages_ms": draw(st.lists(st.integers(1, 3000), min_size=1, max_size=4)),
        "start_ms": draw(st.integers(0, 999)),
        "steps": steps,
        "quirk": draw(st.booleans()),  # the runtime reports the pod's old digest after a pull
    }


def fresh_digest(n: int) -> Digest:
    return Digest(f"sha256:{n + 16:064x}")


@settings(max_examples=300, deadline=None)
@given(passes())
def test_loop_guard_over_many_passes_is_bounded_and_replaces_every_older_pod(
    sim: dict[str, object],
) -> None:
    """Real creation times are kept beside the whole-second stamps the core sees. Then:
    no pass deletes a pod created after the current sighting (even one stamped in its
    second); a tag move costs at most one deletion per pod listed at its sighting (no loop,
    even when the runtime keeps reporting old digests); and once passes go on without a
    move, every pod listed at the last sighting is replaced (the one-second window is
    closed: a pod stamped in the sighting's second is not spared)."""
    ages, start, steps, quirk = sim["ages_ms"], sim["start_ms"], sim["steps"], sim["quirk"]
    assert isinstance(ages, list) and isinstance(start, int) and isinstance(steps, list)
    dep = deployment_view("ns", "app", len(ages), (ContainerView("app", IMAGES["app"]),))
    ref = REFS["app"]
    old = DIGESTS[0]
    now = T0 + timedelta(milliseconds=start)
    real: dict[str, datetime] = {}  # uid -> the moment the pod really came to exist

    def make_pod(uid: str, created: datetime, digest: Digest) -> PodView:
        real[uid] = created
        stamp = created.replace(microsecond=0)
        status = ContainerStatusView("app", IMAGES["app"], f"{HOST}/team/app@{digest}", True)
        return PodView("ns", uid, uid, stamp, containers=dep.containers, statuses=(status,))

    pods = [make_pod(f"p{i}", now - timedelta(milliseconds=a), old) for i, a in enumerate(ages)]
    memory: dict[TagRef, Sighting] = {}
    rolls = RollMemory()  # the pods before each roll's first deletion, as the reconciler keeps
    moves = 0
    target = fresh_digest(moves)
    deleted_per_sighting: dict[datetime, int] = {}
    quiet = [(60_000, False, 1)] * (len(pods) + 1)  # then passes with the tag left alone

    for index, (advance_ms, move, delay_ms) in enumerate([(0, False, 1), *steps, *quiet]):
        now += timedelta(milliseconds=advance_ms)
        if move:
            moves += 1
            target = fresh_digest(moves)
        listed = listed_uids([(dep, pods)], registries={HOST})  # listed, then the clock
        memory = observe_targets(memory, {ref: target}, now=now, listed=listed)
        sighting = memory[ref]
        decision = decide(
            workload=dep,
            pods=pods,
            registries={HOST},
            resolved={ref: target},
            sightings=memory,
            children={target: frozenset()},
            contents=EachItsOwn(),
            rolled_from=rolls.rolled_from(dep.key),
        )
        if decision.actions:
            rolls.deleting(Enrolled(dep, tuple(pods)))
        rolls.settle([(dep.key, decision)])
        for action in decision.actions:
            assert real[action.uid] < sighting.first_seen_at, f"pass {index} deleted a younger pod"
            seen = deleted_per_sighting.get(sighting.first_seen_at, 0) + 1
            deleted_per_sighting[sighting.first_seen_at] = seen
            assert seen <= len(sighting.older_uids), "more deletions than pods at the sighting"
            replacement = make_pod(
                f"r{index}",
                now + timedelta(milliseconds=delay_ms),
                action.from_digest if quirk else target,
            )
            pods = [p for p in pods if p.uid != action.uid] + [replacement]

    left = memory[ref].older_uids & {p.uid for p in pods}
    assert not left, f"pods listed at the last sighting were never replaced: {sorted(left)}"
    event("quirk: replacements keep the old digest" if quirk else "replacements run the target")
