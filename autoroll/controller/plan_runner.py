"""Carrying out a pass's plan: each deletion only as a fresh read of its workload still says.

The reconciler finds work and plans it over the whole pass; this is the step after the plan.
For each deletion the plan lets go, in the plan's order, the workload is read again, whole,
fresh from the API (``ClusterPort.read_now``: its object, its pods and, for a DaemonSet, the
Nodes asked for again), decided again on that read alone, and planned again over that one
fresh decision (``RollPlanner.replan``: a window may have closed, the deletion may now be
another pod's, the budget has been spent by the deletions before it); only what that says
goes, through the ``Executor``. Held deletions are never read again, so a pass reads at most
as many workloads as it may delete. A failed read deletes nothing and ends the pass (every
other deletion would wait on the same API); so does an outcome that says this replica may no
longer act (docs/adr/017).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime

from autoroll.controller.announcer import Announcer
from autoroll.controller.asking import PassState
from autoroll.controller.deciding import PassDecider
from autoroll.controller.executor import Executed, Executor, Outcome
from autoroll.controller.observer import PassObserver
from autoroll.controller.planner import RollPlanner
from autoroll.controller.rolls import RollMemory
from autoroll.core.decide import Decision, Sighting
from autoroll.core.guardrails import RollPlan
from autoroll.core.holds import Hold
from autoroll.core.images import TagRef
from autoroll.core.model import Enrolled
from autoroll.core.ports import ClusterPort
from autoroll.core.scope import Scope

#: The pass's lines keep the logger name they always had: log queries select on it.
log = logging.getLogger("autoroll.controller.reconciler")


@dataclass(slots=True)
class Acted:
    """What the execution step learnt: fresh decisions by workload key, the holds the
    guardrails put on them, and how many workloads were read again."""

    decisions: dict[str, Decision] = field(default_factory=dict)
    holds: list[Hold] = field(default_factory=list)
    fresh_reads: int = 0


class PlanRunner:
    """Carries out a plan's deletions in its order, each after a fresh read (module docstring)."""

    def __init__(
        self,
        *,
        cluster: ClusterPort,
        executor: Executor,
        planner: RollPlanner,
        rolls: RollMemory,
        observer: PassObserver,
        announcer: Announcer,
        decider: PassDecider,
        clock: Callable[[], datetime],
    ) -> None:
        self._cluster = cluster
        self._executor = executor
        self._planner = planner
        self._rolls = rolls
        self._observer = observer
        self._announcer = announcer
        self._decider = decider
        self._clock = clock

    def run(
        self,
        plan: RollPlan,
        items: Sequence[tuple[Enrolled, Decision]],
        *,
        state: PassState,
        acted: Acted,
        executed: list[Executed],
        stopping: Callable[[], bool],
        scope: Scope,
        sightings: dict[TagRef, Sighting],
    ) -> bool:
        """Carry out the plan's deletions in its order, each only as a fresh read and the
        guardrails over it still say (module docstring); True if the pass must end early."""
        found = {d.actions[0]: (e, d) for e, d in items if d.actions}
        for action in plan.go:
            if stopping():
                log.info("stop requested; leaving the rest of this pass's deletions undone")
                return True
            item, decision = found[action]
            acted.fresh_reads += 1
            fresh, now_decision, failed = self._decide_fresh(item, state, sightings, found=decision)
            if failed is not None:
                acted.decisions[item.workload.key] = now_decision
                executed.append(failed)
                self._observer.executed(item.workload, failed)
                return True
            acted.decisions[item.workload.key] = now_decision
            if fresh is None:
                # Gone, replaced, or no longer enrolled by the fresh read: nothing to act on.
                log.info("%s: gone or no longer enrolled; not acting on it", item.workload.key)
                continue
            if now_decision != decision:
                self._observer.decided(now_decision)
            others = [(e, d) for e, d in items if e.workload.key != item.workload.key]
            again = self._planner.replan(fresh, now_decision, others, sightings=sightings)
            for hold in again.holds:
                acted.holds.append(hold)
                self._observer.held(hold)
            # decide() emits at most one action, and a plan of one workload one go at most.
            for go in again.go[:1]:
                done = self._executor.execute(go)
                executed.append(done)
                if done.outcome.spends_budget:
                    self._planner.spent(go.namespace)
                if done.outcome in (Outcome.DELETED, Outcome.ERROR):
                    # Sent (an error may have reached the API): its replacement is ours.
                    self._rolls.deleting(fresh)
                self._observer.executed(fresh.workload, done)
                self._announcer.executed(
                    fresh,
                    now_decision,
                    done,
                    scope=scope,
                    sightings=sightings,
                    now=self._clock(),
                )
                if done.outcome.ends_pass:
                    return True
        return False

    def _decide_fresh(
        self,
        item: Enrolled,
        state: PassState,
        sightings: Mapping[TagRef, Sighting],
        *,
        found: Decision,
    ) -> tuple[Enrolled | None, Decision, Executed | None]:
        """Read the workload again, whole (its object, its pods and, for a DaemonSet, the
        Nodes again), and decide on that read (module docstring).

        A failed read deletes nothing: the decision found is kept without its action, and
        the failure is reported as that action's outcome (which ends the pass). A workload
        the read finds gone, replaced or no longer enrolled is None: nothing to act on.
        """
        try:
            fresh = self._cluster.read_now(item.workload)
        except Exception as exc:  # reported as the action's outcome by the observer
            failed = Executed(found.actions[0], Outcome.READ_FAILED, str(exc))
            return item, replace(found, actions=()), failed
        if fresh is None:
            return None, replace(found, actions=()), None
        # Node readiness read earlier in the pass is not fresh: ask again.
        decision = self._decider.ask(fresh, replace(state, nodes={}), sightings, now=self._clock())
        self._rolls.saw(fresh)
        return fresh, decision, None
