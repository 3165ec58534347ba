"""The order a new digest reaches the workloads on its tag: quarantine, waves, a first
workload that proves it. Pure; the guardrails (``autoroll.core.guardrails``) ask it about
each decided deletion.

A deletion rolls its pod onto the target of every container whose pod does not run it yet:
for each such ``(tag, digest)`` (a *front*), across every workload of the pass using that
tag (a targeted pass holds them all: ``autoroll.core.scope``):

1. ``quarantined``  the digest is quarantined for the tag (``autoroll.core.quarantine``):
                    held until the tag moves or a person clears it;
2. ``wave``         the workload's wave (``autoroll.aethnet.se/wave``, 0 unless set) is
                    after a wave with a workload on the tag not *done* on the digest yet:
                    every compared pod on it, settled, and past its health window;
3. ``unproven``     with a health window on (the workload's), no pod has run the digest
                    through a whole window yet (*proven*: a workload with pods on it,
                    settled, its window passed) and another workload already rolls it, or
                    was let go first in this plan: a new digest proves itself on one
                    workload before it reaches a second. The first, in the guardrails'
                    order (oldest sighting, then a hash), goes.

One wave and no health window is the behaviour before waves: every workload at once. With
the default window (30 s), a push reaches one workload first; a crash after Ready there
halts it, and the quarantine keeps every other workload off the digest: one broken pod in
the cluster, not one per workload.

Everything here is read from the pods (done, proven, rolling) and the quarantine's book,
so a restart or a new leader finds the same order.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Final

from autoroll.core.decision import (
    RUNS_TARGET,
    ContainerVerdict,
    Decision,
    DeletePod,
    PodState,
    Verdict,
)
from autoroll.core.images import TagRef
from autoroll.core.model import Digest, Enrolled
from autoroll.core.policy import WAVE, Policy
from autoroll.core.quarantine import QuarantineBook, QuarantineKey, blocking

#: Workloads named in a hold's detail, at most.
_NAMED: Final = 3


class OrderRung(StrEnum):
    """Which rule of the order holds a deletion; the guardrails' ``HoldReason`` has the same
    values."""

    QUARANTINED = "quarantined"
    WAVE = "wave"
    UNPROVEN = "unproven"


@dataclass(frozen=True, slots=True)
class OrderHold:
    rung: OrderRung
    detail: str


@dataclass(frozen=True, slots=True)
class Standing:
    """One workload on a front: its wave, whether it is done on the digest, whether pods of
    it run the digest, and whether those have passed its window."""

    wave: int
    done: bool
    on_target: bool
    proven: bool


@dataclass(slots=True)
class _Front:
    users: dict[str, Standing] = field(default_factory=dict)
    claimed: set[str] = field(default_factory=set)  # let go first in this plan

    @property
    def proven(self) -> bool:
        return any(s.proven for s in self.users.values())

    def rolling(self, besides: str) -> list[str]:
        """Workloads other than ``besides`` already on the digest, or let go onto it now."""
        on = {k for k, s in self.users.items() if s.on_target} | self.claimed
        return sorted(on - {besides})


def onto(decision: Decision, action: DeletePod) -> list[tuple[TagRef, Digest]]:
    """The ``(tag, digest)`` pairs deleting ``action``'s pod rolls it onto: every container
    with a known target its pod does not run yet."""
    found = []
    for verdict in decision.containers:
        target = verdict.registry_digest
        if verdict.ref is None or not isinstance(target, Digest):
            continue
        if any(f.pod == action.name and f.state in RUNS_TARGET for f in verdict.pods):
            continue
        found.append((verdict.ref, target))
    return found


def standing(verdict: ContainerVerdict, decision: Decision, policy: Policy) -> Standing:
    """Where one workload stands on its container's target. A workload with stale pods that
    is not settled counts as on the target already: its replacement is on its way (the
    deleted pod still terminating, the new one not made or still pulling, no digest to
    show yet), and a second workload must not start meanwhile."""
    settled = decision.settledness.is_settled
    healthy = settled and decision.health.passed
    runs = any(f.state in RUNS_TARGET for f in verdict.pods)
    coming = not settled and any(f.state is PodState.STALE for f in verdict.pods)
    done = verdict.verdict is Verdict.CURRENT and healthy
    return Standing(policy.wave, done, runs or coming, runs and healthy)


class RollOrder:
    """The fronts of one plan, built from every workload it knows of (``items`` and
    ``others``: a fresh read's plan passes the rest of its pass as ``others``)."""

    def __init__(
        self,
        items: Sequence[tuple[Enrolled, Decision]],
        policies: Mapping[str, Policy],
        *,
        book: QuarantineBook,
    ) -> None:
        self._book = book
        self._policies = policies
        self._fronts: dict[tuple[QuarantineKey, Digest], _Front] = {}
        for enrolled, decision in items:
            key = enrolled.workload.key
            policy = policies.get(key) or Policy()
            for verdict in decision.containers:
                target = verdict.registry_digest
                if verdict.ref is None or not isinstance(target, Digest):
                    continue
                front = self._fronts.setdefault((QuarantineKey.of(verdict.ref), target), _Front())
                mine = standing(verdict, decision, policy)
                before = front.users.get(key)
                if before is not None:  # two containers on one tag: the less advanced counts
                    mine = Standing(
                        mine.wave,
                        mine.done and before.done,
                        mine.on_target or before.on_target,
                        mine.proven and before.proven,
                    )
                front.users[key] = mine

    def quarantined(self, decision: Decision, action: DeletePod) -> OrderHold | None:
        """Rung 1: does the deletion pull a quarantined digest?"""
        for ref, digest in onto(decision, action):
            entry = blocking(self._book, ref, digest)
            if entry is not None:
                return OrderHold(OrderRung.QUARANTINED, entry.message())
        return None

    def sequenced(self, key: str, decision: Decision, action: DeletePod) -> OrderHold | None:
        """Rungs 2 and 3, asked in the guardrails' order; a deletion that passes both is
        remembered as let go (the ``unproven`` rung then holds the next)."""
        policy = self._policies.get(key) or Policy()
        pairs = onto(decision, action)
        for ref, digest in pairs:
            front = self._fronts.get((QuarantineKey.of(ref), digest))
            if front is None:
                continue
            behind = _behind(front, policy.wave)
            if behind:
                return OrderHold(
                    OrderRung.WAVE,
                    f"wave {policy.wave} ({WAVE}) waits until every workload of the earlier"
                    f" waves on {ref.repository}:{ref.tag} is done on {digest.short}: "
                    + _named(behind),
                )
        for ref, digest in pairs:
            front = self._fronts.get((QuarantineKey.of(ref), digest))
            if front is None or not policy.healthy or front.proven:
                continue
            mine = front.users.get(key)
            if mine is not None and mine.on_target:
                continue  # this workload already rolls it: its own window paces it
            first = front.rolling(besides=key)
            if first:
                return OrderHold(
                    OrderRung.UNPROVEN,
                    f"{digest.short} has not yet run through a health window on any pod"
                    f" ({ref.repository}:{ref.tag}); it proves itself on {_named(first)}"
                    " first",
                )
        for ref, digest in pairs:
            front = self._fronts.get((QuarantineKey.of(ref), digest))
            if front is not None:
                front.claimed.add(key)
        return None


def _behind(front: _Front, wave: int) -> list[str]:
    """The workloads of earlier waves on this front that are not done yet."""
    return sorted(k for k, s in front.users.items() if s.wave < wave and not s.done)


def _named(keys: Sequence[str]) -> str:
    shown = ", ".join(keys[:_NAMED])
    more = f" and {len(keys) - _NAMED} more" if len(keys) > _NAMED else ""
    return f"{shown}{more}"


__all__ = ["OrderHold", "OrderRung", "RollOrder", "Standing", "onto", "standing"]
