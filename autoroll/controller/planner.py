"""The guardrails over a pass, with the memory one leadership term keeps for them.

``autoroll.core.guardrails.plan_rolls`` is pure: it is told what has been deleted in the last
period and which workloads hold an in-flight slot. This is where a term remembers both, so
the reconciler only asks for a plan (``RollPlanner.plan``, over the whole pass) and for a
plan again (``RollPlanner.replan``, over one freshly read workload right before its
deletion) and reports each deletion it sent (``RollPlanner.spent``).

The budget's memory is when pods were deleted in the last period: this process's own
deletions, and, taken as its term begins, the creation times of the enrolled pods created
in the period before, which stand for a previous leader's deletions (a restart forgets the
first; the second is in the cluster). That evidence is taken from every enrolled workload,
never from a targeted pass's few: a term's first pass is always a full one
(``Reconciler.tick``). The in-flight memory is which workloads were mid-roll when last
decided (or had a pod deleted since), by key: the slots a targeted pass cannot see.
Everything here belongs to one term (``new_term``): a new one starts from the cluster alone.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime

from autoroll.controller.quarantines import QuarantineKeeper
from autoroll.core.budget import Deletion, pods_started
from autoroll.core.decide import Decision, Reason, Sighting
from autoroll.core.guardrails import RollPlan, plan_rolls
from autoroll.core.images import TagRef
from autoroll.core.model import Enrolled
from autoroll.core.policy import Guardrails
from autoroll.core.scope import Scope


def judged_whole(items: Sequence[tuple[Enrolled, Decision]]) -> set[str]:
    """The workloads whose every container this pass judged: a container on a tag outside
    a targeted pass's scope is not, so whether its roll is under way is not known here."""
    return {
        e.workload.key
        for e, d in items
        if not any(v.reason is Reason.NOT_IN_SCOPE for v in d.containers)
    }


class RollPlanner:
    """Plans a pass's deletions with the guardrails and this term's memory (module docstring)."""

    def __init__(
        self,
        *,
        guardrails: Guardrails,
        keeper: QuarantineKeeper,
        clock: Callable[[], datetime],
    ) -> None:
        self._guardrails = guardrails
        self._keeper = keeper
        self._clock = clock
        # When this process deleted (or, in dry-run, would have deleted) a pod, and the
        # evidence of a previous leader's deletions taken as its term began: the budget's
        # count (autoroll.core.guardrails), pruned to one period; the workloads mid-roll as last
        # decided (or with a pod deleted since), by key: the in-flight slots a targeted
        # pass cannot see (``plan``).
        self._deleted_at: list[Deletion] = []
        self._mid_roll: set[str] = set()
        self._term_started = False

    @property
    def term_started(self) -> bool:
        """Has this term planned its first pass (which took the budget's evidence)?"""
        return self._term_started

    def new_term(self) -> None:
        """Forget the budget's memory and the in-flight slots: a term starts from the cluster."""
        self._term_started = False
        self._deleted_at = []
        self._mid_roll = set()

    def plan(
        self,
        items: Sequence[tuple[Enrolled, Decision]],
        *,
        sightings: Mapping[TagRef, Sighting],
    ) -> RollPlan:
        """The guardrails over the whole pass; the deletion memory is pruned to its period.

        The first pass of a term (this process's first, or the first after leading again)
        adds the creation times of the enrolled pods created in the last period: a previous
        leader's deletions, which this process cannot remember, left those replacements.
        Taken once, so that rolling one of them again cannot erase the evidence; and from
        every enrolled workload: a term's first pass is always a full one (``tick``).

        A targeted pass sees only some workloads, and of some only the containers on its
        tags, but the in-flight limit counts all of them: those it cannot judge whole that
        were mid-roll when last decided (or had a pod deleted since) hold their slots
        (``_mid_roll``).
        """
        now = self._clock()
        period = self._guardrails.period
        if not self._term_started:
            self._term_started = True
            self._deleted_at.extend(pods_started([e for e, _ in items], now=now, period=period))
        self._deleted_at = [d for d in self._deleted_at if d.at > now - period]
        return plan_rolls(
            items=items,
            sightings=sightings,
            guardrails=self._guardrails,
            deleted_at=self._deleted_at,
            now=now,
            mid_roll_elsewhere=self._mid_roll - judged_whole(items),
            quarantine=self._keeper.book,
        )

    def remember_mid_roll(
        self, plan: RollPlan, items: Sequence[tuple[Enrolled, Decision]], scope: Scope
    ) -> None:
        """Who holds an in-flight slot, for the targeted passes to come: a full pass's plan
        says it for everyone; a targeted one only for its own workloads. A workload a pod
        was deleted from now is mid-roll whatever it was before."""
        here = {e.workload.key for e, _ in items}
        kept = set() if scope.is_full else self._mid_roll - judged_whole(items)
        started = {a.workload_key for a in plan.go}
        self._mid_roll = kept | (set(plan.budget.mid_roll) & here) | started

    def replan(
        self,
        item: Enrolled,
        decision: Decision,
        others: Sequence[tuple[Enrolled, Decision]],
        *,
        sightings: Mapping[TagRef, Sighting],
    ) -> RollPlan:
        """The guardrails over one freshly read workload, at this moment, with the deletions
        made so far (this pass's included) counted against the budget. Its in-flight slot
        was granted by the pass's plan; ``others`` (the rest of the pass) order the roll
        across workloads (waves, a digest proving itself first)."""
        now = self._clock()
        self._deleted_at = [d for d in self._deleted_at if d.at > now - self._guardrails.period]
        return plan_rolls(
            items=[(item, decision)],
            sightings=sightings,
            guardrails=self._guardrails,
            deleted_at=self._deleted_at,
            now=now,
            quarantine=self._keeper.book,
            others=others,
        )

    def spent(self, namespace: str) -> None:
        """A deletion just counted against the budget (sent, dry-run, or failed: it may have
        reached the API)."""
        self._deleted_at.append(Deletion(self._clock(), namespace))
