"""Which digest a new pod of an enrolled workload may run: the approved digest (pure).

"Approved" is a pure function of the guardrail state (docs/adr/028), judged per workload and
tag after each pass's plan:

- the registry's digest (the *target*) once its roll may proceed: no guardrail holds it for
  this workload, and its roll has begun (a pod already runs the target), or the plan let its
  first deletion go this pass; or when no pod runs other content (the target is then not a
  new digest for this workload: a window or a delay holds nothing back);
- while the target is held, the digest the workload was last rolled to, read from its own
  pods (``previous``): what the pods are pinned to or, unpinned, what the runtime reports
  under the same repository; never the held target, never a digest a hold names;
- nothing (not pinned) when the registry's answer is unknown, or no pod says what the
  workload runs.

The rungs, first answer wins: any ``DigestHolds`` given (the quarantine of issue 26 plugs in
here, ``autoroll.edge.services.QuarantineHolds``, as one more reason to hold: a digest held
for its tag is never pinned to, whatever the workload runs); then, when some pod runs other content
(a roll onto a new digest), the planner's rungs (``autoroll.core.guardrails``) judged for the
tag rather than for a chosen deletion, so a workload that is not settled (no deletion
chosen) is judged too: ``invalid-policy``, ``paused``, ``outside-window``, ``maturing``; then
``budget`` (the plan held its first deletion) and ``waiting`` (its roll has not begun: not
settled, or held by its kind).

A previous digest must still be in the registry to be pinned to: Gitea and Forgejo drop a
tag's previous manifest when the tag is pushed again, and a pod pinned to a manifest the
registry no longer holds could never start. So a held approval names ``previous`` and
``needs_presence``; ``confirm`` turns it into a pin only once the shell has seen the
registry answer for that digest.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from enum import StrEnum
from typing import Final, Protocol

from autoroll.core.decision import RUNS_TARGET, ContainerVerdict, Decision, PodState, Sighting
from autoroll.core.images import TagRef
from autoroll.core.model import Digest, Enrolled, PodView
from autoroll.core.policy import Guardrails, Policy, format_duration

#: Findings that say nothing about what a pod of the current template runs.
_NOT_RUNNING: Final = frozenset({PodState.OLD_TEMPLATE, PodState.TERMINATING, PodState.NO_DIGEST})


class HeldBy(StrEnum):
    """Why the target is not approved. The planner's reasons, plus two of admission's own.
    Stable strings: ``autoroll plan`` and the metrics use them."""

    INVALID_POLICY = "invalid-policy"
    PAUSED = "paused"
    OUTSIDE_WINDOW = "outside-window"
    MATURING = "maturing"
    QUARANTINED = "quarantined"
    BUDGET = "budget"
    WAITING = "waiting"  # its roll has not begun: not settled, or its kind holds it
    REGISTRY_UNKNOWN = "registry-unknown"  # no target known: nothing is pinned


class DigestHolds(Protocol):
    """One more reason to hold a digest for a tag, wherever it is kept (the quarantine of
    issue 26: a digest that halted a roll). ``held`` is why, for people, or None."""

    def held(self, ref: TagRef, digest: Digest) -> str | None: ...


class _NoHolds:
    def held(self, ref: TagRef, digest: Digest) -> str | None:
        return None


#: No extra holds (no quarantine wired: ``autoroll plan`` and the tests).
NO_HOLDS: Final[DigestHolds] = _NoHolds()


@dataclass(frozen=True, slots=True)
class Approval:
    """One tag of one workload: the digest a new pod is pinned to (None: not pinned), the
    registry's target, and, while the target is held, why (``held_by``, ``detail``) and
    until when it may be known (``until``)."""

    ref: TagRef
    digest: Digest | None
    target: Digest | None
    held_by: HeldBy | None = None
    detail: str = ""
    until: datetime | None = None
    needs_presence: bool = False  # ``digest`` is a held-back one: the registry must hold it

    @property
    def is_target(self) -> bool:
        return self.digest is not None and self.digest == self.target


@dataclass(frozen=True, slots=True)
class PlanOutcome:
    """What the pass's plan said of this workload's chosen deletion, if it chose one:
    let go now, or held (by the planner's reason, with its detail and ``until``)."""

    let_go: bool = False
    held: str | None = None  # a holds.HoldReason value
    detail: str = ""
    until: datetime | None = None


NOT_PLANNED: Final = PlanOutcome()


def approve_workload(
    *,
    enrolled: Enrolled,
    decision: Decision,
    policy: Policy,
    guardrails: Guardrails,
    sightings: Mapping[TagRef, Sighting],
    now: datetime,
    planned: PlanOutcome = NOT_PLANNED,
    holds: DigestHolds = NO_HOLDS,
) -> tuple[Approval, ...]:
    """The approval of every tag of ``enrolled`` (one per ref; a ref used by two containers is
    judged once, on the first container's findings plus the second's)."""
    by_ref: dict[TagRef, list[ContainerVerdict]] = {}
    for verdict in decision.containers:
        if verdict.ref is not None:
            by_ref.setdefault(verdict.ref, []).append(verdict)
    return tuple(
        _approve_tag(
            ref,
            verdicts,
            pods=enrolled.pods,
            policy=policy,
            guardrails=guardrails,
            sighting=sightings.get(ref),
            now=now,
            planned=planned,
            holds=holds,
        )
        for ref, verdicts in sorted(by_ref.items())
    )


def _approve_tag(
    ref: TagRef,
    verdicts: Sequence[ContainerVerdict],
    *,
    pods: Sequence[PodView],
    policy: Policy,
    guardrails: Guardrails,
    sighting: Sighting | None,
    now: datetime,
    planned: PlanOutcome,
    holds: DigestHolds,
) -> Approval:
    target = verdicts[0].registry_digest
    if not isinstance(target, Digest):
        return Approval(
            ref, None, None, HeldBy.REGISTRY_UNKNOWN, "the registry's digest is not known"
        )
    why = holds.held(ref, target)
    held: tuple[HeldBy, str, datetime | None] | None = (
        (HeldBy.QUARANTINED, why, None) if why is not None else None
    )
    if held is None and _runs_other(verdicts):
        # A roll onto a new digest: the guardrails' rungs. When every pod runs the target
        # already (or there are none), it is not new for this workload and nothing is held
        # back; only a hold on the digest itself (above) counts then.
        held = _held(ref, target, policy, guardrails, sighting=sighting, now=now)
    if held is None:
        held = _not_begun(verdicts, planned)
    if held is None:
        return Approval(ref, target, target)
    reason, detail, until = held
    previous = previous_digest(ref, verdicts, pods, target=target, holds=holds)
    if previous is None:
        detail += "; no pod says what it was last rolled to, so new pods are not pinned"
    return Approval(ref, previous, target, reason, detail, until, previous is not None)


def _held(
    ref: TagRef,
    target: Digest,
    policy: Policy,
    guardrails: Guardrails,
    *,
    sighting: Sighting | None,
    now: datetime,
) -> tuple[HeldBy, str, datetime | None] | None:
    """The planner's per-workload rungs, for this tag's target (module docstring)."""
    if not policy.is_valid:
        problems = "; ".join(str(p) for p in policy.problems)
        return HeldBy.INVALID_POLICY, problems, None
    if guardrails.paused:
        return HeldBy.PAUSED, "paused cluster-wide (ROLL_PAUSED=true)", None
    if policy.paused:
        return HeldBy.PAUSED, "paused by annotation autoroll.aethnet.se/paused", None
    windows = policy.windows
    if windows is not None and not windows.is_open(now):
        opens = windows.next_opening(now)
        return HeldBy.OUTSIDE_WINDOW, f"outside its window {windows}", opens
    if policy.min_age:
        if sighting is None or sighting.digest != target:
            return HeldBy.MATURING, f"{ref}: the age of {target.short} is unknown", None
        ready_at = sighting.first_seen_at + policy.min_age
        if ready_at > now:
            age = format_duration(now - sighting.first_seen_at)
            return (
                HeldBy.MATURING,
                f"{target.short} has been {ref}'s for {age}, less than its min-age of"
                f" {format_duration(policy.min_age)}",
                ready_at,
            )
    return None


def _runs_other(verdicts: Sequence[ContainerVerdict]) -> bool:
    """Does some pod of the workload run other content than the target?"""
    return any(f.state in (PodState.STALE, PodState.LOOP_GUARD) for v in verdicts for f in v.pods)


def _not_begun(
    verdicts: Sequence[ContainerVerdict], planned: PlanOutcome
) -> tuple[HeldBy, str, datetime | None] | None:
    """Held because its roll has not begun: pods on other content, none on the target, and
    the plan did not let a deletion go (the budget held it, or none was chosen)."""
    findings = [f for v in verdicts for f in v.pods if f.state not in _NOT_RUNNING]
    if any(f.state in RUNS_TARGET for f in findings) or planned.let_go:
        return None
    if not any(f.state in (PodState.STALE, PodState.LOOP_GUARD) for f in findings):
        # Nothing runs other content (no pods, or none known): a new pod may as well be the
        # target's; there is no previous build to keep.
        return None
    if planned.held == HeldBy.BUDGET.value:
        return HeldBy.BUDGET, planned.detail, planned.until
    if planned.held is not None:
        return HeldBy.WAITING, f"{planned.held}: {planned.detail}", planned.until
    return HeldBy.WAITING, "its roll has not begun (no deletion chosen yet)", None


def previous_digest(
    ref: TagRef,
    verdicts: Sequence[ContainerVerdict],
    pods: Sequence[PodView],
    *,
    target: Digest,
    holds: DigestHolds = NO_HOLDS,
) -> Digest | None:
    """The digest the workload was last rolled to, from its pods: most of them run it (a
    pin, or the runtime's name under this very repository), ties to the newest pod's. Never
    the held target or a digest a hold names; never a config ID or another repository's
    manifest (neither can be pulled as ``repository@digest``)."""
    created = {p.name: p.created_at for p in pods}
    counts: Counter[Digest] = Counter()
    newest: dict[Digest, datetime] = {}
    for verdict in verdicts:
        for finding in verdict.pods:
            running = finding.running
            if finding.state in _NOT_RUNNING or running is None or running.is_config:
                continue
            if (running.host, running.repository) != (ref.host, ref.repository):
                continue
            digest = running.digest
            if digest == target or holds.held(ref, digest) is not None:
                continue
            counts[digest] += 1
            at = created.get(finding.pod)
            if at is not None and (digest not in newest or at > newest[digest]):
                newest[digest] = at
    if not counts:
        return None
    return max(counts, key=lambda d: (counts[d], newest.get(d, _EPOCH), d.value))


def confirm(approval: Approval, present: bool | None) -> Approval:
    """A held approval once the registry was asked for its digest: kept when it holds it,
    not pinned when it does not (or could not say)."""
    if not approval.needs_presence or present:
        return approval
    assert approval.digest is not None
    why = (
        "the registry no longer holds it (Gitea and Forgejo drop a tag's previous manifest"
        " when the tag is pushed again)"
        if present is False
        else "the registry could not say whether it still holds it"
    )
    detail = f"{approval.detail}; {approval.digest.short} is not pinned to: {why}"
    return replace(approval, digest=None, detail=detail, needs_presence=False)


_EPOCH: Final = datetime.min.replace(tzinfo=UTC)


__all__ = [
    "NOT_PLANNED",
    "NO_HOLDS",
    "Approval",
    "DigestHolds",
    "HeldBy",
    "PlanOutcome",
    "approve_workload",
    "confirm",
    "previous_digest",
]
