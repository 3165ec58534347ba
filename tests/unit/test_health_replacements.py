"""The health window on a replacement at its edges (``autoroll.core.health``), judged directly:
a pod with no container status yet, ``minReadySeconds`` lengthening the window a pod that went
unready is judged in, and a restart whose Ready time is not known."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

from autoroll.core.health import PASSED, Health, HealthState, HealthWindow, health_window
from autoroll.core.model import PodView
from tests.support.decide_cases import AFTER, NEW, pod

NOW = AFTER + timedelta(hours=1)
LENGTH = timedelta(seconds=30)
LIMIT = "its 30s health window (ROLL_HEALTHY_SECONDS)"


def judged(new: PodView, *, window: HealthWindow | None = None, min_ready: int = 0) -> Health:
    return health_window(
        pods=[new],
        replacements={new.name},
        window=window or HealthWindow(LENGTH),
        min_ready_seconds=min_ready,
        now=NOW,
    )


def test_a_replacement_with_no_container_status_yet_has_not_restarted() -> None:
    """Scheduled, its containers not reported: a slow start that settledness holds, no crash."""
    starting = replace(pod("new", digest=NEW, ready=False), statuses=(), ready_changed_at=None)
    assert judged(starting) == PASSED


def test_min_ready_seconds_lengthens_the_window_an_unready_pod_failed_in() -> None:
    """Seen Ready 40 s ago, unready now: outside a 30 s window, inside 30 s + 20 s of
    ``minReadySeconds``."""
    new = replace(pod("new", digest=NEW, ready=False), ready_changed_at=NOW)
    window = HealthWindow(LENGTH, seen_ready={new.uid: NOW - timedelta(seconds=40)})
    assert judged(new, window=window) == PASSED
    assert judged(new, window=window, min_ready=20) == Health(
        HealthState.FAILED,
        "new",
        f"replacement new went unready 40s after it became Ready, inside {LIMIT}",
    )


def test_at_the_end_of_the_window_a_pod_that_went_unready_has_passed_it() -> None:
    new = replace(pod("new", digest=NEW, ready=False), ready_changed_at=NOW)
    window = HealthWindow(LENGTH, seen_ready={new.uid: NOW - LENGTH})
    assert judged(new, window=window) == PASSED


def test_a_restart_with_no_known_ready_time_is_a_failure_with_no_end() -> None:
    base = pod("new", digest=NEW)
    statuses = tuple(replace(s, restart_count=3) for s in base.statuses)
    new = replace(base, statuses=statuses, ready_changed_at=None)
    assert judged(new) == Health(
        HealthState.FAILED,
        "new",
        f"replacement new restarted 3 time(s); Ready since an unknown time, so not through {LIMIT}",
        None,
        3,
    )


def test_a_wait_is_shown_rounded_up_and_the_time_served_rounded_down() -> None:
    """Ready 12.5 s ago: 12 s served, 17.5 s left shown as 18 s, never shorter than it is."""
    new = replace(pod("new", digest=NEW), ready_changed_at=NOW - timedelta(seconds=12.5))
    assert judged(new) == Health(
        HealthState.INSIDE,
        "new",
        f"replacement new available for 12s of {LIMIT}, 18s left",
        NOW + timedelta(seconds=17.5),
    )


def test_a_restart_inside_the_window_fails_and_says_when_it_would_end() -> None:
    base = pod("new", digest=NEW)
    statuses = tuple(replace(s, restart_count=1) for s in base.statuses)
    new = replace(base, statuses=statuses, ready_changed_at=NOW - timedelta(seconds=10))
    assert judged(new) == Health(
        HealthState.FAILED,
        "new",
        f"replacement new restarted 1 time(s) inside {LIMIT}; available again for 10s, 20s left",
        NOW + timedelta(seconds=20),
        1,
    )


def test_ready_since_a_time_not_known_is_waited_for() -> None:
    new = replace(pod("new", digest=NEW), ready_changed_at=None)
    assert judged(new) == Health(
        HealthState.INSIDE,
        "new",
        f"replacement new Ready since an unknown time, so not through {LIMIT}",
    )
