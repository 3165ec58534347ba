"""The health window: has the last replacement stayed healthy long enough? Pure.

Settled (``autoroll.core.kinds``) says a workload's controller has nothing in hand and every pod
is available (Ready, for ``minReadySeconds`` when set). That is the moment a new image has
*started*; a crash 20 s later is not seen by it. So every live pod of the workload, and
above all a *replacement* (a pod that already runs a moving tag's target), must also have
stayed available, with no container restart, for the workload's health window
(``ROLL_HEALTHY_SECONDS``, or the ``autoroll.aethnet.se/health-window`` annotation) before
the workload loses its next pod. Every pod, not only the replacements ``decide`` can name:
a pass targeted at one tag does not judge the others, and the pod it would delete pulls
them all, so a replacement on another tag's new content must be waited for too::

    available at  = Ready since (the Ready condition's lastTransitionTime) + minReadySeconds
    healthy at    = available at + window

One answer per workload, a ladder over its live pods:

1. ``failed``  a replacement restarted a container and has not been available for a whole
               window since (a restart resets its Ready time, so this is "restarted inside
               its window"), or an earlier pass of this roll saw it available and it is not
               Ready now, inside that window (``seen_ready``: without that memory, after a
               restart of autoroll or a new leader, an unready pod is only not settled);
               the roll halts, reported as a crash loop is (``autoroll.core.halt``);
2. ``inside``  a pod has been available (since its last restart) for less than the
               window, or since a time not known (the safe answer: wait); ``until`` says
               when it will have been;
3. ``passed``  every pod has been available for the whole window (or the window is 0: off).

A pod on other content that restarted is only waited for, never a failure of the new image.

The answer only ever adds a wait: it never makes a workload settled that is not.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Final

from autoroll.core.model import PodView

#: The default window: long enough for a crash a few seconds after start to show, short
#: enough that a roll of ten pods takes minutes (docs/adr/016-guardrails.md, issue 26).
DEFAULT_HEALTHY: Final = timedelta(seconds=30)
#: The longest window accepted: a window is a few minutes of watching, not a soak test.
MAX_HEALTHY: Final = timedelta(hours=1)


class HealthState(StrEnum):
    PASSED = "passed"
    INSIDE = "inside"
    FAILED = "failed"


@dataclass(frozen=True, slots=True)
class HealthWindow:
    """One workload's health window as a pass judges it.

    ``length`` 0 turns it off; ``source`` names where it comes from, for the detail people
    read; ``seen_ready`` is the shell's memory of this roll: for each replacement an earlier
    pass saw available, by UID, when it had become Ready then.
    """

    length: timedelta = DEFAULT_HEALTHY
    source: str = "ROLL_HEALTHY_SECONDS"
    seen_ready: Mapping[str, datetime] = field(default_factory=dict)


OFF: Final = HealthWindow(timedelta(0))


@dataclass(frozen=True, slots=True)
class Health:
    """The window's answer: ``pod`` is the replacement it is about (empty when passed),
    ``until`` when the window can end (None: not known, or failed while not Ready)."""

    state: HealthState
    pod: str = ""
    detail: str = ""
    until: datetime | None = None
    restarts: int = 0

    @property
    def passed(self) -> bool:
        return self.state is HealthState.PASSED


PASSED: Final = Health(HealthState.PASSED)


def health_window(
    *,
    pods: Iterable[PodView],
    replacements: Collection[str],
    window: HealthWindow,
    min_ready_seconds: int,
    now: datetime | None,
) -> Health:
    """Have the live ``pods`` all stayed healthy for the window, and has none of the
    ``replacements`` (names of the pods running a moving tag's target) failed inside it?
    ``now`` None (no clock given) cannot tell how long: inside, unless the window is off."""
    if window.length <= timedelta(0):
        return PASSED
    failed: list[Health] = []
    inside: list[Health] = []
    min_ready = timedelta(seconds=max(0, min_ready_seconds))
    for pod in sorted(pods, key=lambda p: p.name):
        if pod.is_terminal or pod.deleting:
            continue  # gone or going: not a pod that can fail or pass any more
        noun = "replacement" if pod.name in replacements else "pod"
        answer = _judge(pod, noun, window, min_ready, now)
        if answer.state is HealthState.FAILED and pod.name not in replacements:
            # Old content restarting says nothing of the new image: only wait for it.
            answer = _not_failed(answer, pod)
        if answer.state is HealthState.FAILED:
            failed.append(answer)
        elif answer.state is HealthState.INSIDE:
            inside.append(answer)
    if failed:
        return failed[0]
    if inside:
        # The last to pass names the wait: until every replacement has passed.
        known = [h for h in inside if h.until is not None]
        if len(known) < len(inside):
            return next(h for h in inside if h.until is None)
        return max(known, key=lambda h: (h.until, h.pod))
    return PASSED


def _judge(
    pod: PodView, noun: str, window: HealthWindow, min_ready: timedelta, now: datetime | None
) -> Health:
    restarts = max((s.restart_count for s in pod.statuses), default=0)
    length = window.length
    limit = f"its {_seconds(length)} health window ({window.source})"
    if not pod.ready:
        seen = window.seen_ready.get(pod.uid)
        if restarts:
            # A replacement that restarted and is not back: a crash inside its window.
            return Health(
                HealthState.FAILED,
                pod.name,
                f"{noun} {pod.name} restarted {restarts} time(s) and is not Ready, inside {limit}",
                None,
                restarts,
            )
        if seen is not None and now is not None and now < seen + min_ready + length:
            # Seen available by an earlier pass of this roll, unready now: it failed inside.
            return Health(
                HealthState.FAILED,
                pod.name,
                f"{noun} {pod.name} went unready"
                f" {int((now - seen).total_seconds())}s after it became Ready, inside {limit}",
            )
        # Not Ready yet (a slow start) or unready after its window: not settled, which
        # holds the roll already (and reports a long wait as halted).
        return PASSED
    since = pod.ready_changed_at
    if since is None or now is None:
        if restarts:
            return Health(
                HealthState.FAILED,
                pod.name,
                f"{noun} {pod.name} restarted {restarts} time(s); Ready since an unknown"
                f" time, so not through {limit}",
                None,
                restarts,
            )
        return Health(
            HealthState.INSIDE,
            pod.name,
            f"{noun} {pod.name} Ready since an unknown time, so not through {limit}",
        )
    healthy_at = since + min_ready + length
    if now >= healthy_at:
        return PASSED  # a whole window available since its last restart
    available_for = max(timedelta(0), now - since - min_ready)
    left = healthy_at - now  # shown rounded up, the time served rounded down
    if restarts:
        # Its Ready time is after its last restart: the restart was inside its window.
        return Health(
            HealthState.FAILED,
            pod.name,
            f"{noun} {pod.name} restarted {restarts} time(s) inside {limit}; available"
            f" again for {int(available_for.total_seconds())}s, {_seconds(left)} left",
            healthy_at,
            restarts,
        )
    return Health(
        HealthState.INSIDE,
        pod.name,
        f"{noun} {pod.name} available for {int(available_for.total_seconds())}s of {limit},"
        f" {_seconds(left)} left",
        healthy_at,
    )


def _not_failed(answer: Health, pod: PodView) -> Health:
    """A failure of a pod that is no replacement: a wait until its window has passed (while
    Ready), or nothing while it is not Ready (not settled holds the roll then)."""
    if answer.until is None and not pod.ready:
        return PASSED
    return replace(answer, state=HealthState.INSIDE, restarts=0)


def _seconds(value: timedelta) -> str:
    """Whole seconds, rounded up (a wait is never shown shorter than it is)."""
    total = value.total_seconds()
    whole = int(total)
    return f"{whole + (1 if total > whole else 0)}s"


__all__ = [
    "DEFAULT_HEALTHY",
    "MAX_HEALTHY",
    "OFF",
    "PASSED",
    "Health",
    "HealthState",
    "HealthWindow",
    "health_window",
]
