"""The health window on a pod that is no replacement (it runs the old content) and restarted:
its restarts say nothing of the new image, so it is only waited for, never a failure, and the
wait reports no restarts of the new image (``autoroll.core.health``)."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta

from autoroll.core.health import PASSED, Health, HealthState, HealthWindow, health_window
from autoroll.core.model import PodView
from tests.support.decide_cases import AFTER, OLD, pod

NOW = AFTER + timedelta(hours=1)
WINDOW = HealthWindow(timedelta(seconds=30))
LIMIT = "its 30s health window (ROLL_HEALTHY_SECONDS)"


def restarted(*, ready: bool, ready_since: datetime | None) -> PodView:
    """Pod ``b`` on the old content, its container restarted twice."""
    base = pod("b", digest=OLD, ready=ready)
    statuses = tuple(replace(s, restart_count=2) for s in base.statuses)
    return replace(base, statuses=statuses, ready_changed_at=ready_since)


def judged(old: PodView) -> Health:
    return health_window(
        pods=[old], replacements={"new"}, window=WINDOW, min_ready_seconds=0, now=NOW
    )


def test_not_ready_it_adds_nothing_settledness_holds_the_roll() -> None:
    assert judged(restarted(ready=False, ready_since=None)) == PASSED


def test_ready_again_inside_its_window_it_is_waited_for_until_the_window_ends() -> None:
    old = restarted(ready=True, ready_since=NOW - timedelta(seconds=12))
    assert judged(old) == Health(
        HealthState.INSIDE,
        "b",
        f"pod b restarted 2 time(s) inside {LIMIT}; available again for 12s, 18s left",
        NOW + timedelta(seconds=18),
        0,
    )


def test_ready_since_a_time_not_known_it_is_waited_for_with_no_end() -> None:
    old = restarted(ready=True, ready_since=None)
    assert judged(old) == Health(
        HealthState.INSIDE,
        "b",
        f"pod b restarted 2 time(s); Ready since an unknown time, so not through {LIMIT}",
        None,
        0,
    )
