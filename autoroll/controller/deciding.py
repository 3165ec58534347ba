"""Deciding every workload of a pass with what this leadership term remembers of it.

``Asker`` (``autoroll.controller.asking``) runs ``decide`` for one workload and fetches what
it asks for; this adds the term's memory each call needs: the loop guard's sightings, the
pods read before the workload's roll began and those its roll saw Ready
(``autoroll.controller.rolls.RollMemory``), and its health window (``ROLL_HEALTHY_SECONDS``
or its annotation). Deciding a pass in turn also says, through the ``PassObserver``, what was
decided, which foreign pods a selector matches, and which rollouts are halted
(``autoroll.core.halt``), each halt with whether it is new, for the reconciler to quarantine
and announce.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from datetime import datetime, timedelta

from autoroll.controller.asking import Asker, PassState
from autoroll.controller.observer import PassObserver
from autoroll.controller.rolls import RollMemory
from autoroll.core.decide import Decision, Sighting
from autoroll.core.halt import RolloutHalt, rollout_halt
from autoroll.core.images import TagRef
from autoroll.core.model import Enrolled
from autoroll.core.policy import Guardrails, workload_policy

#: The pass's lines keep the logger name they always had: log queries select on it.
log = logging.getLogger("autoroll.controller.reconciler")

#: A rollout found halted this pass: its workload, its decision, the halt, and whether the
#: halt is new (not found by an earlier pass).
Halted = tuple[Enrolled, Decision, RolloutHalt, bool]


class PassDecider:
    """Decides a pass's workloads with this term's memory (module docstring)."""

    def __init__(
        self,
        *,
        asker: Asker,
        rolls: RollMemory,
        observer: PassObserver,
        guardrails: Guardrails,
        halted_after: timedelta,
    ) -> None:
        self._asker = asker
        self._rolls = rolls
        self._observer = observer
        self._guardrails = guardrails
        self._halted_after = halted_after

    def decide_all(
        self,
        enrolled: Sequence[Enrolled],
        state: PassState,
        sightings: Mapping[TagRef, Sighting],
        *,
        now: datetime,
        stopping: Callable[[], bool],
    ) -> tuple[list[tuple[Enrolled, Decision]], list[Halted], bool]:
        """Decide every workload in turn, saying loudly which rollouts are halted (each with
        whether it is new); True with them if a stop was requested before every one was
        decided."""
        items: list[tuple[Enrolled, Decision]] = []
        halts: list[Halted] = []
        for item in enrolled:
            if stopping():
                log.info("stop requested; leaving the rest of this pass undone")
                return items, halts, True
            decision = self.ask(item, state, sightings, now=now)
            self._rolls.saw(item)
            items.append((item, decision))
            self._observer.foreign(item)
            self._observer.decided(decision)
            halt = rollout_halt(
                decision=decision, pods=item.pods, now=now, after=self._halted_after
            )
            if halt is not None:
                halts.append((item, decision, halt, self._observer.halted(item.workload, halt)))
        return items, halts, False

    def ask(
        self,
        item: Enrolled,
        state: PassState,
        sightings: Mapping[TagRef, Sighting],
        *,
        now: datetime,
    ) -> Decision:
        """``decide`` one workload with this term's memory (sightings, its roll's start, the
        pods its roll saw Ready) and its health window (ROLL_HEALTHY_SECONDS or its
        annotation)."""
        key = item.workload.key
        policy = workload_policy(dict(item.workload.annotations), defaults=self._guardrails)
        health = replace(policy.health_window, seen_ready=self._rolls.ready_seen(key))
        return self._asker.decide(
            item,
            state,
            sightings,
            now=now,
            rolled_from=self._rolls.rolled_from(key),
            health=health,
        )
