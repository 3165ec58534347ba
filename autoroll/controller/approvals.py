"""The approved digests, kept in memory for admission, and what a pass learns about them.

``ApprovalBook`` is the read-only view the pinning webhook answers from
(``autoroll.core.pinning.ApprovedDigests``): by workload key and tag, the digest a new pod is
pinned to. Only ``Approver`` writes it, once per pass, between the guardrails' plan and the
first deletion: a pod autoroll deletes must be replaced by one pinned to the new digest, so
the view says "approved" before the DELETE goes, never after. A write swaps whole
dictionaries (one reference assignment), so a reader on an admission thread never waits on
a pass and never sees half of one.

Nothing here is state of record (docs/adr/028, docs/adr/001): every approval is derived
again each pass from the cluster (the pods say what a workload was last rolled to), the
registry and the guardrails. A restart or a new leader starts with an empty view (new pods
are admitted unpinned until its first pass) and with new sightings, so a maturing delay
starts again and approval stays on the old digest: the safe direction. A replica that stops
leading empties its view (``term_ended``): it no longer knows the plan.

``Approver`` also asks the registry whether a held-back digest is still there before it is
pinned to (``PresencePort``; Gitea and Forgejo drop a tag's previous manifest on a push),
and says, once per pod, when a pod was admitted unpinned although a digest was approved
(``autoroll.core.unpinned``): a Warning Event on its workload and a WARNING line.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Final, Protocol

from autoroll.core.approval import (
    NO_HOLDS,
    Approval,
    DigestHolds,
    PlanOutcome,
    approve_workload,
    confirm,
)
from autoroll.core.decide import Decision, Sighting
from autoroll.core.guardrails import RollPlan
from autoroll.core.images import TagRef
from autoroll.core.model import Digest, Enrolled
from autoroll.core.policy import Guardrails, workload_policy
from autoroll.core.ports import EventPort, PresencePort
from autoroll.core.records import EventType, RollEvent
from autoroll.core.unpinned import UnpinnedPod, admitted_unpinned
from autoroll.instruments.pinning_metrics import PinningMetrics

log = logging.getLogger(__name__)

#: The Warning Event's reason when a pod was admitted unpinned.
REASON_UNPINNED: Final = "PodAdmittedUnpinned"
#: How long the registry's "it still holds that digest" is believed; "gone" or "cannot say"
#: is asked again sooner.
PRESENT_FOR: Final = timedelta(minutes=5)
ABSENT_FOR: Final = timedelta(minutes=1)


class ApprovalBook:
    """The admission view: by workload key, each tag's ``Approval`` (module docstring)."""

    def __init__(self) -> None:
        self._view: dict[str, dict[TagRef, Approval]] = {}
        self._since: dict[str, dict[TagRef, datetime]] = {}

    def approved(self, key: str, ref: TagRef) -> Digest | None:
        found = self._view.get(key)
        approval = found.get(ref) if found is not None else None
        return approval.digest if approval is not None else None

    def knows(self, key: str) -> bool:
        return key in self._view

    def of(self, key: str) -> Mapping[TagRef, Approval]:
        """Every tag's approval for ``key`` (empty when unknown), for ``autoroll plan``."""
        return dict(self._view.get(key, {}))

    def pinnable_since(self, key: str) -> dict[TagRef, datetime]:
        """Since when the view has named a digest for each of ``key``'s tags, continuously."""
        return dict(self._since.get(key, {}))

    def publish(
        self, found: Mapping[str, Sequence[Approval]], *, whole: bool, now: datetime
    ) -> None:
        """``found`` by workload key; ``whole``: a full pass, so every workload not in it is
        no longer enrolled and is forgotten. One swap of each dictionary."""
        view = {} if whole else dict(self._view)
        for key, approvals in found.items():
            view[key] = {a.ref: a for a in approvals}
        since = {} if whole else dict(self._since)
        for key in found:
            before = self._since.get(key, {})
            since[key] = {
                ref: before.get(ref, now)
                for ref, approval in view[key].items()
                if approval.digest is not None
            }
        self._view, self._since = view, since

    def clear(self) -> None:
        self._view, self._since = {}, {}

    def counts(self) -> tuple[int, int]:
        """Workloads with every tag on its target, and the others (held, or not pinned)."""
        on_target = sum(
            1 for tags in self._view.values() if all(a.is_target for a in tags.values())
        )
        return on_target, len(self._view) - on_target


class PlanListener(Protocol):
    """What the reconciler tells between its plan and its deletions, and when a term ends."""

    def planned(
        self,
        items: Sequence[tuple[Enrolled, Decision]],
        plan: RollPlan,
        sightings: Mapping[TagRef, Sighting],
        *,
        now: datetime,
        whole: bool,
    ) -> None: ...

    def term_ended(self) -> None: ...


def _utcnow() -> datetime:
    return datetime.now(UTC)


