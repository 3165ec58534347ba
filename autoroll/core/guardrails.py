"""The guardrails: which of a pass's decided deletions may go now (pure).

``decide`` says, per workload, which one stale pod to delete; ``plan_rolls`` runs after it
over the whole pass and holds back what the cluster-wide and per-workload guardrails do not
allow yet, each with its own reason (``HoldReason``). A ladder per workload, first answer
wins:

1. ``invalid-policy``  an autoroll annotation cannot be read (``autoroll.core.policy``);
2. ``paused``          ``ROLL_PAUSED=true``, or the workload's ``paused`` annotation;
3. ``quarantined``     the deletion would pull a digest quarantined for its tag
                       (``autoroll.core.quarantine``; until the tag moves or a person clears it);
4. ``outside-window``  the workload's window (or ``ROLL_WINDOW``) is closed; ``until`` is
                       when the next one opens;
5. ``maturing``        a tag the deletion would pull has had its digest for less than the
                       min-age (``until``: when it will have). Ages count from the loop
                       guard's sighting, which a restart resets to "now": the delay can only
                       grow;
6. ``wave``, ``unproven``  the order a digest reaches the workloads on its tag
                       (``autoroll.core.rollorder``): an earlier wave is not done on it, or it
                       has not yet run through a health window anywhere and another workload
                       rolls it first; asked in the budget's order, so the first goes;
7. ``budget``          what is left goes oldest sighting first (ties by a hash of workload
                       and digest, never list order) while the budget lasts: at most
                       ``deletions_per_period`` deletions in any period, and at most
                       ``in_flight`` workloads mid-roll, of which a workload already
                       mid-roll needs no new slot; and, per namespace, at most its share of
                       each (``namespace_deletions``, ``namespace_in_flight``: half of each
                       by default). A namespace counts against the cluster-wide limits only
                       up to its share, so one tenant's many workloads (or its own
                       controllers' rollouts, which also look mid-roll) can never take what
                       the others need.

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

from autoroll.core.compare import CREATION_TIMESTAMP_RESOLUTION
from autoroll.core.decision import (
    RUNS_TARGET,
    ContainerVerdict,
    Decision,
    DeletePod,
    PodState,
    Sighting,
)
from autoroll.core.images import TagRef
from autoroll.core.model import Digest, Enrolled, PodView
from autoroll.core.policy import Guardrails, Policy, format_duration, workload_policy
from autoroll.core.quarantine import EMPTY, QuarantineBook
from autoroll.core.rollorder import RollOrder

#: Mid-roll workloads named in a budget hold's detail, at most.
_NAMED: Final = 3


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


@dataclass(frozen=True, slots=True, order=True)
class Deletion:
    """A deletion the budget counts: when, and in which namespace ("" when not known: it
    counts cluster-wide only)."""

    at: datetime
    namespace: str = ""


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
    deleted_at: Sequence[datetime | Deletion],
    now: datetime,
    mid_roll_elsewhere: AbstractSet[str] = frozenset(),
    quarantine: QuarantineBook = EMPTY,
    others: Sequence[tuple[Enrolled, Decision]] = (),
) -> RollPlan:
    """Which of ``items``' decided deletions go now (``RollPlan.go``, in order) and which
    wait (``RollPlan.holds``). ``deleted_at``: the deletions the shell knows of, any age
    (its own, and the evidence of a previous leader's: ``pods_started``), with their
    namespace where known. ``mid_roll_elsewhere``: workloads a targeted pass cannot judge
    whole (outside it, or with a container on a tag outside it) last seen mid-roll, by key;
    they hold in-flight slots as if they were judged mid-roll here. ``quarantine``: the
    quarantined digests; ``others``: the rest of the pass (for a fresh read's plan of one
    workload), whose standing on each digest orders the roll (``autoroll.core.rollorder``)
    and whose deletions are not planned here."""
    if now.tzinfo is None:
        raise ValueError("now must be timezone-aware")
    policies = {
        e.workload.key: workload_policy(dict(e.workload.annotations), defaults=guardrails)
        for e, _ in [*others, *items]
    }
    mid_roll = {e.workload.key for e, d in items if is_mid_roll(d, e.pods)}
    mid_roll |= set(mid_roll_elsewhere)
    order = RollOrder([*others, *items], policies, book=quarantine)
    holds, candidates = _policy_sift(
        items, policies, guardrails, sightings=sightings, now=now, order=order
    )

    recent = [
        d if isinstance(d, Deletion) else Deletion(d)
        for d in deleted_at
        if now - guardrails.period < _at(d) <= now + guardrails.period
    ]
    own = [d.at for d in recent]
    shares = _Shares(guardrails, recent, mid_roll)
    go: list[DeletePod] = []
    decided = {e.workload.key: d for e, d in items}
    for _, key, action in sorted(candidates):
        ordered = order.sequenced(key, decided[key], action)
        if ordered is not None:
            holds.append(Hold(key, action, HoldReason(ordered.rung.value), ordered.detail))
            continue
        hold = shares.hold(key, action, own=own, go=go, now=now)
        if hold is not None:
            holds.append(hold)
            continue
        go.append(action)
        shares.granted(key, now)
    budget = BudgetState(
        limit=guardrails.deletions_per_period,
        period=guardrails.period,
        used=len(own) if guardrails.deletions_per_period else 0,
        granted=len(go),
        in_flight_limit=guardrails.in_flight,
        mid_roll=tuple(sorted(mid_roll)),
        frees_at=_frees_at(own + [now] * len(go), guardrails),
    )
    mine = {e.workload.key for e, _ in items}
    return RollPlan(
        tuple(go),
        tuple(holds),
        budget,
        guardrails.paused,
        {k: p for k, p in policies.items() if k in mine},
    )


def _at(deletion: datetime | Deletion) -> datetime:
    return deletion.at if isinstance(deletion, Deletion) else deletion


def _namespace_of(key: str) -> str:
    """The namespace of a workload key (``namespace/kind/name``)."""
    return key.split("/", 1)[0]


class _Shares:
    """The budget as one plan spends it: cluster-wide counts, and per namespace (when
    shares are on) what each has used, which of its workloads hold slots, and how much of
    either counts against the cluster-wide limits (up to its share)."""

    def __init__(
        self, guardrails: Guardrails, recent: Sequence[Deletion], mid_roll: AbstractSet[str]
    ) -> None:
        self.guardrails = guardrails
        self.times: dict[str, list[datetime]] = {}
        for deletion in recent:
            self.times.setdefault(deletion.namespace, []).append(deletion.at)
        self.slots: dict[str, set[str]] = {}
        for key in mid_roll:
            self.slots.setdefault(_namespace_of(key), set()).add(key)

    def _counted(self, per_namespace: Mapping[str, int], share: int) -> int:
        """The cluster-wide count: each namespace up to its share (unknown ones in full)."""
        if not share:
            return sum(per_namespace.values())
        return sum(n if ns == "" else min(n, share) for ns, n in per_namespace.items())

    def hold(
        self,
        key: str,
        action: DeletePod,
        *,
        own: Sequence[datetime],
        go: Sequence[DeletePod],
        now: datetime,
    ) -> Hold | None:
        """The budget hold for this deletion, or None when it may go."""
        guardrails, namespace = self.guardrails, _namespace_of(key)
        here = self.times.get(namespace, [])
        if guardrails.deletions_per_period:
            counts = {ns: len(times) for ns, times in self.times.items()}
            used = self._counted(counts, guardrails.namespace_deletions)
            if used >= guardrails.deletions_per_period:
                frees = _frees_at([*own, *([now] * len(go))], guardrails)
                return Hold(
                    key,
                    action,
                    HoldReason.BUDGET,
                    f"{used} of {guardrails.deletions_per_period} deletions in the"
                    f" last {format_duration(guardrails.period)} (ROLL_BUDGET_DELETIONS)",
                    frees,
                )
            share = guardrails.namespace_deletions
            if share and len(here) >= share:
                return Hold(
                    key,
                    action,
                    HoldReason.BUDGET,
                    f"namespace {namespace} has had {len(here)} of its share of {share}"
                    f" deletions in the last {format_duration(guardrails.period)}"
                    " (ROLL_BUDGET_DELETIONS_PER_NAMESPACE)",
                    _frees_at(here, guardrails, limit=share),
                )
        mine = self.slots.get(namespace, set())
        if key in mine or not guardrails.in_flight:
            return None
        sizes = {ns: len(keys) for ns, keys in self.slots.items()}
        taken = self._counted(sizes, guardrails.namespace_in_flight)
        if taken >= guardrails.in_flight:
            every = sorted(k for keys in self.slots.values() for k in keys)
            named = ", ".join(every[:_NAMED])
            more = f" and {len(every) - _NAMED} more" if len(every) > _NAMED else ""
            return Hold(
                key,
                action,
                HoldReason.BUDGET,
                f"{taken} of {guardrails.in_flight} workloads mid-roll"
                f" ({named}{more}; ROLL_BUDGET_IN_FLIGHT)",
            )
        share = guardrails.namespace_in_flight
        if share and len(mine) >= share:
            named = ", ".join(sorted(mine)[:_NAMED])
            return Hold(
                key,
                action,
                HoldReason.BUDGET,
                f"namespace {namespace} has {len(mine)} of its share of {share} workloads"
                f" mid-roll ({named}; ROLL_BUDGET_IN_FLIGHT_PER_NAMESPACE)",
            )
        return None

    def granted(self, key: str, now: datetime) -> None:
        namespace = _namespace_of(key)
        self.times.setdefault(namespace, []).append(now)
        self.slots.setdefault(namespace, set()).add(key)


def _policy_sift(
    items: Sequence[tuple[Enrolled, Decision]],
    policies: Mapping[str, Policy],
    guardrails: Guardrails,
    *,
    sightings: Mapping[TagRef, Sighting],
    now: datetime,
    order: RollOrder,
) -> tuple[list[Hold], list[tuple[tuple[datetime, str], str, DeletePod]]]:
    """Each decided deletion either held by its workload's policy (paused, quarantine,
    window, min-age…) or a candidate for the budget, with the priority that orders the
    candidates."""
    holds: list[Hold] = []
    candidates: list[tuple[tuple[datetime, str], str, DeletePod]] = []
    for enrolled, decision in items:
        if not decision.actions:
            continue
        key, action = enrolled.workload.key, decision.actions[0]
        hold = _policy_hold(
            key,
            action,
            decision,
            policies[key],
            guardrails,
            sightings=sightings,
            now=now,
            order=order,
        )
        if hold is not None:
            holds.append(hold)
            continue
        candidates.append((_priority(decision, action, sightings, now), key, action))
    return holds, candidates


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


def pods_started(items: Sequence[Enrolled], *, now: datetime, period: timedelta) -> list[Deletion]:
    """When the enrolled workloads' pods created in the last ``period`` were created: the
    evidence of deletions this process cannot remember (a deleted pod's replacement is one
    of them; so is anything else that started a pod). Each pod once; whole-second
    timestamps rounded up, since a pod stamped in the period's first second may have been
    created after the period began; a stamp beyond a period ahead is unreadable, not recent.
    """
    start = now - period
    created: dict[str, Deletion] = {}
    for enrolled in items:
        for pod in enrolled.pods:
            stamp = pod.created_at + CREATION_TIMESTAMP_RESOLUTION
            if start < stamp <= now + period:
                created[pod.uid or f"{pod.namespace}/{pod.name}"] = Deletion(stamp, pod.namespace)
    return sorted(created.values())


def _frees_at(
    known: Sequence[datetime], guardrails: Guardrails, *, limit: int | None = None
) -> datetime | None:
    """When the period's count drops below the limit (the cluster-wide one unless given)
    again, if it is at the limit now."""
    limit = guardrails.deletions_per_period if limit is None else limit
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
    "Deletion",
    "Hold",
    "HoldReason",
    "RollPlan",
    "is_mid_roll",
    "plan_rolls",
    "pods_started",
]
