"""Table tests for ``rollout_halt``: when a waiting rollout counts as halted.

Every clause of the rule has a row that flips when the clause is broken: stale pods must
wait (not-settled), the wait must be on an unready pod (not a terminating one), and that
pod must have been unready for at least the bound (since its Ready condition last changed,
else since it was created).
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta

import pytest

from autoroll.decide import Sighting, decide
from autoroll.halt import RolloutHalt, rollout_halt
from autoroll.model import ContainerStatusView, PodView
from tests.unit.test_decide import (
    AFTER,
    HOST,
    NEW,
    OLD,
    OWN_CONTENT,
    REF,
    SEEN,
    deployment,
    pod,
)

BOUND = timedelta(minutes=10)
NOW = AFTER + timedelta(minutes=30)
FRESH = NOW - timedelta(minutes=2)  # created or changed well within the bound
LONG = NOW - timedelta(minutes=15)  # beyond it


def crashing(
    name: str = "new",
    *,
    created: datetime = LONG,
    changed: datetime | None = None,
    restarts: int = 7,
) -> PodView:
    """A replacement on the new digest that is not Ready."""
    base = pod(name, digest=NEW, created=created, ready=False)
    statuses = tuple(replace(s, restart_count=restarts) for s in base.statuses)
    return replace(base, statuses=statuses, ready_changed_at=changed)


def halt(pods: list[PodView], *, replicas: int = 3) -> RolloutHalt | None:
    decision = decide(
        deployment=deployment(replicas=replicas),
        pods=pods,
        forgejo_host=HOST,
        resolved={REF: NEW},
        sightings={REF: Sighting(NEW, SEEN)},
        children={NEW: frozenset()},
        contents=OWN_CONTENT,
    )
    return rollout_halt(decision=decision, pods=pods, now=NOW, after=BOUND)


OLD_PODS = [pod("a", digest=OLD), pod("b", digest=OLD)]


@pytest.mark.parametrize(
    ("case", "pods", "halted"),
    [
        ("unready new pod beyond the bound, stale pods wait", [*OLD_PODS, crashing()], "new"),
        ("within the bound: a slow start", [*OLD_PODS, crashing(created=FRESH)], None),
        (
            "old pod, but its Ready condition changed recently",
            [*OLD_PODS, crashing(changed=FRESH)],
            None,
        ),
        (
            "recent pod whose Ready condition changed long ago (clock skew): the condition wins",
            [*OLD_PODS, crashing(created=FRESH, changed=LONG)],
            "new",
        ),
        ("nothing stale waits: the rollout is done", [crashing("x"), pod("y", digest=NEW)], None),
        (
            "waiting on a terminating pod, not an unready one",
            [*OLD_PODS, replace(crashing(), deleting=True)],
            None,
        ),
        (
            "a deleted pod that already exited (Succeeded) is still terminating",
            [*OLD_PODS, replace(crashing(), deleting=True, phase="Succeeded")],
            None,
        ),
        ("every pod Ready: settled, nothing halted", [*OLD_PODS, pod("c", digest=NEW)], None),
    ],
)
def test_rollout_halt(case: str, pods: list[PodView], halted: str | None) -> None:
    found = halt(pods)
    assert (found.pod if found else None) == halted, case


def test_halt_says_which_pod_for_how_long_and_how_many_wait() -> None:
    found = halt([*OLD_PODS, crashing(restarts=7)])
    assert found == RolloutHalt("ns/app", "new", timedelta(minutes=15), 7, 2)
    assert found.message() == (
        "rollout of ns/app is halted: pod new has not been Ready for 15m00s (7 restart(s));"
        " 2 stale pod(s) wait until it is Ready (fix or roll back the image)"
    )


def test_the_longest_unready_pod_is_named() -> None:
    older = crashing("older", created=NOW - timedelta(minutes=40))
    found = halt([*OLD_PODS, crashing("newer"), older], replicas=4)
    assert found is not None and found.pod == "older"


def test_a_pod_without_status_counts_no_restarts() -> None:
    bare = replace(crashing(), statuses=(), ready_changed_at=None)
    found = halt([*OLD_PODS, bare])
    assert found is not None and found.restarts == 0


def test_restart_count_is_the_highest_of_the_containers() -> None:
    base = crashing(restarts=2)
    extra = ContainerStatusView("side", "x", "", False, restart_count=9)
    found = halt([*OLD_PODS, replace(base, statuses=(*base.statuses, extra))])
    assert found is not None and found.restarts == 9
