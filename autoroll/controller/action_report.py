"""What became of each action of a pass, counted and said in one log line.

The pass's observer (``autoroll.controller.observer``) hands each ``Executed`` action here:
a deletion done or only planned (dry-run), failed, or not done (already gone, replaced,
refused by a PodDisruptionBudget, no longer the leader). Nothing is remembered between
actions; one line per workload per pass at most, so no storm.
"""

from __future__ import annotations

import logging

from autoroll.controller.executor import Executed, Outcome
from autoroll.core.decide import DeletePod
from autoroll.instruments.metrics import Metrics

#: The pass's lines keep the logger name they always had: log queries select on it.
log = logging.getLogger("autoroll.controller.reconciler")


def report_executed(metrics: Metrics, done: Executed) -> None:
    """Count and log what became of an action."""
    action, outcome = done.action, done.outcome
    fields = action_fields(action)
    where = f"{action.namespace}/{action.name} of {action.kind}/{action.workload}"
    kind = action.kind.value
    if outcome is Outcome.DRY_RUN:
        metrics.deletions.labels(mode="dry", kind=kind).inc()
        log.info(
            "DRY_RUN: would delete stale pod %s (%s)",
            where,
            action.reason,
            extra={**fields, "event": "delete", "dry_run": True},
        )
    elif outcome is Outcome.DELETED:
        metrics.deletions.labels(mode="real", kind=kind).inc()
        log.info(
            "deleted stale pod %s (%s)",
            where,
            action.reason,
            extra={**fields, "event": "delete", "dry_run": False},
        )
    elif outcome is Outcome.ERROR:
        log.error(
            "deleting pod %s failed: %s",
            where,
            done.detail,
            extra={**fields, "event": "delete-failed"},
        )
    elif outcome is Outcome.READ_FAILED:
        metrics.deletions_not_done.labels(reason=outcome.value, kind=kind).inc()
        log.error(
            "not deleting pod %s: its workload could not be read again first (%s); ending the pass",
            where,
            done.detail,
            extra={**fields, "event": "delete-failed", "reason": outcome.value},
        )
    else:
        _not_done(metrics, where, outcome, fields, kind)


def _not_done(
    metrics: Metrics, where: str, outcome: Outcome, fields: dict[str, object], kind: str
) -> None:
    # One line per workload per pass at most (one action each): no storm.
    metrics.deletions_not_done.labels(reason=outcome.value, kind=kind).inc()
    extra = {**fields, "event": "delete-noop", "reason": outcome.value}
    if outcome is Outcome.BLOCKED:
        log.warning(
            "eviction of pod %s refused (a PodDisruptionBudget allows no disruption"
            " now); trying again next pass",
            where,
            extra=extra,
        )
    elif outcome is Outcome.NOT_LEADER:
        log.warning(
            "not deleting pod %s: this replica is no longer the leader; ending the pass",
            where,
            extra=extra,
        )
    else:
        log.info("pod %s not deleted: %s", where, outcome.value, extra=extra)


def action_fields(action: DeletePod) -> dict[str, object]:
    """The structured fields of an action's log line: workload and kind, container, pod,
    image and both digests."""
    return {
        "workload": action.workload_key,
        "kind": action.kind.value,
        "container": action.container,
        "pod": action.name,
        "image": action.image,
        "running_digest": str(action.from_digest),
        "registry_digest": str(action.to_digest),
    }


__all__ = ["action_fields", "report_executed"]
