"""The health window judged directly on one pod at its edges (``autoroll.core.health``): what it
answers, word for word, for a replacement (a pod on a moving tag's target) and for a pod on the
old content, whose restarts say nothing of the new image and are only ever waited for."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta

import pytest

from autoroll.core.decide import Decision, Reason, Sighting
from autoroll.core.health import PASSED, Health, HealthState, HealthWindow, health_window
from autoroll.core.images import TagRef
from autoroll.core.model import ContainerView, Digest, PodView
from tests.support import decide_cases as cases
from tests.support.decide_scene import decide_app

NOW = cases.AFTER + timedelta(hours=1)
LENGTH = timedelta(seconds=30)
LIMIT = "its 30s health window (ROLL_HEALTHY_SECONDS)"
INSIDE, FAILED = HealthState.INSIDE, HealthState.FAILED


def seconds_ago(value: float) -> datetime:
    return NOW - timedelta(seconds=value)


def restarted(base: PodView, *, restarts: int, since: datetime | None) -> PodView:
    """``base`` with each container restarted ``restarts`` times, Ready (or not) ``since``."""
    statuses = tuple(replace(s, restart_count=restarts) for s in base.statuses)
    return replace(base, statuses=statuses, ready_changed_at=since)


def shaped(name: str, *, ready: bool = True, since: datetime | None, restarts: int = 0) -> PodView:
    """``new`` runs the target, any other name the old content; Ready (or not) ``since``."""
    base = cases.pod(name, digest=cases.NEW if name == "new" else cases.OLD, ready=ready)
    return restarted(base, restarts=restarts, since=since)


def judged(one: PodView, *, seen: float | None = None, min_ready: int = 0) -> Health:
    """``seen``: an earlier pass of this roll saw the pod Ready that many seconds ago."""
    memory = {} if seen is None else {one.uid: seconds_ago(seen)}
    return health_window(
        pods=[one],
        replacements={"new"},
        window=HealthWindow(LENGTH, seen_ready=memory),
        min_ready_seconds=min_ready,
        now=NOW,
    )


ROWS = [
    (
        "a replacement with no container status yet: a slow start, no crash",
        replace(shaped("new", ready=False, since=None), statuses=()),
        PASSED,
    ),
    (
        "a wait is shown rounded up, the time served rounded down",
        shaped("new", since=seconds_ago(12.5)),
        Health(
            INSIDE,
            "new",
            f"replacement new available for 12s of {LIMIT}, 18s left",
            seconds_ago(-17.5),
        ),
    ),
    (
        "a restart inside the window fails it, and says when the window would end",
        shaped("new", since=seconds_ago(10), restarts=1),
        Health(
            FAILED,
            "new",
            f"replacement new restarted 1 time(s) inside {LIMIT};"
            " available again for 10s, 20s left",
            seconds_ago(-20),
            1,
        ),
    ),
    (
        "Ready since a time not known: waited for, with no end",
        shaped("new", since=None),
        Health(
            INSIDE, "new", f"replacement new Ready since an unknown time, so not through {LIMIT}"
        ),
    ),
    (
        "a restart with no known Ready time: a failure with no end",
        shaped("new", since=None, restarts=3),
        Health(
            FAILED,
            "new",
            "replacement new restarted 3 time(s);"
            f" Ready since an unknown time, so not through {LIMIT}",
            None,
            3,
        ),
    ),
    (
        "old content, not Ready: nothing added, settledness holds the roll",
        shaped("b", ready=False, since=None, restarts=2),
        PASSED,
    ),
    (
        "old content Ready again inside its window: waited for until it ends, no restarts told",
        shaped("b", since=seconds_ago(12), restarts=2),
        Health(
            INSIDE,
            "b",
            f"pod b restarted 2 time(s) inside {LIMIT}; available again for 12s, 18s left",
            seconds_ago(-18),
        ),
    ),
    (
        "old content Ready since a time not known: waited for with no end, no restarts told",
        shaped("b", since=None, restarts=2),
        Health(
            INSIDE,
            "b",
            f"pod b restarted 2 time(s); Ready since an unknown time, so not through {LIMIT}",
        ),
    ),
]


@pytest.mark.parametrize(("case", "one", "expected"), ROWS, ids=[r[0] for r in ROWS])
def test_one_pod_judged(case: str, one: PodView, expected: Health) -> None:
    assert judged(one) == expected, case


def test_min_ready_seconds_lengthens_the_window_an_unready_pod_failed_in() -> None:
    """Seen Ready 40 s ago, unready now: outside a 30 s window, inside 30 s + 20 s of
    ``minReadySeconds``."""
    went = shaped("new", ready=False, since=NOW)
    assert judged(went, seen=40) == PASSED
    assert judged(went, seen=40, min_ready=20) == Health(
        FAILED, "new", f"replacement new went unready 40s after it became Ready, inside {LIMIT}"
    )


def test_at_the_end_of_the_window_a_pod_that_went_unready_has_passed_it() -> None:
    assert judged(shaped("new", ready=False, since=NOW), seen=30) == PASSED


def judged_all(pods: list[PodView]) -> Health:
    return health_window(
        pods=pods,
        replacements={"a", "new", "new-2"},
        window=HealthWindow(LENGTH),
        min_ready_seconds=0,
        now=NOW,
    )


def test_the_wait_is_named_by_the_last_pod_to_pass_its_window() -> None:
    early, late = shaped("new", since=seconds_ago(25)), shaped("new-2", since=seconds_ago(5))
    for pods in ([early, late], [late, early]):
        assert judged_all(pods).pod == "new-2"
        assert judged_all(pods).until == seconds_ago(-25)


def test_two_pods_ending_their_window_together_name_the_same_one_every_pass() -> None:
    one, two = shaped("new", since=seconds_ago(5)), shaped("new-2", since=seconds_ago(5))
    assert judged_all([one, two]).pod == judged_all([two, one]).pod == "new-2"


def test_a_pod_gone_or_going_is_not_judged_and_does_not_end_the_judging() -> None:
    """Replacement ``a`` sorts first and crashed: being deleted, or exited, it is passed over,
    and ``new``, which restarted inside its window, still fails the window."""
    failing = shaped("new", since=seconds_ago(10), restarts=1)
    for gone in (
        replace(shaped("a", ready=False, since=None, restarts=4), deleting=True),
        replace(shaped("a", ready=False, since=None, restarts=4), phase="Succeeded"),
    ):
        assert judged_all([gone, failing]).state is FAILED
        assert judged_all([gone]) == PASSED


@pytest.mark.parametrize(
    ("created", "listed", "state"),
    [
        (cases.SEEN, False, FAILED),  # made in the sighting's instant: a replacement
        (cases.AFTER, True, INSIDE),  # listed when the target was first seen: older than it
        (cases.BEFORE, False, INSIDE),  # pulled the new content on its own, before the push
    ],
)
def test_a_lone_pod_on_the_target_is_a_replacement_only_if_made_after_the_push(
    created: datetime, listed: bool, state: HealthState
) -> None:
    """One replica, no stale sibling: the pod counts as the roll's replacement (its restart
    fails the window) only when it was made after the target was first seen."""
    base = replace(shaped("new", since=seconds_ago(10), restarts=1), created_at=created)
    older = frozenset({base.uid}) if listed else frozenset()
    decision = decide_app(
        [base],
        workload=cases.deployment(replicas=1),
        sightings={cases.REF: Sighting(cases.NEW, cases.SEEN, older)},
        now=NOW,
        health=HealthWindow(LENGTH),
    )
    assert decision.health.state is state


def with_sidecar(pods: list[PodView], sightings: dict[TagRef, Sighting]) -> Decision:
    """``decide`` for one pod or two of the app Deployment with a second container, ``side``,
    both tags resolved to ``NEW``, under a 30 s health window."""
    return decide_app(
        pods,
        workload=cases.deployment(
            ContainerView("app", cases.IMAGE, "Always"),
            ContainerView("side", cases.SIDE_IMAGE, "Always"),
            replicas=len(pods),
        ),
        resolved={cases.REF: cases.NEW, cases.SIDE_REF: cases.NEW},
        sightings=sightings,
        now=NOW,
        health=HealthWindow(LENGTH),
    )


def restarted_side_replacement(app: Digest) -> PodView:
    """Made after ``side``'s target was first seen, running it (app on ``app``); it restarted
    10 s ago."""
    made = cases.pod(
        "new", digest=app, created=cases.AFTER, extra=[("side", cases.SIDE_IMAGE, cases.NEW)]
    )
    return restarted(made, restarts=1, since=seconds_ago(10))


def test_a_second_containers_replacement_is_judged_while_the_first_still_has_stale_pods() -> None:
    """``side`` rolled first and its replacement restarted; then ``app``'s tag moved, so every
    pod is stale in ``app``. The failed replacement of ``side`` still holds ``app``'s roll."""
    pods = [
        cases.pod("b", extra=[("side", cases.SIDE_IMAGE, cases.NEW)]),
        restarted_side_replacement(cases.OLD),
    ]
    decision = with_sidecar(
        pods,
        {
            cases.REF: Sighting(cases.NEW, cases.AFTER + timedelta(minutes=1)),
            cases.SIDE_REF: Sighting(cases.NEW, cases.SEEN),
        },
    )
    assert (decision.health.state, decision.health.pod) == (FAILED, "new")
    assert decision.actions == ()
    assert decision.containers[0].reason is Reason.FAILED_HEALTH_WINDOW


@pytest.mark.parametrize(
    "app_sighting",
    [None, Sighting(cases.OTHER, cases.SEEN)],
    ids=["app's target never seen", "app's tag seen on another target"],
)
def test_a_second_containers_replacement_is_judged_whatever_the_first_ones_sighting(
    app_sighting: Sighting | None,
) -> None:
    """One replica, fully rolled: when ``app``'s sighting says nothing of the pod, ``side``'s
    still makes it a replacement, and its restart fails the window."""
    sightings = {cases.SIDE_REF: Sighting(cases.NEW, cases.SEEN)}
    if app_sighting is not None:
        sightings[cases.REF] = app_sighting
    decision = with_sidecar([restarted_side_replacement(cases.NEW)], sightings)
    assert (decision.health.state, decision.health.pod) == (FAILED, "new")
