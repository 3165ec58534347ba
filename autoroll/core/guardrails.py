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

The plan is made here; what a hold is and the per-workload rungs 1-5 are in
``autoroll.core.holds``, the budget's counting (rung 7) in ``autoroll.core.budget``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from datetime import datetime

from autoroll.core.budget import BudgetShares, BudgetState, Deletion, frees_at, is_mid_roll
from autoroll.core.decision import Decision, DeletePod, Sighting
from autoroll.core.holds import Hold, HoldReason, policy_hold
from autoroll.core.images import TagRef
from autoroll.core.model import Enrolled
from autoroll.core.policy import Guardrails, Policy, workload_policy
from autoroll.core.quarantine import EMPTY, QuarantineBook
from autoroll.core.rollorder import RollOrder


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
    shares = BudgetShares(guardrails, recent, mid_roll)
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
        frees_at=frees_at(own + [now] * len(go), guardrails),
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
        hold = policy_hold(
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


__all__ = ["RollPlan", "plan_rolls"]
