"""The guardrails: which of a pass's decided deletions may go now (pure).

``decide`` says, per workload, which one stale pod to delete; ``plan_rolls`` runs after it
over the whole pass and holds back what the cluster-wide and per-workload guardrails do not
allow yet, each with its own reason (``HoldReason``). A ladder per workload, first answer
wins:

1. ``invalid-policy``  an autoroll annotation cannot be read (``autoroll.policy``);
2. ``paused``          ``ROLL_PAUSED=true``, or the workload's ``paused`` annotation;
3. ``outside-window``  the workload's window (or ``ROLL_WINDOW``) is closed; ``until`` is
                       when the next one opens;
4. ``maturing``        a tag the deletion would pull has had its digest for less than the
                       min-age (``until``: when it will have). Ages count from the loop
                       guard's sighting, which a restart resets to "now": the delay can only
                       grow;
5. ``budget``          what is left goes oldest sighting first (ties by a hash of workload
                       and digest, never list order) while the budget lasts: at most
                       ``deletions_per_period`` deletions in any period, and at most
                       ``in_flight`` workloads mid-roll, of which a workload already
                       mid-roll needs no new slot.

What has been deleted in the last period is the shell's memory (``deleted_at``): this
process's deletions, and, from the moment it starts leading, the creation times of the
enrolled pods created in the period before (``pods_started``), which stand for the
deletions a previous leader made (each left its replacement). The evidence is taken once,
at the start of the term, so rolling one of those pods again cannot erase it. Exact within
a term; across a restart or a change of leader it misses only a pod the previous leader
rolled twice in that period (its first replacement is gone). Mid-roll is read from the pods
alone (``is_mid_roll``), so it survives restarts. See docs/adr/016-guardrails.md.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Final

from autoroll.compare import CREATION_TIMESTAMP_RESOLUTION
from autoroll.decision import ContainerVerdict, Decision, DeletePod, PodState, Sighting
from autoroll.images import TagRef
from autoroll.model import Digest, Enrolled, PodView
from autoroll.policy import Guardrails, Policy, format_duration, workload_policy

#: Pods in these states run the target's content.
RUNS_TARGET: Final = frozenset(
    {PodState.CURRENT, PodState.CURRENT_CHILD, PodState.SAME_CONTENT, PodState.SAME_PLATFORM}
)
#: Mid-roll workloads named in a budget hold's detail, at most.
_NAMED: Final = 3


class HoldReason(StrEnum):
    """Why a decided deletion waits. Stable strings: metrics and log lines use them."""

    INVALID_POLICY = "invalid-policy"
    PAUSED = "paused"
    OUTSIDE_WINDOW = "outside-window"
    MATURING = "maturing"
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


@dataclass(frozen=True, slots=True)
class BudgetState:
    """The cluster-wide budget as this plan found and spent it (limits: 0 = unlimited)."""

    limit: int
    period: timedelta
    used: int  # deletions counted in the period before this pass
    granted: int  # deletions this plan lets go
    in_flight_limit: int
    mid_roll: tuple[str, ...]  # workloads mid-roll before this pass, by key
    frees_at: datetime | None = None  # when the next deletion is allowed, if the rate is spent

    @property
    def remaining(self) -> int | None:
        """Deletions still allowed in this period after the plan; None when unlimited."""
        return None if not self.limit else max(0, self.limit - self.used - self.granted)


@dataclass(frozen=True, slots=True)
class RollPlan:
    """What may be deleted now, in order, and what waits, with why."""

    go: tuple[DeletePod, ...]
    holds: tuple[Hold, ...]
    budget: BudgetState
    paused_globally: bool = False
    policies: Mapping[str, Policy] = field(default_factory=dict)

    def hold_for(self, workload: str) -> Hold | None:
        return next((h for h in self.holds if h.workload == workload), None)

    @property
    def paused(self) -> tuple[str, ...]:
        """Workloads paused by their own annotation, by key."""
        return tuple(sorted(k for k, p in self.policies.items() if p.paused))

    @property
    def invalid(self) -> tuple[str, ...]:
        """Workloads with an annotation that cannot be read, by key."""
        return tuple(sorted(k for k, p in self.policies.items() if not p.is_valid))


def plan_rolls(
    *,
    items: Sequence[tuple[Enrolled, Decision]],
    sightings: Mapping[TagRef, Sighting],
    guardrails: Guardrails,
    deleted_at: Sequence[datetime],
    now: datetime,
    mid_roll_elsewhere: AbstractSet[str] = frozenset(),
) -> RollPlan:
    """Which of ``items``' decided deletions go now (``RollPlan.go``, in order) and which
    wait (``RollPlan.holds``). ``deleted_at``: the deletions the shell knows of, any age
    (its own, and the evidence of a previous leader's: ``pods_started``).
    ``mid_roll_elsewhere``: workloads a targeted pass cannot judge whole (outside it, or
    with a container on a tag outside it) last seen mid-roll, by key; they hold in-flight
    slots as if they were judged mid-roll here."""
    if now.tzinfo is None:
        raise ValueError("now must be timezone-aware")
    policies = {
        e.workload.key: workload_policy(dict(e.workload.annotations), defaults=guardrails)
        for e, _ in items
    }
    mid_roll = {e.workload.key for e, d in items if is_mid_roll(d, e.pods)}
    mid_roll |= set(mid_roll_elsewhere)
    holds, candidates = _policy_sift(items, policies, guardrails, sightings=sightings, now=now)

    own = [t for t in deleted_at if now - guardrails.period < t <= now + guardrails.period]
    used = len(own) if guardrails.deletions_per_period else 0
    go: list[DeletePod] = []
    slots_taken = set(mid_roll)
    for _, key, action in sorted(candidates):
        hold = _deletions_hold(key, action, guardrails, used=used, own=own, go=go, now=now)
        if hold is None:
            hold = _in_flight_hold(key, action, guardrails, slots_taken)
        if hold is not None:
            holds.append(hold)
            continue
        go.append(action)
        slots_taken.add(key)
    budget = BudgetState(
        limit=guardrails.deletions_per_period,
        period=guardrails.period,
        used=used,
        granted=len(go),
        in_flight_limit=guardrails.in_flight,
        mid_roll=tuple(sorted(mid_roll)),
        frees_at=_frees_at(own + [now] * len(go), guardrails),
    )
    return RollPlan(tuple(go), tuple(holds), budget, guardrails.paused, policies)


def _policy_sift(
    items: Sequence[tuple[Enrolled, Decision]],
    policies: Mapping[str, Policy],
    guardrails: Guardrails,
    *,
    sightings: Mapping[TagRef, Sighting],
    now: datetime,
) -> tuple[list[Hold], list[tuple[tuple[datetime, str], str, DeletePod]]]:
    """Each decided deletion either held by its workload's policy (paused, window, min-age…)
    or a candidate for the budget, with the priority that orders the candidates."""
    holds: list[Hold] = []
    candidates: list[tuple[tuple[datetime, str], str, DeletePod]] = []
    for enrolled, decision in items:
        if not decision.actions:
            continue
        key, action = enrolled.workload.key, decision.actions[0]
        hold = _policy_hold(
            key, action, decision, policies[key], guardrails, sightings=sightings, now=now
        )
        if hold is not None:
            holds.append(hold)
            continue
        candidates.append((_priority(decision, action, sightings, now), key, action))
    return holds, candidates


def _deletions_hold(
    key: str,
    action: DeletePod,
    guardrails: Guardrails,
    *,
    used: int,
    own: list[datetime],
    go: Sequence[DeletePod],
    now: datetime,
) -> Hold | None:
    """The budget hold once the period's deletions (``used`` known, ``go`` granted) are all
    spent; None while one is left, or when deletions are unlimited."""
    if guardrails.deletions_per_period and used + len(go) >= guardrails.deletions_per_period:
        frees = _frees_at(own + [now] * len(go), guardrails)
        return Hold(
            key,
            action,
            HoldReason.BUDGET,
            f"{used + len(go)} of {guardrails.deletions_per_period} deletions in the"
            f" last {format_duration(guardrails.period)} (ROLL_BUDGET_DELETIONS)",
            frees,
        )
    return None


def _in_flight_hold(
    key: str, action: DeletePod, guardrails: Guardrails, slots_taken: AbstractSet[str]
) -> Hold | None:
    """The budget hold when every in-flight slot is taken by another workload; None when
    ``key`` holds one already, one is free, or in-flight is unlimited."""
    if guardrails.in_flight and key not in slots_taken and len(slots_taken) >= guardrails.in_flight:
        named = ", ".join(sorted(slots_taken)[:_NAMED])
        more = f" and {len(slots_taken) - _NAMED} more" if len(slots_taken) > _NAMED else ""
        return Hold(
            key,
            action,
            HoldReason.BUDGET,
            f"{len(slots_taken)} of {guardrails.in_flight} workloads mid-roll"
            f" ({named}{more}; ROLL_BUDGET_IN_FLIGHT)",
        )
    return None


# --------------------------------------------------------------------------------------------
# The per-workload rungs


def _policy_hold(
    key: str,
    action: DeletePod,
    decision: Decision,
    policy: Policy,
    guardrails: Guardrails,
    *,
    sightings: Mapping[TagRef, Sighting],
    now: datetime,
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


# --------------------------------------------------------------------------------------------
# The cluster-wide budget


def is_mid_roll(decision: Decision, pods: Sequence[PodView]) -> bool:
    """Has this workload's roll begun and not finished, as its pods show it?

    For some container with a known target: a stale pod is left while another pod already
    runs the target or the workload is not settled (a replacement is on its way), or a pod
    running the target is not Ready (the last replacement is starting, or the new image does
    not start: the halt keeps its slot). Read from the pods alone, so a restart cannot lose
    it; a one-replica workload counts only once its replacement reports what it runs.
    """
    ready = {p.name for p in pods if p.ready and not p.deleting and not p.is_terminal}
    for verdict in decision.containers:
        if not isinstance(verdict.registry_digest, Digest):
            continue
        stale = any(f.state is PodState.STALE for f in verdict.pods)
        on_target = [f.pod for f in verdict.pods if f.state in RUNS_TARGET]
        if stale and (on_target or not decision.settledness.is_settled):
            return True
        if any(pod not in ready for pod in on_target):
            return True
    return False


def pods_started(items: Sequence[Enrolled], *, now: datetime, period: timedelta) -> list[datetime]:
    """When the enrolled workloads' pods created in the last ``period`` were created: the
    evidence of deletions this process cannot remember (a deleted pod's replacement is one
    of them; so is anything else that started a pod). Each pod once; whole-second
    timestamps rounded up, since a pod stamped in the period's first second may have been
    created after the period began; a stamp beyond a period ahead is unreadable, not recent.
    """
    start = now - period
    created: dict[str, datetime] = {}
    for enrolled in items:
        for pod in enrolled.pods:
            stamp = pod.created_at + CREATION_TIMESTAMP_RESOLUTION
            if start < stamp <= now + period:
                created[pod.uid or f"{pod.namespace}/{pod.name}"] = stamp
    return sorted(created.values())


def _frees_at(known: Sequence[datetime], guardrails: Guardrails) -> datetime | None:
    """When the period's count drops below the limit again, if it is at the limit now."""
    limit = guardrails.deletions_per_period
    times = sorted(known)
    if not limit or len(times) < limit:
        return None
    return times[len(times) - limit] + guardrails.period


def _priority(
    decision: Decision, action: DeletePod, sightings: Mapping[TagRef, Sighting], now: datetime
) -> tuple[datetime, str]:
    """Oldest sighting first: a workload waiting for an older push goes before a newer one.
    One push gives all its workloads the same sighting; a hash of workload and digest
    orders those, so no name is always first and none always last."""
    verdict = next((v for v in decision.containers if v.container == action.container), None)
    sighting = sightings.get(verdict.ref) if verdict is not None and verdict.ref else None
    seen = sighting.first_seen_at if sighting is not None else now
    tie = hashlib.sha256(f"{decision.key}\0{action.to_digest}".encode()).hexdigest()
    return seen, tie


def _when(at: datetime, now: datetime) -> str:
    """``2026-12-05T22:00:00+00:00 (in 3h12m)``: the instant, and how far off it is."""
    left = max(timedelta(0), at - now)
    return f"{at.isoformat(timespec='seconds')} (in {format_duration(left)})"


__all__ = [
    "RUNS_TARGET",
    "BudgetState",
    "Hold",
    "HoldReason",
    "RollPlan",
    "is_mid_roll",
    "plan_rolls",
    "pods_started",
]
