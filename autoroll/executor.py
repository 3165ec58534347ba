"""Carrying out a pass's one kind of action: delete (or evict) one stale pod, or, in dry-run,
not. Dry-run is "don't execute the plan": ``decide`` returns the same ``DeletePod`` either
way, and only this module looks at ``dry_run``.

With leader election, ``may_act`` (``Elector.may_act``) is asked immediately before every
deletion: a replica whose leadership lapsed mid-pass deletes nothing more, and the pass ends
(docs/adr/004-leader-election-and-webhook-handoff.md). What happened is a typed ``Outcome``;
logging, metrics and Events about it are the observer's (``autoroll.observer``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum

from autoroll.decide import DeletePod
from autoroll.model import DeleteOutcome
from autoroll.ports import ClusterPort


class Outcome(StrEnum):
    """What became of one ``DeletePod``. The values are stable metric and log labels."""

    DELETED = "deleted"  # this call removed (or evicted) the pod
    ALREADY_GONE = "already-gone"  # 404: someone (or the last pass) got there first
    REPLACED = "replaced"  # 409 on the UID precondition: the name is a newer pod now
    BLOCKED = "blocked-by-disruption-budget"  # 429 on eviction: try again next pass
    DRY_RUN = "dry-run"  # DRY_RUN=true: logged, not sent
    ERROR = "error"  # the call failed; the next pass decides again
    NOT_LEADER = "not-leader"  # leadership lapsed before the call: nothing sent, the pass ends
    READ_FAILED = "read-failed"  # the fresh read of the workload's pods failed: the pass ends

    @classmethod
    def of(cls, outcome: DeleteOutcome) -> Outcome:
        return cls(outcome.value)

    @property
    def ends_pass(self) -> bool:
        """Must the pass stop here? This replica may no longer act, or the API did not
        answer the read a deletion needs (every other would wait for it too)."""
        return self in {Outcome.NOT_LEADER, Outcome.READ_FAILED}


@dataclass(frozen=True, slots=True)
class Executed:
    """An action and what became of it; ``detail`` is the error's text for ``ERROR``."""

    action: DeletePod
    outcome: Outcome
    detail: str = ""


def _always() -> bool:
    return True


class Executor:
    """Executes (or, in dry-run, only reports) one ``DeletePod`` at a time."""

    def __init__(
        self, *, cluster: ClusterPort, dry_run: bool, may_act: Callable[[], bool] = _always
    ) -> None:
        self._cluster = cluster
        self._dry_run = dry_run
        self._may_act = may_act

    def execute(self, action: DeletePod) -> Executed:
        # Asked right before the call: the renew deadline may have passed mid-pass.
        if not self._may_act():
            return Executed(action, Outcome.NOT_LEADER)
        if self._dry_run:
            return Executed(action, Outcome.DRY_RUN)
        try:
            found = self._cluster.delete_pod(action.namespace, action.name, action.uid)
        except Exception as exc:
            # One failed deletion must not stop the other Deployments' decisions.
            return Executed(action, Outcome.ERROR, str(exc))
        return Executed(action, Outcome.of(found))


__all__ = ["Executed", "Executor", "Outcome"]
