"""Cluster shapes (issue 23) across leadership terms: loop-guard memory belongs to one term, so
a revert rolls after another leader rolled in between.
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from autoroll.core.model import WorkloadKind
from tests.support.answering_registry import AnsweringRegistry
from tests.support.scripted_cluster import ScriptedWorld
from tests.support.shape_passes import (
    HASH,
    NEW,
    OLD,
    REF,
    Clock,
    app_pod,
    make_reconciler,
    run_pass,
    web,
)

# --- 4. loop-guard memory belongs to one leadership term ------------------------------------


def test_a_revert_rolls_after_another_leader_rolled_in_between() -> None:
    world = ScriptedWorld()
    world.add(WorkloadKind.DEPLOYMENT, web(replicas=2))
    world.pods = [app_pod(f"web-{HASH}-a"), app_pod(f"web-{HASH}-b")]
    registry, clock = AnsweringRegistry({REF: OLD}), Clock()
    leads = [True]
    reconciler = make_reconciler(world, registry=registry, clock=clock, leading=lambda: leads[0])
    assert run_pass(world, reconciler=reconciler) == []  # R1 sees the tag at OLD: current
    leads[0] = False  # R1 loses the Lease; the new leader rolls web to NEW
    assert run_pass(world, reconciler=reconciler) == []
    clock.now += timedelta(minutes=5)
    world.pods = [
        app_pod(f"web-{HASH}-c", digest=NEW, created=clock.now - timedelta(minutes=2)),
        app_pod(f"web-{HASH}-d", digest=NEW, created=clock.now - timedelta(minutes=1)),
    ]
    registry.answers[REF] = OLD  # then the tag is reverted
    clock.now += timedelta(minutes=5)
    leads[0] = True  # R1 leads again: the revert must roll
    assert run_pass(world, reconciler=reconciler) == [f"web-{HASH}-c"]


@pytest.mark.parametrize("new_term", [True, False])
def test_a_new_term_starts_from_the_cluster_even_without_a_pass_between_terms(
    new_term: bool,
) -> None:
    """Leadership lapsed and came back while no pass ran (a long pass, a slow poll): the
    Elector's term says so, and the new term's memory starts empty. In the same term the
    memory stands (the control row): the pods made after its sighting, and after a deletion
    it remembers, are spared as its own replacements would be."""
    world = ScriptedWorld()
    world.add(WorkloadKind.DEPLOYMENT, web(replicas=2))
    world.pods = [app_pod(f"web-{HASH}-a"), app_pod(f"web-{HASH}-b")]
    registry, clock, terms = AnsweringRegistry({REF: OLD}), Clock(), [1]
    reconciler = make_reconciler(world, registry=registry, clock=clock, term=lambda: terms[0])
    assert run_pass(world, reconciler=reconciler) == []
    [before] = world.cluster().snapshot()
    reconciler._rolls.deleting(before)  # a roll it began in this term
    clock.now += timedelta(minutes=5)
    world.pods = [  # another leader rolled web to NEW meanwhile; the tag is back at OLD
        app_pod(f"web-{HASH}-c", digest=NEW, created=clock.now - timedelta(minutes=2)),
        app_pod(f"web-{HASH}-d", digest=NEW, created=clock.now - timedelta(minutes=1)),
    ]
    terms[0] = 2 if new_term else 1
    clock.now += timedelta(minutes=5)
    expected = [f"web-{HASH}-c"] if new_term else []
    assert run_pass(world, reconciler=reconciler) == expected


def test_a_revert_within_one_poll_interval_rolls_pods_recreated_meanwhile() -> None:
    # A -> B -> A between two polls while a node drain recreated the pods: they pulled B.
    world = ScriptedWorld()
    world.add(WorkloadKind.DEPLOYMENT, web(replicas=2))
    world.pods = [app_pod(f"web-{HASH}-a"), app_pod(f"web-{HASH}-b")]
    registry, clock = AnsweringRegistry({REF: OLD}), Clock()
    reconciler = make_reconciler(world, registry=registry, clock=clock)
    assert run_pass(world, reconciler=reconciler) == []
    clock.now += timedelta(seconds=30)
    world.pods = [
        app_pod(f"web-{HASH}-c", digest=NEW, created=clock.now - timedelta(seconds=20)),
        app_pod(f"web-{HASH}-d", digest=NEW, created=clock.now - timedelta(seconds=19)),
    ]
    clock.now += timedelta(seconds=30)
    assert run_pass(world, reconciler=reconciler) == [f"web-{HASH}-c"]
