"""Table tests for the health window (``autoroll.core.health``), through ``decide`` as the shell
calls it, and the halt it causes (``autoroll.core.halt``).

A Deployment of three: two pods on the old digest, one replacement on the new one. Each row
sets the replacement's Ready time, restarts and readiness, the window and
``minReadySeconds``, and says what ``decide`` concludes for the container: the stale pod
goes (``stale``), waits on the window (``health-window``), halts (``failed-health-window``)
or waits on settledness as before (``not-settled``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from datetime import datetime, timedelta

import pytest

from autoroll.core.decide import Decision, Reason, Verdict
from autoroll.core.halt import HaltReason, rollout_halt
from autoroll.core.health import OFF, HealthState, HealthWindow, health_window
from autoroll.core.model import PodView, WorkloadView
from autoroll.core.policy import HEALTH_WINDOW, Guardrails, workload_policy
from tests.support.decide_cases import AFTER, NEW, OLD, deployment, pod
from tests.support.decide_scene import decide_app

NOW = AFTER + timedelta(hours=1)
WINDOW = HealthWindow(timedelta(seconds=30))


def replacement(
    *,
    ready_for: float | None = 300.0,
    restarts: int = 0,
    ready: bool = True,
    name: str = "new",
) -> PodView:
    """The pod on the new digest, Ready (or unready) for ``ready_for`` seconds (None: the
    time is not reported), with ``restarts`` restarts."""
    base = pod(name, digest=NEW, created=AFTER, ready=ready)
    statuses = tuple(replace(s, restart_count=restarts) for s in base.statuses)
    since = None if ready_for is None else NOW - timedelta(seconds=ready_for)
    return replace(base, statuses=statuses, ready_changed_at=since)


def old(name: str) -> PodView:
    return replace(pod(name, digest=OLD), ready_changed_at=NOW - timedelta(days=1))


def workload(min_ready: int = 0, annotations: Mapping[str, str] | None = None) -> WorkloadView:
    return replace(
        deployment(replicas=3),
        min_ready_seconds=min_ready,
        annotations=tuple(sorted((annotations or {}).items())),
    )


def decided(
    new: PodView | None = None,
    *,
    window: HealthWindow = WINDOW,
    w: WorkloadView | None = None,
    now: datetime | None = NOW,
    pods: list[PodView] | None = None,
) -> Decision:
    """``decide`` with the window: pods ``a`` and ``b`` on the old content and ``new``, unless
    ``pods`` names them all."""
    return decide_app(
        pods if pods is not None else [old("a"), old("b"), *([new] if new else [])],
        workload=w or workload(),
        now=now,
        health=window,
    )


def outcome(decision: Decision) -> str:
    verdict = decision.containers[0]
    if verdict.verdict is Verdict.STALE:
        return "stale"
    return verdict.reason.value


SEEN_READY = HealthWindow(
    timedelta(seconds=30), seen_ready={"uid-new": NOW - timedelta(seconds=20)}
)


@pytest.mark.parametrize(
    ("case", "new", "window", "min_ready", "expected", "left"),
    [
        (
            "outside the window: the next pod goes",
            replacement(ready_for=300),
            WINDOW,
            0,
            "stale",
            None,
        ),
        ("exactly through the window", replacement(ready_for=30), WINDOW, 0, "stale", None),
        ("inside the window", replacement(ready_for=12), WINDOW, 0, "health-window", "18s left"),
        ("Ready this instant", replacement(ready_for=0), WINDOW, 0, "health-window", "30s left"),
        (
            "Ready time not reported: the safe answer is to wait",
            replacement(ready_for=None),
            WINDOW,
            0,
            "health-window",
            "unknown time",
        ),
        (
            "a restart inside the window halts",
            replacement(ready_for=12, restarts=1),
            WINDOW,
            0,
            "failed-health-window",
            "restarted 1 time(s)",
        ),
        (
            "a restart, then a whole window available: it passed",
            replacement(ready_for=45, restarts=1),
            WINDOW,
            0,
            "stale",
            None,
        ),
        (
            "restarted and not Ready again: halts at once",
            replacement(ready_for=5, restarts=2, ready=False),
            WINDOW,
            0,
            "failed-health-window",
            "is not Ready",
        ),
        (
            "unready inside the window (an earlier pass saw it Ready): halts",
            replacement(ready_for=3, ready=False),
            SEEN_READY,
            0,
            "failed-health-window",
            "went unready",
        ),
        (
            "unready, never seen Ready: a slow start, not settled as before",
            replacement(ready_for=3, ready=False),
            WINDOW,
            0,
            "not-settled",
            None,
        ),
        (
            "unready after its window: not settled, no window failure",
            replacement(ready_for=3, ready=False),
            HealthWindow(
                timedelta(seconds=10), seen_ready={"uid-new": NOW - timedelta(seconds=60)}
            ),
            0,
            "not-settled",
            None,
        ),
        ("window 0 turns it off", replacement(ready_for=0), OFF, 0, "stale", None),
        (
            "window 0 and a restart: off means off",
            replacement(ready_for=0, restarts=3),
            OFF,
            0,
            "stale",
            None,
        ),
        (
            "minReadySeconds first: not available yet, not settled",
            replacement(ready_for=20),
            WINDOW,
            30,
            "not-settled",
            None,
        ),
        (
            "minReadySeconds then the window: available 10 s of 30",
            replacement(ready_for=40),
            WINDOW,
            30,
            "health-window",
            "available for 10s",
        ),
        (
            "minReadySeconds then the whole window",
            replacement(ready_for=60),
            WINDOW,
            30,
            "stale",
            None,
        ),
    ],
)
def test_the_health_window(
    *,
    case: str,
    new: PodView,
    window: HealthWindow,
    min_ready: int,
    expected: str,
    left: str | None,
) -> None:
    decision = decided(new, window=window, w=workload(min_ready))
    assert outcome(decision) == expected, (case, decision.containers[0])
    if expected == "stale":
        assert decision.actions and decision.actions[0].name in {"a", "b"}
    else:
        assert decision.actions == ()
    if left is not None:
        assert left in decision.containers[0].detail, decision.containers[0].detail


def test_the_wait_names_the_window_its_source_and_when_it_ends() -> None:
    decision = decided(replacement(ready_for=12))
    verdict = decision.containers[0]
    assert verdict.pod == "a"  # next in line
    assert verdict.detail == (
        "replacement new available for 12s of its 30s health window (ROLL_HEALTHY_SECONDS),"
        " 18s left"
    )
    assert decision.health.state is HealthState.INSIDE
    assert decision.health.until == NOW + timedelta(seconds=18)


def test_the_annotation_overrides_the_cluster_wide_window() -> None:
    defaults = Guardrails()  # 30 s
    for value, expected in (("0", "stale"), ("10s", "stale"), ("2m", "health-window")):
        w = workload(annotations={HEALTH_WINDOW: value})
        policy = workload_policy(dict(w.annotations), defaults=defaults)
        assert policy.is_valid
        decision = decided(replacement(ready_for=20), window=policy.health_window, w=w)
        assert outcome(decision) == expected, value
    w = workload(annotations={HEALTH_WINDOW: "2m"})
    window = workload_policy(dict(w.annotations), defaults=defaults).health_window
    detail = decided(replacement(ready_for=20), window=window, w=w).containers[0].detail
    assert f"its 120s health window ({HEALTH_WINDOW})" in detail


@pytest.mark.parametrize("value", ["soon", "-5s", "2h"])
def test_an_unreadable_annotation_is_a_policy_problem(value: str) -> None:
    policy = workload_policy({HEALTH_WINDOW: value}, defaults=Guardrails())
    assert [p.annotation for p in policy.problems] == [HEALTH_WINDOW]


def test_a_pod_on_old_content_that_restarted_is_waited_for_never_a_failure() -> None:
    """A pod that restarted but runs the old content is not a replacement: its restarts say
    nothing of the new image, but it has not been healthy for the window either."""
    crashing_old = replace(
        old("b"),
        statuses=tuple(replace(s, restart_count=4) for s in old("b").statuses),
        ready_changed_at=NOW,
    )
    decision = decided(pods=[old("a"), crashing_old, replacement(ready_for=300)])
    assert outcome(decision) == "health-window"
    assert decision.containers[0].detail.startswith("pod b restarted 4 time(s)")
    assert (
        rollout_halt(
            decision=decision, pods=[old("a"), crashing_old], now=NOW, after=timedelta(hours=1)
        )
        is None
    )


def test_a_young_pod_on_another_tags_new_content_holds_a_targeted_pass() -> None:
    """A pass targeted at one tag does not judge the other; the pod it would delete pulls
    both, so a pod that started 10 s ago (on the other tag's new content, for all this pass
    knows) is waited for. Found by the guardrails property."""
    young = replace(old("b"), ready_changed_at=NOW - timedelta(seconds=10))
    decision = decided(pods=[old("a"), young, old("c")])
    assert outcome(decision) == "health-window"
    assert (
        "pod b" not in decision.containers[0].detail or "20s left" in decision.containers[0].detail
    )


def test_no_clock_no_window_judged_passed_only_when_off() -> None:
    assert outcome(decided(replacement(), now=None)) == "health-window"
    assert health_window(
        pods=[replacement()], replacements={"new"}, window=OFF, min_ready_seconds=0, now=None
    ).passed


def test_a_failure_inside_the_window_halts_through_the_crash_loop_path() -> None:
    new = replacement(ready_for=12, restarts=2)
    decision = decided(new)
    halt = rollout_halt(
        decision=decision, pods=[old("a"), old("b"), new], now=NOW, after=timedelta(minutes=10)
    )
    assert halt is not None
    assert (halt.reason, halt.pod, halt.restarts, halt.waiting) == (
        HaltReason.FAILED_HEALTH_WINDOW,
        "new",
        2,
        2,
    )
    assert halt.message() == (
        "rollout of ns/deployment/app is halted: replacement new restarted 2 time(s) inside"
        " its 30s health window (ROLL_HEALTHY_SECONDS); available again for 12s, 18s left;"
        " 2 stale pod(s) wait until it has been healthy for a whole window (fix or roll back"
        " the image)"
    )


def test_waiting_inside_the_window_is_no_halt() -> None:
    new = replacement(ready_for=12)
    halt = rollout_halt(
        decision=decided(new), pods=[old("a"), old("b"), new], now=NOW, after=timedelta(0)
    )
    assert halt is None


def test_the_window_never_releases_what_settledness_holds() -> None:
    """Every row's window at 0 and at 30 s: the window only ever takes a deletion away."""
    for new in (
        replacement(ready_for=0),
        replacement(ready_for=100, restarts=1),
        replacement(ready_for=None, ready=False),
        replacement(ready_for=5, ready=False),
    ):
        without = decided(new, window=OFF)
        with_window = decided(new)
        if not without.actions:
            assert not with_window.actions
        assert without.settledness == with_window.settledness
        assert Reason.HEALTH_WINDOW not in {v.reason for v in without.containers}
