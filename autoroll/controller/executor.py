"""Carrying out a pass's one kind of action: delete (or evict) one stale pod, or, in dry-run,
not. Dry-run is "don't execute the plan": ``decide`` returns the same ``DeletePod`` either
way, and only this module looks at ``dry_run``.

With leader election, ``may_act`` (``Elector.may_act``) is asked immediately before every
deletion: a replica whose leadership lapsed mid-pass deletes nothing more, and the pass ends
(docs/adr/004-leader-election-and-webhook-handoff.md). And a deletion starts only while the
Lease's remaining authority (``Elector.authority_left``: until another replica could take the
Lease over) covers the call's worst case: the call is given that many seconds, its timeouts and
its one reconnect included, and below ``MIN_AUTHORITY_SECONDS`` it is not sent. What happened is
a typed ``Outcome``; logging, metrics and Events about it are the observer's
(``autoroll.controller.observer``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Final

from autoroll.core.decide import DeletePod
from autoroll.core.model import DeleteOutcome
from autoroll.core.ports import ClusterPort


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
    def spends_budget(self) -> bool:
        """Does this count against the roll budget? A deletion, a dry-run's would-be one (so
        a dry run shows what the budget would allow), and a failed call, which may have
        reached the API server before it failed."""
        return self in {Outcome.DELETED, Outcome.DRY_RUN, Outcome.ERROR}

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


#: The least authority left, in seconds, in which a deletion is still sent: enough for a
#: connection and an answer from an API server that is up.
MIN_AUTHORITY_SECONDS: Final = 1.0


def _always() -> bool:
    return True


def _unbounded() -> float:
    return math.inf


class Executor:
    """Executes (or, in dry-run, only reports) one ``DeletePod`` at a time."""

    def __init__(
        self,
        *,
        cluster: ClusterPort,
        dry_run: bool,
        may_act: Callable[[], bool] = _always,
        authority: Callable[[], float] = _unbounded,
    ) -> None:
        self._cluster = cluster
        self._dry_run = dry_run
        self._may_act = may_act
        self._authority = authority

    def execute(self, action: DeletePod) -> Executed:
        # Asked right before the call: the renew deadline may have passed mid-pass.
        if not self._may_act():
            return Executed(action, Outcome.NOT_LEADER)
        if self._dry_run:
            return Executed(action, Outcome.DRY_RUN)
        left = self._authority()
        if left < MIN_AUTHORITY_SECONDS:
            # The call could still be on its way when another replica may lead: not sent.
            return Executed(
                action, Outcome.NOT_LEADER, f"{max(left, 0.0):.1f}s of Lease authority left"
            )
        try:
            if math.isinf(left):  # no election: the call's own timeouts bound it
                found = self._cluster.delete_pod(action.namespace, action.name, action.uid)
            else:
                found = self._cluster.delete_pod(
                    action.namespace, action.name, action.uid, within=left
                )
        except Exception as exc:
            # One failed deletion must not stop the other Deployments' decisions.
            return Executed(action, Outcome.ERROR, str(exc))
        return Executed(action, Outcome.of(found))


__all__ = ["MIN_AUTHORITY_SECONDS", "Executed", "Executor", "Outcome"]
