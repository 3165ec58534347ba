"""One deletion per workload per pass, whichever containers are stale, until a rollout has
replaced every pod once.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

from autoroll.core.decide import PodState, Reason, Sighting, Verdict, decide
from autoroll.core.model import ContainerView
from tests.support.decide_cases import (
    AFTER,
    BEFORE,
    HOST,
    IMAGE,
    NEW,
    OLD,
    OWN_CONTENT,
    REF,
    SEEN,
    SIDE_IMAGE,
    SIDE_REF,
    deployment,
    pod,
)


def test_one_deletion_per_deployment_across_containers() -> None:
    """Two containers stale in two different pods: only one pod goes this tick."""
    dep = deployment(
        ContainerView("app", IMAGE, "Always"), ContainerView("side", SIDE_IMAGE, "Always")
    )
    pods = [
        pod("a", extra=[("side", SIDE_IMAGE, NEW)]),  # app stale
        pod("b", digest=NEW, extra=[("side", SIDE_IMAGE, OLD)]),  # side stale
    ]
    decision = decide(
        workload=dep,
        pods=pods,
        registries={HOST},
        resolved={REF: NEW, SIDE_REF: NEW},
        sightings={REF: Sighting(NEW, SEEN), SIDE_REF: Sighting(NEW, SEEN)},
        children={NEW: frozenset()},
        contents=OWN_CONTENT,
    )
    assert [a.name for a in decision.actions] == ["a"]
    assert [(c.verdict, c.reason) for c in decision.containers] == [
        (Verdict.STALE, Reason.STALE_POD),
        (Verdict.WAITING, Reason.ONE_PER_TICK),
    ]


def test_same_pod_stale_in_two_containers_is_one_deletion() -> None:
    dep = deployment(
        ContainerView("app", IMAGE, "Always"), ContainerView("side", SIDE_IMAGE, "Always")
    )
    pods = [
        pod("a", extra=[("side", SIDE_IMAGE, OLD)]),
        pod("b", digest=NEW, extra=[("side", SIDE_IMAGE, NEW)]),
    ]
    decision = decide(
        workload=dep,
        pods=pods,
        registries={HOST},
        resolved={REF: NEW, SIDE_REF: NEW},
        sightings={REF: Sighting(NEW, SEEN), SIDE_REF: Sighting(NEW, SEEN)},
        children={NEW: frozenset()},
        contents=OWN_CONTENT,
    )
    assert [a.name for a in decision.actions] == ["a"]
    assert [c.verdict for c in decision.containers] == [Verdict.STALE, Verdict.STALE]
    assert [c.pod for c in decision.containers] == ["a", "a"]


def test_all_pods_stale_still_one_deletion() -> None:
    pods = [pod(f"p{i}", created=BEFORE + timedelta(seconds=i)) for i in range(5)]
    decision = decide(
        workload=deployment(replicas=5),
        pods=pods,
        registries={HOST},
        resolved={REF: NEW},
        sightings={REF: Sighting(NEW, SEEN)},
        children={NEW: frozenset()},
        contents=OWN_CONTENT,
    )
    assert [a.name for a in decision.actions] == ["p0"]


def test_rollout_simulation_replaces_every_pod_once() -> None:
    """Ticks as often as you like: each stale pod goes only after the last replacement is Ready."""
    pods = [pod(f"p{i}", created=BEFORE + timedelta(seconds=i)) for i in range(3)]
    deleted: list[str] = []
    clock = AFTER
    for _ in range(20):
        decision = decide(
            workload=deployment(replicas=3),
            pods=pods,
            registries={HOST},
            resolved={REF: NEW},
            sightings={REF: Sighting(NEW, SEEN)},
            children={NEW: frozenset()},
            contents=OWN_CONTENT,
        )
        if decision.actions:
            (action,) = decision.actions
            deleted.append(action.name)
            # The ReplicaSet replaces it; the replacement is not Ready on the next tick.
            pods = [p for p in pods if p.name != action.name]
            clock += timedelta(minutes=1)
            pods.append(pod(f"r{len(deleted)}", digest=NEW, created=clock, ready=False))
        else:
            pods = [replace(p, ready=True) for p in pods]
    assert deleted == ["p0", "p1", "p2"]
    assert all(f.state is PodState.CURRENT for f in decision.containers[0].pods)