class Approver:
    """Derives each pass's approvals, checks held-back digests are still pullable, publishes
    them to the book, and warns about pods admitted unpinned (module docstring)."""

    def __init__(
        self,
        *,
        book: ApprovalBook,
        guardrails: Guardrails,
        registries: Collection[str],
        presence: PresencePort | None = None,
        events: EventPort | None = None,
        metrics: PinningMetrics | None = None,
        holds: DigestHolds = NO_HOLDS,
        clock: Callable[[], datetime] = _utcnow,
    ) -> None:
        """``holds``: more reasons to hold a digest (the quarantine: ``wiring`` gives
        ``edge.services.QuarantineHolds``; docs/adr/028)."""
        self.book = book
        self._guardrails = guardrails
        self._registries = frozenset(registries)
        self._presence = presence
        self._events = events
        self._metrics = metrics
        self._holds = holds
        self._clock = clock
        self._present: dict[tuple[TagRef, Digest], tuple[bool | None, datetime]] = {}
        self._warned: set[str] = set()

    def planned(
        self,
        items: Sequence[tuple[Enrolled, Decision]],
        plan: RollPlan,
        sightings: Mapping[TagRef, Sighting],
        *,
        now: datetime,
        whole: bool,
    ) -> None:
        """The pass's approvals, published before its first deletion; then the warnings."""
        found = {
            enrolled.workload.key: self._confirmed(
                approve_workload(
                    enrolled=enrolled,
                    decision=decision,
                    policy=plan.policies.get(enrolled.workload.key)
                    or workload_policy(
                        dict(enrolled.workload.annotations), defaults=self._guardrails
                    ),
                    guardrails=self._guardrails,
                    sightings=sightings,
                    now=now,
                    planned=_outcome(plan, decision),
                    holds=self._holds,
                )
            )
            for enrolled, decision in items
        }
        self.book.publish(found, whole=whole, now=now)
        if self._metrics is not None:
            on_target, held = self.book.counts()
            self._metrics.approved_workloads.labels(state="target").set(on_target)
            self._metrics.approved_workloads.labels(state="held").set(held)
        self._warn_unpinned([e for e, _ in items], whole=whole)

    def term_ended(self) -> None:
        """Leadership lapsed (or never was): this replica no longer knows the plan."""
        self.book.clear()
        self._warned.clear()

    # -- presence of held-back digests ---------------------------------------------------------

    def _confirmed(self, approvals: Sequence[Approval]) -> tuple[Approval, ...]:
        return tuple(
            confirm(a, self._holds_digest(a)) if a.needs_presence else a for a in approvals
        )

    def _holds_digest(self, approval: Approval) -> bool | None:
        assert approval.digest is not None
        if self._presence is None:
            return None
        key, now = (approval.ref, approval.digest), self._clock()
        cached = self._present.get(key)
        if cached is not None:
            answer, at = cached
            if now - at < (PRESENT_FOR if answer else ABSENT_FOR):
                return answer
        answer = self._presence.holds_manifest(approval.ref, approval.digest)
        self._present[key] = (answer, now)
        if self._metrics is not None:
            label = "unknown" if answer is None else ("present" if answer else "gone")
            self._metrics.presence_checks.labels(answer=label).inc()
        if answer is not True:
            log.warning(
                "%s: %s, held back for new pods, %s; new pods of its workloads pull the tag",
                approval.ref,
                approval.digest.short,
                "is no longer in the registry" if answer is False else "could not be confirmed",
                extra={"event": "pinning-digest-unavailable", "ref": str(approval.ref)},
            )
        if len(self._present) > 4096:  # bounded: one entry per held tag and digest
            self._present = dict(list(self._present.items())[-2048:])
        return answer

    # -- pods admitted unpinned -----------------------------------------------------------------

    def _warn_unpinned(self, enrolled: Sequence[Enrolled], *, whole: bool) -> None:
        listed: set[str] = set()
        for item in enrolled:
            key = item.workload.key
            listed.update(p.uid or p.name for p in item.pods)
            unpinned = admitted_unpinned(
                item,
                approved={ref: a.digest for ref, a in self.book.of(key).items()},
                pinnable_since=self.book.pinnable_since(key),
                registries=self._registries,
            )
            for pod in unpinned:
                if (pod.uid or pod.pod) in self._warned:
                    continue
                self._warned.add(pod.uid or pod.pod)
                self._say_unpinned(item, pod)
        if whole:
            self._warned &= listed  # forgotten with the pod

    def _say_unpinned(self, item: Enrolled, pod: UnpinnedPod) -> None:
        workload = item.workload
        containers = ", ".join(
            f"{name} ({image}, approved {digest.short})" for name, image, digest in pod.containers
        )
        message = (
            f"autoroll: pod {pod.pod} of {workload.kind_name} was admitted without its digest"
            f" pinned: {containers}. The pinning webhook was not reached (not running, not"
            " reachable, or too slow; failurePolicy Ignore let the pod in), so it pulled"
            " whatever its tag named then; it is rolled like any other pod."
        )
        log.warning(
            "%s: %s",
            workload.key,
            message,
            extra={"event": "admitted-unpinned", "workload": workload.key, "pod": pod.pod},
        )
        if self._metrics is not None:
            self._metrics.unpinned_pods.inc()
        if self._events is None:
            return
        event = RollEvent(
            namespace=workload.namespace,
            kind=workload.kind,
            workload=workload.name,
            workload_uid=workload.uid,
            reason=REASON_UNPINNED,
            message=message,
            type=EventType.WARNING,
        )
        try:
            self._events.emit(event)
        except Exception as exc:  # an Event is a courtesy; the pass goes on
            log.warning("%s: the %s Event was not recorded: %s", workload.key, REASON_UNPINNED, exc)


def _outcome(plan: RollPlan, decision: Decision) -> PlanOutcome:
    """What the plan said of the decision's chosen deletion (none chosen: not planned)."""
    if not decision.actions:
        return PlanOutcome()
    if decision.actions[0] in plan.go:
        return PlanOutcome(let_go=True)
    hold = plan.hold_for(decision.key)
    if hold is None:
        return PlanOutcome()
    return PlanOutcome(held=hold.reason.value, detail=hold.detail, until=hold.until)


__all__ = ["REASON_UNPINNED", "ApprovalBook", "Approver", "PlanListener"]
