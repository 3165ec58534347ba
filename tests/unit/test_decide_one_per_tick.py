"""One deletion per workload per pass, whichever containers are stale, until a rollout has
replaced every pod once.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

from autoroll.core.decide import Decision, PodState, Reason, Sighting, Verdict
from autoroll.core.model import ContainerView, PodView
from tests.support.decide_cases import (
    AFTER,
    BEFORE,
    IMAGE,
    NEW,
    OLD,
    REF,
    SEEN,
    SIDE_IMAGE,
    SIDE_REF,
    deployment,
    pod,
)
from tests.support.decide_scene import decide_app


def decide_with_sidecar(pods: list[PodView]) -> Decision:
    """``decide`` for the app Deployment with a second container, ``side``: both tags moved
    to ``NEW``."""
    return decide_app(
        pods,
        workload=deployment(
            ContainerView("app", IMAGE, "Always"), ContainerView("side", SIDE_IMAGE, "Always")
        ),
        resolved={REF: NEW, SIDE_REF: NEW},
        sightings={REF: Sighting(NEW, SEEN), SIDE_REF: Sighting(NEW, SEEN)},
    )


def test_one_deletion_per_deployment_across_containers() -> None:
    """Two containers stale in two different pods: only one pod goes this tick."""
    pods = [
        pod("a", extra=[("side", SIDE_IMAGE, NEW)]),  # app stale
        pod("b", digest=NEW, extra=[("side", SIDE_IMAGE, OLD)]),  # side stale
    ]
    decision = decide_with_sidecar(pods)
    assert [a.name for a in decision.actions] == ["a"]
    assert [(c.verdict, c.reason) for c in decision.containers] == [
        (Verdict.STALE, Reason.STALE_POD),
        (Verdict.WAITING, Reason.ONE_PER_TICK),
    ]


def test_same_pod_stale_in_two_containers_is_one_deletion() -> None:
    pods = [
        pod("a", extra=[("side", SIDE_IMAGE, OLD)]),
        pod("b", digest=NEW, extra=[("side", SIDE_IMAGE, NEW)]),
    ]
    decision = decide_with_sidecar(pods)
    assert [a.name for a in decision.actions] == ["a"]
    assert [c.verdict for c in decision.containers] == [Verdict.STALE, Verdict.STALE]
    assert [c.pod for c in decision.containers] == ["a", "a"]


def test_all_pods_stale_still_one_deletion() -> None:
    pods = [pod(f"p{i}", created=BEFORE + timedelta(seconds=i)) for i in range(5)]
    decision = decide_app(pods, workload=deployment(replicas=5))
    assert [a.name for a in decision.actions] == ["p0"]


def test_rollout_simulation_replaces_every_pod_once() -> None:
    """Ticks as often as you like: each stale pod goes only after the last replacement is Ready."""
    pods = [pod(f"p{i}", created=BEFORE + timedelta(seconds=i)) for i in range(3)]
    deleted: list[str] = []
    clock = AFTER
    for _ in range(20):
        decision = decide_app(pods, workload=deployment(replicas=3))
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


def test_what_each_container_says_of_the_one_deletion() -> None:
    """The container that deletes says nothing more; the one that waits names the pod that
    goes first and its own next in line; the deletion says what it replaces with what."""
    pods = [
        pod("a", extra=[("side", SIDE_IMAGE, NEW)]),  # app stale
        pod("b", digest=NEW, extra=[("side", SIDE_IMAGE, OLD)]),  # side stale
    ]
    decision = decide_with_sidecar(pods)
    [action] = decision.actions
    assert action.reason == f"stale-pod: app runs {OLD.short}, {REF} is {NEW.short}"
    assert [(c.detail, c.pod) for c in decision.containers] == [("", "a"), ("a goes first", "b")]
    both = [pod("a", extra=[("side", SIDE_IMAGE, OLD)]), pod("b", digest=NEW)]
    assert [c.detail for c in decide_with_sidecar(both).containers] == ["", ""]
