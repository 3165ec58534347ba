"""Roll pace: look again as soon as a rolling workload's replacement can be Ready.

Without this a webhook buys one deletion and the next pod of a 3-replica roll goes only at
the next poll (120 s by default), although its replacement was Ready within a second. So:

1. After each pass, every workload whose decision left work — a stale pod deleted now, or
   stale pods waiting for the workload to settle — is *armed* with the tags of its stale
   containers (and the UID of the pod just deleted, if one was). A workload the pass found
   done is disarmed.
2. The watched cache (``autoroll.core.ports.WatchPort``) tells the pacer whose pods changed. An
   armed workload whose cached pods no longer show the deleted pod as live, and which is
   settled by the very rule the decision uses (``autoroll.core.kinds.is_settled``: no pod
   terminating, every pod Ready, enough pods, and what its kind's status must say), is
   disarmed and a pass targeted at its tags is nudged.
3. That pass decides on a fresh read of the workload's pods, as every pass does before a
   deletion: the cache only says *when* to look.

4. A workload whose decision waits on its health window (``autoroll.core.health``) is not armed:
   its pods will not change when the window ends, so the pacer asks for a pass targeted at
   its tags when it does (``later``, the worker's deferred nudge); one whose replacement
   failed inside its window is left to the poll (its roll is halted).
5. A workload the pass found stale and settled but deleted nothing from (``DRY_RUN``, an
   eviction a PodDisruptionBudget refused, a pod already gone or replaced) is armed only
   while the cache shows something still changing: if it shows the workload settled right
   after the pass, no pod event is coming that a pass could act on, and a nudge then would
   start the same pass again at once, in a loop (one registry HEAD and one pod list each).
   The poll and webhooks look at it again.
6. A pass's decision and the cache may disagree for good about a workload that waits (a
   partitioned StatefulSet's template rollout, a pod behind ``updateRevision``): the pass
   says "waiting", the cache says settled, and each after-pass check would nudge the next
   pass at once. So the check right after a pass nudges a workload once; if the pass that
   nudge bought leaves it waiting and settled again with nothing deleted, it is left to
   the poll and webhooks until a pass deletes one of its pods or finds it done.
7. Nor is a workload whose deletion the guardrails held (budget, min-age, window, pause,
   quarantine, wave, a digest not yet proven): nothing was deleted, so the cache shows it
   settled, and arming it would nudge a pass at once that the guardrail holds again, and
   again on each of its pod events: a pass in a loop. A hold that says when it may go
   (``until``) is looked at then; the others wait for the pass that changes their answer
   (the poll, a webhook, or the window's end of the workload they wait for).

Never faster than settledness allows: at most one nudge per armed workload per pass, and
only once the cache shows it settled. A replacement that never becomes Ready (a crash loop)
never triggers one; the poll still looks. Without a watched cache (``WATCH_CACHE=false``)
there is nothing to pace by: rolls advance with the poll and with webhooks, as before.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

from autoroll.controller.executor import Outcome
from autoroll.controller.reconciler import TickReport
from autoroll.core.decide import Decision, Verdict
from autoroll.core.health import HealthState
from autoroll.core.kinds import is_settled
from autoroll.core.model import Digest
from autoroll.core.ports import WatchPort
from autoroll.core.scope import ImageTag, Scope
from autoroll.instruments.metrics import Metrics

log = logging.getLogger(__name__)

#: Verdicts that leave a workload rolling: a pod went now, or stale pods wait their turn.
_ROLLING = frozenset({Verdict.STALE, Verdict.WAITING})

Tick = Callable[[Callable[[], bool], Scope], TickReport]


@dataclass(frozen=True, slots=True)
class Armed:
    """A rolling workload: the tags to look at again, and the pod whose going to wait for."""

    tags: frozenset[ImageTag]
    deleted_uid: str = ""
    #: The pass changed it or saw it unsettled (a pod deleted, stale pods waiting): the
    #: cache showing it settled means something happened. False for a stale, settled
    #: workload nothing was deleted from (module docstring, 5).
    expects_change: bool = True


class RollPacer:
    """Arms rolling workloads after each pass; nudges one when its cached pods settle."""

    def __init__(
        self,
        *,
        watch: WatchPort,
        nudge: Callable[[Scope], None],
        metrics: Metrics,
        later: Callable[[Scope, float], None] | None = None,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self._watch = watch
        self._nudge = nudge
        self._later = later
        self._clock = clock
        self._metrics = metrics
        self._lock = threading.Lock()
        self._armed: dict[str, Armed] = {}
        #: Workloads the last after-pass check nudged (module docstring, 6).
        self._nudged_after_pass: set[str] = set()
        watch.subscribe(self.changed)

    @property
    def armed(self) -> dict[str, Armed]:
        with self._lock:
            return dict(self._armed)

    def paced(self, tick: Tick) -> Tick:
        """``tick``, followed by ``passed`` with its report (what the worker runs)."""

        def run(stopping: Callable[[], bool], scope: Scope) -> TickReport:
            report = tick(stopping, scope)
            self.passed(report)
            return report

        return run

    def passed(self, report: TickReport) -> None:
        """Arm the workloads this pass left rolling, disarm those it found done."""
        if report.skipped:
            with self._lock:
                self._armed.clear()  # not the leader: the leader paces its own rolls
                self._nudged_after_pass.clear()
            return
        deleted = {
            done.action.workload_key: done.action.uid
            for done in report.executed
            if done.outcome is Outcome.DELETED
        }
        holds = {h.workload: h for h in report.plan.holds} if report.plan is not None else {}
        armed = []
        windows: list[tuple[frozenset[ImageTag], datetime]] = []
        with self._lock:
            for decision in report.decisions:
                tags = frozenset(
                    ImageTag.of(verdict.ref)
                    for verdict in decision.containers
                    if verdict.verdict in _ROLLING and verdict.ref is not None
                )
                until = _inside_until(decision)
                if until is not None:
                    # Others may wait for this workload's window (a wave, a digest proving
                    # itself): look at its tags when it ends, done or not.
                    windows.append((_tags(decision), until))
                hold = holds.get(decision.key)
                if not tags or not decision.health.passed or hold is not None:
                    # Done, waiting on a health window, or held by a guardrail: no pod
                    # change ends that wait (module docstring, 4 and 7).
                    self._armed.pop(decision.key, None)
                    if not tags:
                        self._nudged_after_pass.discard(decision.key)
                    if tags and hold is not None and hold.until is not None:
                        windows.append((tags, hold.until))
                    continue
                uid = deleted.get(decision.key, "")
                if uid:
                    self._nudged_after_pass.discard(decision.key)
                waiting = any(v.verdict is Verdict.WAITING for v in decision.containers)
                self._armed[decision.key] = Armed(tags, uid, bool(uid) or waiting)
                armed.append(decision.key)
        # It may have settled already (a fast replacement, or a cache that saw it first).
        for key in armed:
            self._check(key, after_pass=True)
        if self._later is not None:
            now = self._clock()
            for tags, until in windows:
                if tags:
                    self._later(Scope.of(tags), max(0.0, (until - now).total_seconds()))

    def changed(self, keys: frozenset[str]) -> None:
        """The cache's listener: look at the armed workloads among ``keys``."""
        with self._lock:
            wanted = [key for key in keys if key in self._armed]
        for key in wanted:
            self._check(key)

    def _check(self, key: str, *, after_pass: bool = False) -> None:
        found = self._watch.cached(key)
        if found is None:
            return
        with self._lock:
            armed = self._armed.get(key)
            if armed is None:
                return
            gone = all(p.uid != armed.deleted_uid or p.deleting for p in found.pods)
            settled = is_settled(workload=found.workload, pods=found.pods)
            if not gone or not settled.is_settled:
                return
            del self._armed[key]
            if after_pass and not armed.expects_change:
                log.debug("%s: stale, settled, nothing deleted: left to the poll", key)
                return
            if not after_pass or armed.deleted_uid:
                self._nudged_after_pass.discard(key)  # a pod event, or a deletion: progress
            elif key in self._nudged_after_pass:
                log.debug("%s: the pass and the cache disagree on settled: left to the poll", key)
                return
            else:
                self._nudged_after_pass.add(key)
        self._metrics.roll_pace_nudges.inc()
        log.debug("%s settled: looking again at %s", key, ", ".join(map(str, armed.tags)))
        self._nudge(Scope.of(armed.tags))


def _inside_until(decision: Decision) -> datetime | None:
    """When the workload's health window ends, if it is inside one."""
    health = decision.health
    return health.until if health.state is HealthState.INSIDE else None


def _tags(decision: Decision) -> frozenset[ImageTag]:
    """Every tag of the workload with a known target."""
    return frozenset(
        ImageTag.of(v.ref)
        for v in decision.containers
        if v.ref is not None and isinstance(v.registry_digest, Digest)
    )


__all__ = ["Armed", "RollPacer"]
