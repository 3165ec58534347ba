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

from autoroll.core.halt import HaltReason, RolloutHalt, rollout_halt
from autoroll.core.health import HealthWindow
from autoroll.core.model import ContainerStatusView, PodView, WorkloadView
from tests.support import kind_views as kinds
from tests.support.decide_cases import AFTER, NEW, OLD, deployment, pod
from tests.support.decide_scene import decide_app

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
    decision = decide_app(pods, workload=deployment(replicas=replicas))
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
    assert found == RolloutHalt("ns/deployment/app", "new", timedelta(minutes=15), 7, 2)
    assert found.message() == (
        "rollout of ns/deployment/app is halted: pod new has not been Ready for 15m00s"
        " (7 restart(s));"
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


# -- the other kinds: a crash-looping replacement halts them the same way; a rollout their own
# controller has in hand (every pod Ready) is not a halt.


def kind_halt(workload: WorkloadView, pods: list[PodView]) -> RolloutHalt | None:
    decision = kinds.run(workload, pods, nodes={p.node: kinds.READY for p in pods})
    return rollout_halt(
        decision=decision, pods=pods, now=kinds.SEEN + timedelta(hours=1), after=BOUND
    )


def kind_crashing(name: str) -> PodView:
    base = kinds.pod(name, digest=kinds.NEW, ready=False, created=kinds.SEEN + timedelta(minutes=1))
    return replace(base, ready_changed_at=kinds.SEEN + timedelta(minutes=2))


def test_a_statefulset_behind_a_crash_looping_ordinal_is_halted() -> None:
    pods = [*kinds.sts_pods(2), kind_crashing("db-2")]
    found = kind_halt(kinds.statefulset(ready_replicas=2), pods)
    assert found is not None and (found.workload, found.pod) == ("ns/statefulset/db", "db-2")
    assert found.waiting == 2


def test_a_daemonset_behind_a_crash_looping_pod_is_halted() -> None:
    pods = [*kinds.ds_pods(2), kind_crashing("agent-z")]
    found = kind_halt(kinds.daemonset(number_ready=2, number_unavailable=1), pods)
    assert found is not None and (found.workload, found.pod) == ("ns/daemonset/agent", "agent-z")


def test_a_statefulset_whose_own_rollout_is_in_progress_is_not_halted() -> None:
    # Every pod Ready, the StatefulSet controller mid-rollout: waiting, but on its controller.
    held = kinds.statefulset(
        current_revision=kinds.REV, update_revision=kinds.NEXT_REV, partition=2
    )
    assert kind_halt(held, kinds.sts_pods(3)) is None


def test_a_pod_unready_for_exactly_the_bound_is_halted() -> None:
    found = halt([*OLD_PODS, crashing(created=NOW - BOUND)])
    assert found is not None and found.unready_for == BOUND


def test_a_tie_on_how_long_is_broken_by_name_whatever_the_order() -> None:
    """Two pods unready for the same time: the same one is named every pass, so the warning
    and its Event do not flip between them."""
    twins = [crashing("new-a"), crashing("new-b")]
    for order in (twins, twins[::-1]):
        found = halt([*OLD_PODS, *order], replicas=4)
        assert found is not None and found.pod == "new-b"


# -- a replacement that failed inside its health window halts at once; the halt says how long
# it has been unready (nothing when it is Ready again) and how many stale pods wait.

WINDOW = HealthWindow(timedelta(seconds=30))


def failed_replacement(*, ready: bool, since: timedelta = timedelta(seconds=12)) -> PodView:
    """The new pod: restarted twice, its Ready condition last changed ``since`` ago."""
    base = pod("new", digest=NEW, created=AFTER, ready=ready)
    statuses = tuple(replace(s, restart_count=2) for s in base.statuses)
    return replace(base, statuses=statuses, ready_changed_at=NOW - since)


def window_halt(pods: list[PodView], *, replicas: int) -> RolloutHalt | None:
    decision = decide_app(pods, workload=deployment(replicas=replicas), now=NOW, health=WINDOW)
    return rollout_halt(decision=decision, pods=pods, now=NOW, after=BOUND)


def test_a_failed_replacement_that_is_unready_says_for_how_long() -> None:
    found = window_halt([*OLD_PODS, failed_replacement(ready=False)], replicas=3)
    assert found is not None
    assert (found.reason, found.pod, found.unready_for, found.restarts, found.waiting) == (
        HaltReason.FAILED_HEALTH_WINDOW,
        "new",
        timedelta(seconds=12),
        2,
        2,
    )


def test_a_failed_replacement_that_is_ready_again_is_not_unready_at_all() -> None:
    found = window_halt([*OLD_PODS, failed_replacement(ready=True)], replicas=3)
    assert found is not None
    assert (found.reason, found.unready_for) == (HaltReason.FAILED_HEALTH_WINDOW, timedelta(0))


def test_a_one_replica_roll_that_ended_on_a_failed_replacement_is_halted() -> None:
    """No stale pod is left to wait, yet the roll ended on a pod that failed: the quarantine
    needs this halt."""
    found = window_halt([failed_replacement(ready=True)], replicas=1)
    assert found is not None
    assert (found.reason, found.pod, found.unready_for, found.waiting) == (
        HaltReason.FAILED_HEALTH_WINDOW,
        "new",
        timedelta(0),
        0,
    )
