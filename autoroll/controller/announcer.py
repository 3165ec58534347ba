"""Telling people about rolls: one Kubernetes Event and one notification per happening.

The reconciler tells the announcer what a pass did; the announcer decides which of it is a
*happening* (``autoroll.core.happenings``) and tells it once per roll, never once per pass:

- ``started``: a deletion whose workload had no pod on the target yet (read on the fresh
  read, so a restarted controller does not announce a roll it finds under way); in dry-run,
  once per workload and target;
- ``done``: a workload seen rolling in this process (by a deletion, or mid-roll as its pods
  show) that is now current, settled and past its health window;
- ``halted`` or ``quarantined``: a halt the observer found new; ``quarantined`` when it
  quarantined a digest (one Warning says both), nothing when its digest was already
  quarantined (a previous leader told it), ``halted`` otherwise.

Events go to the ``EventPort`` (EMIT_EVENTS); a failing one is logged and counted, never
allowed to fail the pass. Notifications go to ``notify`` (``autoroll.controller.notifier``:
its own thread, throttled), which never blocks.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime

from autoroll.controller.executor import Executed, Outcome
from autoroll.controller.rolls import roll_is_over
from autoroll.core.budget import is_mid_roll
from autoroll.core.decision import RUNS_TARGET, Decision, Sighting
from autoroll.core.halt import RolloutHalt
from autoroll.core.happenings import Happening, HappeningKind
from autoroll.core.images import TagRef
from autoroll.core.model import Digest, Enrolled, WorkloadView
from autoroll.core.ports import EventPort
from autoroll.core.quarantine import QuarantineEntry
from autoroll.core.scope import Scope
from autoroll.instruments.metrics import Metrics

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class _Rolling:
    """A workload seen rolling: onto which tag and digest, from which."""

    workload: WorkloadView
    tag: str
    before: str
    after: str


def _never(_: Happening) -> None:
    return None


class Announcer:
    """Events and notifications about rolls, once per happening."""

    def __init__(
        self,
        *,
        metrics: Metrics,
        events: EventPort | None = None,
        notify: Callable[[Happening], None] = _never,
        dry_run: bool = False,
        evicting: bool = False,
    ) -> None:
        self._metrics = metrics
        self._events = events
        self._notify = notify
        self._dry_run = dry_run
        self._verb = "evicted" if evicting else "deleted"
        self._rolling: dict[str, _Rolling] = {}
        self._dry_started: set[tuple[str, str]] = set()  # (workload key, target)

    # -- what the reconciler tells it -----------------------------------------------------

    def executed(
        self,
        fresh: Enrolled,
        decision: Decision,
        done: Executed,
        *,
        scope: Scope,
        sightings: dict[TagRef, Sighting] | None = None,
        now: datetime,
    ) -> None:
        """A deletion was sent (or, in dry-run, would have been): a roll's start?"""
        if done.outcome not in (Outcome.DELETED, Outcome.DRY_RUN):
            return
        action = done.action
        verdict = next((v for v in decision.containers if v.container == action.container), None)
        if verdict is None or verdict.ref is None:
            return
        key = fresh.workload.key
        tag = f"{verdict.ref.repository}:{verdict.ref.tag}"
        rolling = _Rolling(fresh.workload, tag, str(action.from_digest), str(action.to_digest))
        if done.outcome is Outcome.DRY_RUN:
            seen = (key, str(action.to_digest))
            if seen in self._dry_started:
                return
            self._dry_started.add(seen)
        else:
            known = self._rolling.get(key)
            if known is not None and known.after == rolling.after:
                return  # told already (or found under way)
            self._rolling[key] = rolling
            if any(f.state in RUNS_TARGET and f.pod != action.name for f in verdict.pods):
                return  # a pod already runs the target: this roll was told when it began
        sighting = (sightings or {}).get(verdict.ref)
        self._tell(
            Happening(
                HappeningKind.STARTED,
                fresh.workload,
                tag,
                rolling.before,
                rolling.after,
                f"{'would delete' if self._dry_run else self._verb} pod {action.name}, the"
                f" first of {fresh.workload.kind_name} to go for this digest",
                now,
                trigger=trigger(scope, sighting),
                dry_run=done.outcome is Outcome.DRY_RUN,
            )
        )

    def passed(self, items: Sequence[tuple[Enrolled, Decision]], *, now: datetime) -> None:
        """After a pass: remember the workloads seen mid-roll; tell those now done."""
        for item, decision in items:
            key = item.workload.key
            if key not in self._rolling and is_mid_roll(decision, item.pods):
                self._rolling[key] = _mid_roll(item.workload, decision)
            known = self._rolling.get(key)
            if known is None or not _is_done(decision):
                continue
            del self._rolling[key]
            self._tell(
                Happening(
                    HappeningKind.DONE,
                    item.workload,
                    known.tag,
                    known.before,
                    known.after,
                    f"every pod of {item.workload.kind_name} runs it, settled and past its"
                    " health window",
                    now,
                )
            )

    def halted(
        self,
        workload: WorkloadView,
        halt: RolloutHalt,
        *,
        found: Sequence[QuarantineEntry],
        added: Sequence[QuarantineEntry],
        active: bool,
        now: datetime,
    ) -> None:
        """A new halt; ``found`` the quarantine entries it is evidence for, ``added`` those
        it added, ``active`` whether those it found were already quarantined."""
        if added:
            entry = added[0]
            self._tell(
                Happening(
                    HappeningKind.QUARANTINED,
                    workload,
                    str(entry.key),
                    "",
                    str(entry.digest),
                    f"{halt.message()}; {entry.message()}",
                    now,
                )
            )
            return
        if found and active:
            log.info(
                "%s: halted on a digest already quarantined (%s); told when it was",
                workload.key,
                ", ".join(f"{e.key}@{e.digest.short}" for e in found),
                extra={"event": "halt-already-quarantined", "workload": workload.key},
            )
            return
        known = self._rolling.get(workload.key)
        self._tell(
            Happening(
                HappeningKind.HALTED,
                workload,
                known.tag if known else "",
                known.before if known else "",
                known.after if known else "",
                halt.message(),
                now,
            )
        )

    def new_term(self) -> None:
        """A new leadership term: what it tells starts from what it sees."""
        self._rolling.clear()
        self._dry_started.clear()

    # -- telling ----------------------------------------------------------------------------

    def _tell(self, happening: Happening) -> None:
        self._notify(happening)
        if self._events is None:
            return
        workload = happening.workload
        try:
            self._events.emit(happening.event())
        except Exception as exc:
            self._metrics.events.labels(outcome="error").inc()
            log.warning(
                "could not record an Event on %s: %s",
                workload.key,
                exc,
                extra={"event": "event-failed", "workload": workload.key, "kind": workload.kind},
            )
            return
        self._metrics.events.labels(outcome="created").inc()


def trigger(scope: Scope, sighting: Sighting | None) -> str:
    """What made the pass that started a roll, for ``autoroll history``."""
    what = (
        "a full pass (the poll, a start, or a webhook naming no tag)"
        if scope.is_full
        else f"a pass for {scope} (its package webhook, or the roll's pace)"
    )
    if sighting is None:
        return what
    return f"{what}; the tag named it since {sighting.first_seen_at.isoformat(timespec='seconds')}"


def _is_done(decision: Decision) -> bool:
    return roll_is_over(decision) and decision.settledness.is_settled and decision.health.passed


def _mid_roll(workload: WorkloadView, decision: Decision) -> _Rolling:
    """What a workload found mid-roll rolls onto, as far as its verdicts say."""
    for verdict in decision.containers:
        if verdict.ref is not None and isinstance(verdict.registry_digest, Digest):
            before = next(
                (str(d) for d in verdict.running_digests if d != verdict.registry_digest), ""
            )
            tag = f"{verdict.ref.repository}:{verdict.ref.tag}"
            return _Rolling(workload, tag, before, str(verdict.registry_digest))
    return _Rolling(workload, "", "", "")


__all__ = ["Announcer", "trigger"]
