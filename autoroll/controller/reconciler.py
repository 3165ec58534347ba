"""One reconcile pass: snapshot → resolve → decide → act, then count and log every decision.

This is the imperative shell around ``autoroll.core.decide``. It owns the only state autoroll
keeps, and keeps it in memory: the loop guard's map of when each ref's target digest was
first seen and which pods were listed by then (the registry client keeps the other memory,
index children and manifests' image configs by digest), and which pods it has already
warned about because what they run cannot be told. Restarting the process forgets it,
which is safe: the next sighting is "now", so pods that existed before it stay eligible and
pods created after it stay protected; a pod running the target's content under another
repository's name is current whatever the sighting, because staleness is decided on
content, never on the name.

Per workload, ``decide`` may ask three times before it decides: for the children of the
target index (a pod reporting a platform child), then for the image configs both sides stand
for (a pod reporting another manifest, possibly in another repository), then, for a DaemonSet
about to lose a pod, whether the candidates' Nodes are Ready. Every request is answered,
``Unknown`` when it cannot be, so a request is never repeated; the answers are shared by the
pass's later workloads (Node answers by this pass only: readiness changes; all of this is
``autoroll.controller.asking``). Each call carries the term's memory of the workload (its
roll's start, the pods it saw Ready) and its health window: ``autoroll.controller.deciding``.

A pass lists the cluster first, then reads the sighting clock, then asks the registry, and
deletes only after that (``autoroll.controller.pass_reader``, which also resolves each
target's configs at the end of a pass, while the registry still holds the manifest). A pass
has a scope (``autoroll.core.scope``): full (the poll timer, the first pass) or targeted at
some tags (a package webhook, a workload in the middle of a roll); a targeted pass asks the
registry about its tags only and leaves every other tag's sighting alone.

Every workload in scope is decided first; then the guardrails (``autoroll.core.guardrails``)
choose which of the decided deletions go now and in which order (the cluster-wide budget,
pauses, windows, the min-age), over a targeted pass exactly as over a full one, and only
those are carried out. The budget's memory of recent deletions, and which workloads hold an
in-flight slot, are the ``RollPlanner``'s (``autoroll.controller.planner``); its evidence of a
previous leader's deletions is taken from every enrolled workload, so a term whose first
pass is targeted reads a full snapshot for it (from the watched cache, when there is one).

Finding work is not deciding on it. For each deletion the plan lets go, in the plan's order,
the ``PlanRunner`` (``autoroll.controller.plan_runner``) reads that one workload again,
fresh from the API (``ClusterPort.read_now``), decides once more on that read, and runs the
guardrails again over that one fresh decision; only what that says goes (ARCHITECTURE.md,
property 8). Whatever found the work — a cache lagging behind, or a listing made seconds
ago in a long pass — settledness, staleness, the loop guard and the guardrails are judged on
what the API says right before the DELETE. If a read fails, nothing is deleted and the pass
ends.

The pass only orders the steps. Carrying out a deletion (or, in dry-run, not; and not at
all once leadership lapsed) is the ``Executor``'s (``autoroll.controller.executor``), with a typed
``Outcome``; metrics and log lines about decisions and actions are the
``PassObserver``'s (``autoroll.controller.observer``), and so is saying loudly that a rollout is
halted (``autoroll.core.halt`` decides when: stale pods have waited ``halted_after`` behind a pod
that is not Ready); Events and notifications, once per roll, are the ``Announcer``'s
(``autoroll.controller.announcer``). A halt's digest is quarantined for its tag
(``autoroll.core.quarantine``; the record is the ``QuarantineKeeper``'s, read at the start of
every term and every full pass), and the guardrails hold every deletion onto it. A replica
that does not lead (``leading``) skips the whole pass and reports it as ``skipped``.

Collaborators are injected (cluster, registry, clock), so unit tests drive a full pass with
hand-written fakes; nothing here imports the Kubernetes client or an HTTP library (the
import contracts in pyproject.toml enforce it).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta

from autoroll.controller.announcer import Announcer
from autoroll.controller.approvals import PlanListener
from autoroll.controller.asking import Asker, PassState
from autoroll.controller.credentials import PullCredentials
from autoroll.controller.deciding import Halted, PassDecider
from autoroll.controller.executor import Executed, Executor, Outcome
from autoroll.controller.lookups import RegistryAsk
from autoroll.controller.observer import PassObserver
from autoroll.controller.pass_reader import PassReader
from autoroll.controller.plan_runner import Acted, PlanRunner
from autoroll.controller.planner import RollPlanner
from autoroll.controller.quarantines import QuarantineKeeper
from autoroll.controller.rolls import RollMemory
from autoroll.core.decide import Decision, Sighting
from autoroll.core.guardrails import RollPlan
from autoroll.core.images import TagRef
from autoroll.core.model import Digest, Enrolled, Unknown
from autoroll.core.policy import Guardrails
from autoroll.core.ports import ClusterPort, EventPort, NodePort, QuarantinePort, RegistryPort
from autoroll.core.quarantine import EMPTY, QuarantineBook, condemned
from autoroll.core.scope import FULL, Scope
from autoroll.instruments.metrics import Metrics

log = logging.getLogger(__name__)

#: ``Executed.outcome`` when the leadership check before a deletion failed.
NOT_LEADER = Outcome.NOT_LEADER


@dataclass(frozen=True, slots=True)
class TickReport:
    """Everything one pass saw and did; ``autoroll plan`` renders it as a table."""

    started_at: datetime
    enrolled: tuple[Enrolled, ...] = ()
    resolved: Mapping[TagRef, Digest | Unknown] = field(default_factory=dict)
    decisions: tuple[Decision, ...] = ()
    executed: tuple[Executed, ...] = ()
    abandoned: bool = False  # stop was requested before every workload was decided
    skipped: bool = False  # this replica does not lead: nothing was read or decided
    plan: RollPlan | None = None  # the guardrails' plan (None when the pass ended before it)
    scope: Scope = FULL  # what the pass looked at
    fresh_reads: int = 0  # workloads whose pods were read again before acting
    #: by workload key and tag, which registry and credential source answered (never a
    #: secret): ``autoroll plan`` shows it
    sources: Mapping[str, Mapping[TagRef, str]] = field(default_factory=dict)
    quarantine: QuarantineBook = EMPTY  # the quarantined digests as the pass ended


def _never() -> bool:
    return False


def _unbounded() -> float:
    return math.inf


def _one_term() -> int:
    return 0


def _always() -> bool:
    return True


def _utcnow() -> datetime:
    return datetime.now(UTC)


class Reconciler:
    """Runs passes; one instance per process, so the loop-guard memory is one map.

    ``leading`` gates whole passes (a follower skips them); ``may_act`` is asked again
    before every deletion. With leader election both are ``Elector.may_act``.
    """

    def __init__(
        self,
        *,
        cluster: ClusterPort,
        registry: RegistryPort,
        metrics: Metrics,
        registries: Collection[str],
        dry_run: bool,
        clock: Callable[[], datetime] = _utcnow,
        may_act: Callable[[], bool] = _always,
        leading: Callable[[], bool] = _always,
        events: EventPort | None = None,
        evicting: bool = False,
        guardrails: Guardrails | None = None,
        nodes: NodePort | None = None,
        halted_after: timedelta = timedelta(minutes=10),
        authority: Callable[[], float] = _unbounded,
        term: Callable[[], int] = _one_term,
        lookups_per_namespace: int = 0,
        credentials: PullCredentials | None = None,
        quarantine: QuarantinePort | None = None,
        announcer: Announcer | None = None,
        pinning: bool = False,
        approvals: PlanListener | None = None,
    ) -> None:
        """``credentials``: read each workload's pull secrets for the registries that use
        them (None: every tag asked with the registries' own credentials). ``pinning``: new
        pods are pinned at admission, so ``IfNotPresent`` containers roll too; ``approvals``
        is told each plan before its first deletion, and when a term ends (docs/adr/028)."""
        self._approvals = approvals
        self._registry = registry
        self._reader = PassReader(
            cluster=cluster,
            registry=registry,
            registry_ask=RegistryAsk(
                registry=registry, registries=registries, credentials=credentials, pinning=pinning
            ),
            registries=registries,
            clock=clock,
            pinning=pinning,
            lookups_per_namespace=lookups_per_namespace,
        )
        self._clock = clock
        self._leading = leading
        self._term = term
        executor = Executor(cluster=cluster, dry_run=dry_run, may_act=may_act, authority=authority)
        self._observer = PassObserver(metrics=metrics)
        self._announcer = announcer or Announcer(
            metrics=metrics, events=events, dry_run=dry_run, evicting=evicting
        )
        # The quarantine's record is written only by a controller that deletes.
        self._keeper = QuarantineKeeper(metrics=metrics, store=quarantine, writable=not dry_run)
        self._guardrails = guardrails or Guardrails()
        # Everything below gates deletions and belongs to one leadership term (``_new_term``):
        # the loop guard's sightings and the pods read before each roll's first deletion; the
        # planner's memory of recent deletions and of who is mid-roll (``RollPlanner``).
        self._sightings: dict[TagRef, Sighting] = {}
        self._rolls = RollMemory()
        self._planner = RollPlanner(guardrails=self._guardrails, keeper=self._keeper, clock=clock)
        self._term_seen: int | None = None
        self._decider = PassDecider(
            asker=Asker(registry=registry, nodes=nodes, registries=registries, pinning=pinning),
            rolls=self._rolls,
            observer=self._observer,
            guardrails=self._guardrails,
            halted_after=halted_after,
        )
        self._runner = PlanRunner(
            cluster=cluster,
            executor=executor,
            planner=self._planner,
            rolls=self._rolls,
            observer=self._observer,
            announcer=self._announcer,
            decider=self._decider,
            clock=clock,
        )

    @property
    def sightings(self) -> Mapping[TagRef, Sighting]:
        """The loop-guard memory (read-only view, for tests and debugging)."""
        return dict(self._sightings)

    @property
    def quarantine_book(self) -> QuarantineBook:
        """The quarantine as this term knows it (the pinning view holds on it too)."""
        return self._keeper.book

    def tick(self, stopping: Callable[[], bool] = _never, scope: Scope = FULL) -> TickReport:
        """One pass over ``scope``. Cluster errors propagate (the worker logs and counts them).

        ``stopping`` is polled before each workload is decided and before each deletion:
        on shutdown (or past the pass timeout) the pass ends between them, never inside a
        deletion (which is a single API call anyway). A pass stopped while deciding deletes
        nothing: the guardrails plan over the whole pass, so a part of it is never acted on.
        """
        now = self._clock()
        if not self._leading():
            # Another replica may delete now: what it does will have to be read from the
            # cluster and the registry when this one leads again.
            self._new_term()
            return TickReport(now, skipped=True, scope=scope)
        term = self._term()
        if term != self._term_seen:
            self._new_term()
            self._term_seen = term
        scope = self._pass_scope(scope)
        # A term that cannot tell what is quarantined acts on nothing (this raises).
        self._keeper.refresh(full=scope.is_full)
        enrolled, resolution, self._sightings = self._reader.read(scope, self._sightings)
        resolved = resolution.by_ref
        # The caches as this pass starts, plus every answer it gets (Unknown included).
        state = PassState(
            resolved,
            dict(self._registry.known_children()),
            dict(self._registry.known_content()),
            {},  # this pass's Node reads only
            resolution.by_workload,
        )
        items, halts, abandoned = self._decider.decide_all(
            enrolled, state, self._sightings, now=now, stopping=stopping
        )
        self._quarantine(halts, now=now)
        plan: RollPlan | None = None
        executed: list[Executed] = []
        acted = Acted()
        if not abandoned:
            # The one point where decisions become actions: the guardrails choose which of
            # the decided deletions go now, and in which order (autoroll.core.guardrails); each
            # is then decided again on a fresh read, and planned again, right before it.
            plan = self._planner.plan(items, sightings=self._sightings)
            self._observer.planned(plan)
            if self._approvals is not None:
                # Before the first DELETE: its replacement is admitted on the new approval.
                self._approvals.planned(
                    items, plan, self._sightings, now=self._clock(), whole=scope.is_full
                )
            abandoned = self._runner.run(
                plan,
                items,
                state=state,
                acted=acted,
                executed=executed,
                stopping=stopping,
                scope=scope,
                sightings=self._sightings,
            )
            self._planner.remember_mid_roll(plan, items, scope)
            plan = replace(plan, holds=plan.holds + tuple(acted.holds))
            self._rolls.settle(
                (e.workload.key, acted.decisions.get(e.workload.key, d)) for e, d in items
            )
            self._announcer.passed(
                [(e, acted.decisions.get(e.workload.key, d)) for e, d in items], now=now
            )
            self._keeper.prune(resolved)
            if scope.is_full:
                self._keeper.warn_active()
        self._observer.pass_ended(
            enrolled, scope=scope, fresh_reads=acted.fresh_reads, complete=not abandoned
        )
        if not abandoned:
            self._reader.remember_targets(resolved, state.contents)
        decisions = tuple(acted.decisions.get(e.workload.key, d) for e, d in items)
        return TickReport(
            now,
            enrolled,
            resolved,
            decisions,
            tuple(executed),
            abandoned,
            plan=plan,
            scope=scope,
            fresh_reads=acted.fresh_reads,
            sources=resolution.sources,
            quarantine=self._keeper.book,
        )

    # -- steps ------------------------------------------------------------------------------

    def _new_term(self) -> None:
        """Forget everything that gates a deletion: a term starts from the cluster and the
        registry alone (ARCHITECTURE.md, property 13). Sightings kept from an earlier term
        would guard, forever, pods another leader rolled meanwhile."""
        self._planner.new_term()
        self._sightings = {}
        if self._approvals is not None:
            self._approvals.term_ended()
        self._rolls.clear()
        self._keeper.new_term()
        self._announcer.new_term()

    def _pass_scope(self, scope: Scope) -> Scope:
        """The scope asked for, except on a term's first pass, which is always full."""
        if not self._planner.term_started and not scope.is_full:
            # The budget's evidence and the in-flight count are cluster-wide: a term starts
            # with a full pass, whatever asked for it (``RollPlanner.plan``).
            log.info("first pass of this term: looking at every workload, not only %s", scope)
            return FULL
        return scope

    def _quarantine(self, halts: Sequence[Halted], *, now: datetime) -> None:
        """Quarantine what each halt is evidence against (again every pass: a record that
        lost an entry gets it back while the evidence lasts); tell each new halt once."""
        for item, decision, halt, new in halts:
            found = condemned([(item, decision, halt)], sightings=self._sightings, now=now)
            added = self._keeper.condemn(found)
            if not new:
                continue
            book = self._keeper.book.entries
            active = any(book[e.key].is_active for e in found if e.key in book)
            self._announcer.halted(
                item.workload, halt, found=found, added=added, active=active, now=now
            )
