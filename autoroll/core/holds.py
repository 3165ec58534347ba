"""Why a decided deletion waits (``Hold``, ``HoldReason``), and the per-workload rungs (pure).

``autoroll.core.guardrails.plan_rolls`` asks each decided deletion the rungs of its ladder in
turn; the first answer wins. The rungs here are the workload's own: its annotations must be
readable (``invalid-policy``), rolling must not be paused cluster-wide or for it
(``paused``), the digest it would pull must not be quarantined for its tag
(``quarantined``), its window must be open (``outside-window``) and every tag whose image
the deletion would change must have had its digest for the min-age (``maturing``). The
order across workloads and the budget come after them (``autoroll.core.rollorder``,
``autoroll.core.budget``). A hold says when the deletion may go (``until``), if a time can.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum

from autoroll.core.decision import RUNS_TARGET, ContainerVerdict, Decision, DeletePod, Sighting
from autoroll.core.images import TagRef
from autoroll.core.model import Digest
from autoroll.core.policy import Guardrails, Policy, format_duration
from autoroll.core.rollorder import RollOrder


class HoldReason(StrEnum):
    """Why a decided deletion waits. Stable strings: metrics and log lines use them."""

    INVALID_POLICY = "invalid-policy"
    PAUSED = "paused"
    QUARANTINED = "quarantined"
    OUTSIDE_WINDOW = "outside-window"
    MATURING = "maturing"
    WAVE = "wave"
    UNPROVEN = "unproven"
    BUDGET = "budget"

    @property
    def is_warning(self) -> bool:
        """Loud (WARNING, every pass): what a person did or must fix. The others are the
        guardrails working as configured."""
        return self in {HoldReason.INVALID_POLICY, HoldReason.PAUSED}


@dataclass(frozen=True, slots=True)
class Hold:
    """A deletion ``decide`` chose that does not go this pass. ``until`` is the earliest time
    it may (a window's opening, the min-age reached, the budget's next free deletion), None
    when a person must act (paused, invalid annotation)."""

    workload: str  # the workload's key
    action: DeletePod
    reason: HoldReason
    detail: str
    until: datetime | None = None


def policy_hold(
    key: str,
    action: DeletePod,
    decision: Decision,
    policy: Policy,
    guardrails: Guardrails,
    *,
    sightings: Mapping[TagRef, Sighting],
    now: datetime,
    order: RollOrder,
) -> Hold | None:
    if not policy.is_valid:
        # A guardrail that cannot be read might be one that forbids this: never guess.
        problems = "; ".join(str(p) for p in policy.problems)
        return Hold(key, action, HoldReason.INVALID_POLICY, f"{problems}; not rolled until fixed")
    if guardrails.paused:
        return Hold(key, action, HoldReason.PAUSED, "paused cluster-wide (ROLL_PAUSED=true)")
    if policy.paused:
        return Hold(
            key, action, HoldReason.PAUSED, "paused by annotation autoroll.aethnet.se/paused"
        )
    quarantined = order.quarantined(decision, action)
    if quarantined is not None:
        # A digest that halted a roll is rolled onto nowhere else (autoroll.core.quarantine).
        return Hold(key, action, HoldReason.QUARANTINED, quarantined.detail)
    windows = policy.windows
    if windows is not None and not windows.is_open(now):
        opens, local = windows.next_opening(now), windows.opening_text(now)
        source = (
            "annotation autoroll.aethnet.se/window"
            if "autoroll.aethnet.se/window" in policy.overridden
            else "ROLL_WINDOW"
        )
        return Hold(
            key,
            action,
            HoldReason.OUTSIDE_WINDOW,
            f"outside its window {windows} ({source}); next opens {local}, {_when(opens, now)}",
            opens,
        )
    return _maturing_hold(key, action, decision, policy, sightings=sightings, now=now)


def _maturing_hold(
    key: str,
    action: DeletePod,
    decision: Decision,
    policy: Policy,
    *,
    sightings: Mapping[TagRef, Sighting],
    now: datetime,
) -> Hold | None:
    """Deleting the pod restarts every container in it, and each pulls its tag again: every
    tag of the workload whose image the pod would change must be old enough."""
    if not policy.min_age:
        return None
    young: list[tuple[datetime | None, str]] = []
    for verdict in decision.containers:
        if verdict.ref is None or _runs_target(verdict, action.name):
            continue
        target = verdict.registry_digest
        sighting = sightings.get(verdict.ref)
        if not isinstance(target, Digest) or sighting is None or sighting.digest != target:
            # Unknown or unseen: its age cannot be told, so it is not old enough.
            young.append((None, f"{verdict.ref}: the age of its digest is unknown"))
            continue
        ready_at = sighting.first_seen_at + policy.min_age
        if ready_at > now:
            young.append(
                (
                    ready_at,
                    f"{verdict.ref} has been {target.short} for"
                    f" {format_duration(now - sighting.first_seen_at)}",
                )
            )
    if not young:
        return None
    known = [t for t, _ in young if t is not None]
    until = max(known) if len(known) == len(young) else None
    rolls = f"; rolls at {_when(until, now)}" if until is not None else ""
    return Hold(
        key,
        action,
        HoldReason.MATURING,
        f"{'; '.join(text for _, text in young)}, less than its min-age of"
        f" {format_duration(policy.min_age)}{rolls}",
        until,
    )


def _runs_target(verdict: ContainerVerdict, pod: str) -> bool:
    """Does ``pod`` already run this container's target (so deleting it changes nothing)?"""
    return any(f.pod == pod and f.state in RUNS_TARGET for f in verdict.pods)


def _when(at: datetime, now: datetime) -> str:
    """``2026-12-05T22:00:00+00:00 (in 3h12m)``: the instant, and how far off it is."""
    left = max(timedelta(0), at - now)
    return f"{at.isoformat(timespec='seconds')} (in {format_duration(left)})"


__all__ = ["Hold", "HoldReason", "policy_hold"]
