"""What a pass tells people about itself: metrics and log lines.

The reconciler hands the observer each ``Decision`` and each ``Executed`` action; the
observer counts them and writes one log line per container decision and per action. A
halted rollout (``autoroll.core.halt``: a pod not Ready too long, or a replacement that
failed inside its health window) gets a WARNING every pass and the
``autoroll_rollouts_halted`` gauge; ``halted`` says whether the halt is new, so that the
``Announcer`` (``autoroll.controller.announcer``: Events and notifications, once per roll)
tells it once. It keeps two memories of its own: which pods it has already warned about
because what they run cannot be told, so such a warning is logged once per pod and
reference, not once per pass; and which halts it has already found.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from autoroll.controller.action_report import action_fields, report_executed
from autoroll.controller.executor import Executed
from autoroll.core.decide import ContainerVerdict, Decision, PodState, Reason, Verdict
from autoroll.core.guardrails import RollPlan
from autoroll.core.halt import RolloutHalt
from autoroll.core.holds import Hold
from autoroll.core.model import Digest, Enrolled, Unknown, WorkloadKind, WorkloadView
from autoroll.core.scope import Scope
from autoroll.instruments.metrics import Metrics

#: The pass's lines keep the logger name they always had: log queries select on it.
log = logging.getLogger("autoroll.controller.reconciler")

#: Pods whose content cannot be told; each is warned about once, not every pass.
_UNRESOLVED = frozenset({PodState.CONTENT_UNKNOWN, PodState.PLATFORM_UNKNOWN})


class PassObserver:
    """Metrics and log lines for the decisions and actions of every pass."""

    def __init__(self, *, metrics: Metrics) -> None:
        self._metrics = metrics
        # (namespace, pod, uid, container, reference) already warned as unresolved.
        self._warned: set[tuple[str, str, str, str, str]] = set()
        # (workload UID, pod) of the halts found this pass (with the workload's kind, for the
        # gauge), and of those already found: a halt is new once, while the warning line
        # repeats every pass.
        self._halted: dict[tuple[str, str], WorkloadKind] = {}
        self._halts_announced: set[tuple[str, str]] = set()
        # (workload key, pod) already said to match a selector under another controller.
        self._foreign_said: set[tuple[str, str]] = set()

    # -- decisions --------------------------------------------------------------------------

    def decided(self, decision: Decision) -> None:
        """Metrics and one log line per container decision."""
        self._warn_unresolved(decision)
        kind = decision.kind.value
        if decision.loop_guard_hits:
            self._metrics.loop_guard_hits.labels(kind=kind).inc(decision.loop_guard_hits)
        for verdict in decision.containers:
            if verdict.verdict is Verdict.SKIPPED:
                self._metrics.containers_skipped.labels(
                    reason=verdict.reason.value, kind=kind
                ).inc()
            level = logging.WARNING if verdict.reason.is_warning else logging.INFO
            log.log(
                level,
                "%s %s: %s (%s)%s",
                decision.key,
                verdict.container,
                verdict.verdict.value,
                verdict.reason.value,
                f": {verdict.detail}" if verdict.detail else "",
                extra=decision_fields(decision, verdict),
            )

    def foreign(self, item: Enrolled) -> None:
        """Say once per pod that a workload's selector matches a pod it does not control
        (a canary's, a Job's, a ``helm test`` pod): never counted, never deleted."""
        for pod in item.foreign:
            key = (item.workload.key, pod.name)
            if key in self._foreign_said:
                continue
            self._foreign_said.add(key)
            log.info(
                "%s: pod %s matches the selector, controlled by %s: not counted, never deleted",
                item.workload.key,
                pod.name,
                pod.controlled_by,
                extra={
                    "event": "foreign-pod",
                    "workload": item.workload.key,
                    "pod": pod.name,
                    "controlled_by": pod.controlled_by,
                },
            )

    def _warn_unresolved(self, decision: Decision) -> None:
        """One warning per pod and reference whose content cannot be told, not one per pass:
        a foreign reference can last as long as the pod (docs/adr/001, point 3)."""
        for verdict in decision.containers:
            if verdict.reason is Reason.TARGET_CONTENT_UNKNOWN:
                continue  # the registry's fault, warned every pass as the verdict itself
            for finding in verdict.pods:
                if finding.state not in _UNRESOLVED or finding.running is None:
                    continue
                reference = finding.running.reference
                key = (decision.namespace, finding.pod, finding.uid, verdict.container, reference)
                if key in self._warned:
                    continue
                self._warned.add(key)
                log.warning(
                    "%s %s: cannot tell what pod %s runs: %s",
                    decision.key,
                    verdict.container,
                    finding.pod,
                    finding.note,
                    extra={
                        **decision_fields(decision, verdict),
                        "event": "content-unknown",
                        "pod": finding.pod,
                        "running_digest": reference,
                        "reason": finding.state.value,
                    },
                )

    # -- the guardrails ---------------------------------------------------------------------

    def planned(self, plan: RollPlan) -> None:
        """Metrics and one log line per held deletion; pauses and unreadable annotations are
        said every pass, at WARNING, whether or not anything waits on them."""
        budget = plan.budget
        self._metrics.budget_used.set(budget.used + budget.granted)
        self._metrics.mid_roll.set(len(budget.mid_roll))
        self._metrics.paused.set(1 if plan.paused_globally else 0)
        self._metrics.workloads_paused.set(len(plan.paused))
        self._metrics.workloads_invalid_policy.set(len(plan.invalid))
        for hold in plan.holds:
            self.held(hold)
        if plan.paused_globally:
            log.warning(
                "rolling is paused cluster-wide (ROLL_PAUSED=true): %d deletion(s) held",
                len(plan.holds),
                extra={"event": "paused", "scope": "cluster", "held": len(plan.holds)},
            )
        held = {h.workload for h in plan.holds}
        for key in plan.invalid:
            if key in held:
                continue  # its hold line already says so
            problems = "; ".join(str(p) for p in plan.policies[key].problems)
            log.warning(
                "%s: %s; not rolled until fixed",
                key,
                problems,
                extra={"event": "invalid-policy", "workload": key, "reason": "invalid-policy"},
            )

    def held(self, hold: Hold) -> None:
        """Count and log one held deletion (the pass's plan's, or one held again on the
        fresh read right before it was to go)."""
        self._metrics.deletions_held.labels(
            reason=hold.reason.value, kind=hold.action.kind.value
        ).inc()
        action = hold.action
        level = logging.WARNING if hold.reason.is_warning else logging.INFO
        log.log(
            level,
            "%s: not deleting stale pod %s yet: held (%s): %s",
            hold.workload,
            action.name,
            hold.reason.value,
            hold.detail,
            extra={
                **action_fields(action),
                "event": "hold",
                "reason": hold.reason.value,
                "until": hold.until.isoformat() if hold.until else "-",
            },
        )

    def halted(self, workload: WorkloadView, halt: RolloutHalt) -> bool:
        """A WARNING every pass while halted; True the first time this halt is found (until
        a complete full pass no longer finds it)."""
        log.warning(
            halt.message(),
            extra={
                "event": "rollout-halted",
                "workload": halt.workload,
                "kind": workload.kind,
                "pod": halt.pod,
                "reason": halt.reason.value,
            },
        )
        key = (workload.uid, halt.pod)
        self._halted[key] = workload.kind
        if key in self._halts_announced:
            return False
        self._halts_announced.add(key)
        return True

    def pass_ended(
        self,
        enrolled: Iterable[Enrolled],
        *,
        scope: Scope,
        fresh_reads: int,
        complete: bool = True,
    ) -> None:
        """Count the pass by scope. After a full pass: count the enrolled workloads and the
        halted rollouts by kind, keep warned keys only for pods still listed (bounded by
        the pods enrolled) and, when the pass was complete, forget halts that ended, so a
        later one on the same pod is announced again. A targeted pass saw only some
        workloads, so it sets no gauge and forgets nothing (its halts were announced)."""
        self._metrics.pass_scopes.labels(scope="full" if scope.is_full else "targeted").inc()
        self._metrics.fresh_reads.inc(fresh_reads)
        if not scope.is_full:
            self._halted = {}
            return
        items = tuple(enrolled)
        for kind in WorkloadKind:
            count = sum(1 for e in items if e.workload.kind is kind)
            self._metrics.workloads.labels(kind=kind.value).set(count)
            halted = sum(1 for k in self._halted.values() if k is kind)
            self._metrics.rollouts_halted.labels(kind=kind.value).set(halted)
        listed = {(p.namespace, p.name, p.uid) for e in items for p in e.pods}
        self._warned = {k for k in self._warned if (k[0], k[1], k[2]) in listed}
        still = {(e.workload.key, p.name) for e in items for p in e.foreign}
        self._foreign_said &= still
        if complete:
            self._halts_announced &= set(self._halted)
        self._halted = {}

    # -- actions ----------------------------------------------------------------------------

    def executed(self, workload: WorkloadView, done: Executed) -> None:
        """Count and log what became of an action (``action_report``)."""
        report_executed(self._metrics, done)


def _digest_text(value: Digest | Unknown | None) -> str:
    if value is None:
        return "-"
    return str(value)


def running_text(verdict: ContainerVerdict) -> str:
    """The digests the compared pods run, or ``-`` when none is known."""
    return ",".join(str(d) for d in verdict.running_digests) or "-"


def decision_fields(decision: Decision, verdict: ContainerVerdict) -> dict[str, object]:
    """The structured fields of a decision's log line: workload and kind, pod, image, both
    digests, and which settledness clause held (``settled``)."""
    pods = verdict.pod or ",".join(f.pod for f in verdict.pods) or "-"
    return {
        "event": "decision",
        "workload": decision.key,
        "kind": decision.kind.value,
        "settled": decision.settledness.reason.value,
        "container": verdict.container,
        "pod": pods,
        "image": verdict.image,
        "running_digest": running_text(verdict),
        "registry_digest": _digest_text(verdict.registry_digest),
        "verdict": verdict.verdict.value,
        "reason": verdict.reason.value,
    }


__all__ = ["PassObserver", "decision_fields", "running_text"]
