"""Is a rollout halted? The pure check behind the halted-rollout warning.

A rollout waits while a pod is not Ready (``decide`` says ``waiting (not-settled)``). That is
right for a slow start and wrong to stay quiet about for a crash-looping or unpullable new
image: after ``after`` the shell says loudly that the rollout is halted and why (a WARNING
each pass, the ``autoroll_rollouts_halted`` gauge, one Warning Event per halt).

A replacement that restarted or went unready inside its health window (``autoroll.core.health``:
``decide`` says ``waiting (failed-health-window)``) halts the rollout at once, by the same
path: there is no slow start to wait out, the new image has already failed once. That holds
with no stale pod left to wait too (a one-replica workload): the roll ended on a pod that
fails, which is what the quarantine (``autoroll.core.quarantine``) needs to know.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum

from autoroll.core.decision import Decision, PodState, Reason, SettledReason, Verdict
from autoroll.core.health import HealthState
from autoroll.core.model import PodView


class HaltReason(StrEnum):
    """Why a rollout counts as halted. Stable strings: the log line's ``reason`` field."""

    NOT_READY = "rollout-halted"  # a pod not Ready for the bound (a crash loop, no pull)
    FAILED_HEALTH_WINDOW = "failed-health-window"  # a replacement failed inside its window


@dataclass(frozen=True, slots=True)
class RolloutHalt:
    """A rollout that has waited longer than the bound on a pod that does not become Ready
    (a crash-looping or unpullable new image, a failing readiness probe), or whose
    replacement failed inside its health window (``detail`` says how)."""

    workload: str  # its key: namespace/kind/name
    pod: str
    unready_for: timedelta
    restarts: int
    waiting: int  # stale pods that wait behind it
    reason: HaltReason = HaltReason.NOT_READY
    detail: str = ""

    def message(self) -> str:
        if self.reason is HaltReason.FAILED_HEALTH_WINDOW:
            return (
                f"rollout of {self.workload} is halted: {self.detail}; {self.waiting} stale"
                " pod(s) wait until it has been healthy for a whole window (fix or roll back"
                " the image)"
            )
        minutes = int(self.unready_for.total_seconds()) // 60
        seconds = int(self.unready_for.total_seconds()) % 60
        return (
            f"rollout of {self.workload} is halted: pod {self.pod} has not been Ready for"
            f" {minutes}m{seconds:02d}s ({self.restarts} restart(s)); {self.waiting} stale"
            " pod(s) wait until it is Ready (fix or roll back the image)"
        )


def rollout_halt(
    *, decision: Decision, pods: Sequence[PodView], now: datetime, after: timedelta
) -> RolloutHalt | None:
    """Has this workload's rollout been stuck for at least ``after``? Stale pods wait only
    because a pod is not Ready, and that pod has been unready (since its Ready condition last
    changed, else since it was created) for at least ``after``; or a replacement failed
    inside its health window (at once)."""
    failed = _failed_window(decision, pods, now)
    if failed is not None:
        return failed
    stale = _stale_waiting(decision, Reason.NOT_SETTLED)
    if not stale:
        # Nothing waits to be rolled: a pod that is not Ready is not autoroll's concern.
        return None
    if decision.settledness.reason is not SettledReason.POD_NOT_READY:
        # Terminating, scaling or its controller busy: the rollout moves, or waits on that
        # controller (a StatefulSet or DaemonSet status not settled is not a halt of ours).
        return None
    stuck = [
        (now - (p.ready_changed_at or p.created_at), p)
        for p in pods
        if not p.is_terminal and not p.deleting and not p.ready
    ]
    stuck = [(age, p) for age, p in stuck if age >= after]
    if not stuck:
        # Within the bound: a slow start, not yet a halt.
        return None
    age, pod = max(stuck, key=lambda item: (item[0], item[1].name))
    restarts = max((s.restart_count for s in pod.statuses), default=0)
    return RolloutHalt(decision.key, pod.name, age, restarts, len(stale - {pod.name}))


def _stale_waiting(decision: Decision, reason: Reason) -> set[str]:
    """Names of the stale pods that containers waiting for ``reason`` hold back."""
    return {
        f.pod
        for v in decision.containers
        if v.verdict is Verdict.WAITING and v.reason is reason
        for f in v.pods
        if f.state is PodState.STALE
    }


def _failed_window(
    decision: Decision, pods: Sequence[PodView], now: datetime
) -> RolloutHalt | None:
    """The halt of a replacement that failed inside its health window, if ``decide`` says so:
    stale pods wait behind it, or none is left (a one-replica workload's roll ended on it)."""
    stale = _stale_waiting(decision, Reason.FAILED_HEALTH_WINDOW)
    health = decision.health
    if not stale and health.state is not HealthState.FAILED:
        return None
    pod = next((p for p in pods if p.name == health.pod), None)
    unready_for = timedelta(0)  # Ready again (after a restart): not unready at all
    if pod is not None and not pod.ready:
        unready_for = max(timedelta(0), now - (pod.ready_changed_at or pod.created_at))
    return RolloutHalt(
        decision.key,
        health.pod,
        unready_for,
        health.restarts,
        len(stale - {health.pod}),
        HaltReason.FAILED_HEALTH_WINDOW,
        health.detail,
    )
