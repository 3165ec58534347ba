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
``autoroll.controller.asking``). At the end of a pass each target's configs are resolved once, while
the registry still holds the manifest (``_remember_targets``).

A pass lists the cluster first, then reads the sighting clock, then asks the registry, and
deletes only after that. So every pod in the listing predates any digest the pass sees for
the first time (the sighting remembers their UIDs), and every replacement of a pod this or a
later pass deletes is created after the sighting (its UID is not remembered, and even
rounded down to a whole second its creationTimestamp is less than a second before it).

A pass has a scope (``autoroll.core.scope``): full (the poll timer, the first pass) or targeted
at some tags (a package webhook, a workload in the middle of a roll). The cluster port finds
the work — from a watched cache when it has one — and answers a targeted scope with every
enrolled workload using a repository it names; the pass keeps those using a named tag and
asks the registry about the named tags only. So every tag a pass resolves was listed with
every workload that uses it, and the sighting it records is as exact as a full pass's; a
targeted pass leaves every other tag's sighting alone (``observe_targets(partial=True)``).

Every workload in scope is decided first; then the guardrails (``autoroll.core.guardrails``)
choose which of the decided deletions go now and in which order (the cluster-wide budget,
pauses, windows, the min-age), over a targeted pass exactly as over a full one, and only
those are carried out. The shell keeps the budget's one memory, when pods were deleted in
the last period: its own deletions, and, taken as it starts to lead, the creation times of
the enrolled pods created in the period before, which stand for a previous leader's
deletions (a restart forgets the first; the second is in the cluster). That evidence is
taken from every enrolled workload, never from a targeted pass's few: a term whose first
pass is targeted reads a full snapshot for it (from the watched cache, when there is one).

Finding work is not deciding on it. For each deletion the plan lets go, in the plan's order,
the pass reads that one workload's pods again (and, for a kind whose status counts, the
object), fresh from the API (``ClusterPort.read_now``), decides once more on that read, and
runs the guardrails again over that one fresh decision (a window may have closed, the
deletion may now be another pod's, the budget has been spent by the deletions before it);
only what that says goes (ARCHITECTURE.md, property 8). Whatever found the work — a cache
lagging behind, or a listing made seconds ago in a long pass — settledness, staleness, the
loop guard and the guardrails are judged on what the API says right before the DELETE.
Held deletions are never read again: a pass reads at most as many workloads as it may
delete. If a read fails, nothing is deleted and the pass ends (every other deletion would
wait on the same API).

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
from autoroll.controller.executor import Executed, Executor, Outcome
from autoroll.controller.lookups import RegistryAsk
from autoroll.controller.observer import PassObserver
from autoroll.controller.quarantines import QuarantineKeeper
from autoroll.controller.rolls import RollMemory
from autoroll.core.decide import (
    ContentRequest,
    Decision,
    Reason,
    Sighting,
    listed_uids,
    observe_targets,
    refs_to_resolve,
)
from autoroll.core.guardrails import Deletion, Hold, RollPlan, plan_rolls, pods_started
from autoroll.core.halt import RolloutHalt, rollout_halt
from autoroll.core.images import TagRef
from autoroll.core.lookups import Resolution
from autoroll.core.model import Digest, Enrolled, ImageContent, Unknown
from autoroll.core.policy import Guardrails, workload_policy
from autoroll.core.ports import ClusterPort, EventPort, NodePort, QuarantinePort, RegistryPort
from autoroll.core.quarantine import EMPTY, QuarantineBook, condemned
from autoroll.core.scope import FULL, Scope
from autoroll.core.tenancy import fair_order
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


@dataclass(slots=True)
class _Acted:
    """What the execution step learnt: fresh decisions by workload key, the holds the
    guardrails put on them, and how many workloads were read again."""

    decisions: dict[str, Decision] = field(default_factory=dict)
    holds: list[Hold] = field(default_factory=list)
    fresh_reads: int = 0


def _judged_whole(items: Sequence[tuple[Enrolled, Decision]]) -> set[str]:
    """The workloads whose every container this pass judged: a container on a tag outside
    a targeted pass's scope is not, so whether its roll is under way is not known here."""
    return {
        e.workload.key
        for e, d in items
        if not any(v.reason is Reason.NOT_IN_SCOPE for v in d.containers)
    }


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
        self._cluster = cluster
        self._pinning = pinning
        self._approvals = approvals
        self._asker = Asker(registry=registry, nodes=nodes, registries=registries, pinning=pinning)
        self._halted_after = halted_after
        self._registry = registry
        self._registries = frozenset(registries)
        self._registry_ask = RegistryAsk(
            registry=registry, registries=registries, credentials=credentials, pinning=pinning
        )
        self._clock = clock
        self._leading = leading
        self._term = term
        self._lookups_per_namespace = lookups_per_namespace  # 0: no share (autoroll.core.tenancy)
        self._executor = Executor(
            cluster=cluster, dry_run=dry_run, may_act=may_act, authority=authority
        )
        self._observer = PassObserver(metrics=metrics)
        self._announcer = announcer or Announcer(
            metrics=metrics, events=events, dry_run=dry_run, evicting=evicting
        )
        # The quarantine's record is written only by a controller that deletes.
        self._keeper = QuarantineKeeper(metrics=metrics, store=quarantine, writable=not dry_run)
        self._guardrails = guardrails or Guardrails()
        # Everything below gates deletions and belongs to one leadership term (``_new_term``):
        # the loop guard's sightings and the pods read before each roll's first deletion;
        # when this process deleted (or, in dry-run, would have deleted) a pod, and the
        # evidence of a previous leader's deletions taken as its term began: the budget's
        # count (autoroll.core.guardrails), pruned to one period; the workloads mid-roll as last
        # decided (or with a pod deleted since), by key: the in-flight slots a targeted
        # pass cannot see (``_plan``).
        self._sightings: dict[TagRef, Sighting] = {}
        self._rolls = RollMemory()
        self._deleted_at: list[Deletion] = []
        self._mid_roll: set[str] = set()
        self._term_started = False
        self._term_seen: int | None = None

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
        enrolled, resolution = self._read(scope)
        resolved = resolution.by_ref
        # The caches as this pass starts, plus every answer it gets (Unknown included).
        state = PassState(
            resolved,
            dict(self._registry.known_children()),
            dict(self._registry.known_content()),
            {},  # this pass's Node reads only
            resolution.by_workload,
        )
        items, halts, abandoned = self._decide_all(enrolled, state, now=now, stopping=stopping)
        self._quarantine(halts, now=now)
        plan: RollPlan | None = None
        executed: list[Executed] = []
        acted = _Acted()
        if not abandoned:
            # The one point where decisions become actions: the guardrails choose which of
            # the decided deletions go now, and in which order (autoroll.core.guardrails); each
            # is then decided again on a fresh read, and planned again, right before it.
            plan = self._plan(items)
            self._observer.planned(plan)
            if self._approvals is not None:
                # Before the first DELETE: its replacement is admitted on the new approval.
                self._approvals.planned(
                    items, plan, self._sightings, now=self._clock(), whole=scope.is_full
                )
            abandoned = self._execute(
                plan,
                items,
                state=state,
                acted=acted,
                executed=executed,
                stopping=stopping,
                scope=scope,
            )
            self._remember_mid_roll(plan, items, scope)
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
            self._remember_targets(resolved, state.contents)
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
        self._term_started = False
        self._sightings = {}
        if self._approvals is not None:
            self._approvals.term_ended()
        self._rolls.clear()
        self._deleted_at = []
        self._mid_roll = set()
        self._keeper.new_term()
        self._announcer.new_term()

    def _pass_scope(self, scope: Scope) -> Scope:
        """The scope asked for, except on a term's first pass, which is always full."""
        if not self._term_started and not scope.is_full:
            # The budget's evidence and the in-flight count are cluster-wide: a term starts
            # with a full pass, whatever asked for it (``_plan``).
            log.info("first pass of this term: looking at every workload, not only %s", scope)
            return FULL
        return scope

    def _decide_all(
        self,
        enrolled: Sequence[Enrolled],
        state: PassState,
        *,
        now: datetime,
        stopping: Callable[[], bool],
    ) -> tuple[
        list[tuple[Enrolled, Decision]], list[tuple[Enrolled, Decision, RolloutHalt, bool]], bool
    ]:
        """Decide every workload in turn, saying loudly which rollouts are halted (each with
        whether it is new); True with them if a stop was requested before every one was
        decided."""
        items: list[tuple[Enrolled, Decision]] = []
        halts: list[tuple[Enrolled, Decision, RolloutHalt, bool]] = []
        for item in enrolled:
            if stopping():
                log.info("stop requested; leaving the rest of this pass undone")
                return items, halts, True
            decision = self._ask(item, state, now=now)
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

    def _quarantine(
        self, halts: Sequence[tuple[Enrolled, Decision, RolloutHalt, bool]], *, now: datetime
    ) -> None:
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

    def _plan(self, items: Sequence[tuple[Enrolled, Decision]]) -> RollPlan:
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
            sightings=self._sightings,
            guardrails=self._guardrails,
            deleted_at=self._deleted_at,
            now=now,
            mid_roll_elsewhere=self._mid_roll - _judged_whole(items),
            quarantine=self._keeper.book,
        )

    def _remember_mid_roll(
        self, plan: RollPlan, items: Sequence[tuple[Enrolled, Decision]], scope: Scope
    ) -> None:
        """Who holds an in-flight slot, for the targeted passes to come: a full pass's plan
        says it for everyone; a targeted one only for its own workloads. A workload a pod
        was deleted from now is mid-roll whatever it was before."""
        here = {e.workload.key for e, _ in items}
        kept = set() if scope.is_full else self._mid_roll - _judged_whole(items)
        started = {a.workload_key for a in plan.go}
        self._mid_roll = kept | (set(plan.budget.mid_roll) & here) | started

    def _execute(
        self,
        plan: RollPlan,
        items: Sequence[tuple[Enrolled, Decision]],
        *,
        state: PassState,
        acted: _Acted,
        executed: list[Executed],
        stopping: Callable[[], bool],
        scope: Scope,
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
            fresh, now_decision, failed = self._decide_fresh(item, state, found=decision)
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
            again = self._replan(fresh, now_decision, others)
            for hold in again.holds:
                acted.holds.append(hold)
                self._observer.held(hold)
            # decide() emits at most one action, and a plan of one workload one go at most.
            for go in again.go[:1]:
                done = self._executor.execute(go)
                executed.append(done)
                if done.outcome.spends_budget:
                    self._deleted_at.append(Deletion(self._clock(), go.namespace))
                if done.outcome in (Outcome.DELETED, Outcome.ERROR):
                    # Sent (an error may have reached the API): its replacement is ours.
                    self._rolls.deleting(fresh)
                self._observer.executed(fresh.workload, done)
                self._announcer.executed(
                    fresh,
                    now_decision,
                    done,
                    scope=scope,
                    sightings=self._sightings,
                    now=self._clock(),
                )
                if done.outcome.ends_pass:
                    return True
        return False

    def _replan(
        self,
        item: Enrolled,
        decision: Decision,
        others: Sequence[tuple[Enrolled, Decision]],
    ) -> RollPlan:
        """The guardrails over one freshly read workload, at this moment, with the deletions
        made so far (this pass's included) counted against the budget. Its in-flight slot
        was granted by the pass's plan; ``others`` (the rest of the pass) order the roll
        across workloads (waves, a digest proving itself first)."""
        now = self._clock()
        self._deleted_at = [d for d in self._deleted_at if d.at > now - self._guardrails.period]
        return plan_rolls(
            items=[(item, decision)],
            sightings=self._sightings,
            guardrails=self._guardrails,
            deleted_at=self._deleted_at,
            now=now,
            quarantine=self._keeper.book,
            others=others,
        )

    def _read(self, scope: Scope) -> tuple[tuple[Enrolled, ...], Resolution]:
        """The listing, then the sighting clock, then the registry (module docstring)."""
        enrolled = tuple(self._in_scope(self._cluster.snapshot(scope), scope))
        uses: dict[str, set[TagRef]] = {}
        for item in enrolled:
            for ref in self._refs(item):
                if scope.covers(ref):
                    uses.setdefault(item.workload.namespace, set()).add(ref)
        # In turns across namespaces, each within its share (autoroll.core.tenancy).
        order, unasked = fair_order(uses, per_namespace=self._lookups_per_namespace)
        # Order matters to the loop guard: every pod listed is older than the sighting time
        # read after the listing, which is older than the registry's answer.
        listed = listed_uids(
            ((e.workload, e.pods) for e in enrolled),
            registries=self._registries,
            pinning=self._pinning,
        )
        seen_at = self._clock()
        # Each tag asked with the credentials its workloads' pods pull with (pull secrets).
        resolution = self._registry_ask.ask(enrolled, scope=scope, order=order, unasked=unasked)
        self._sightings = observe_targets(
            self._sightings,
            resolution.by_ref,
            now=seen_at,
            listed=listed,
            partial=not scope.is_full,
        )
        return enrolled, resolution

    def _in_scope(self, listing: Sequence[Enrolled], scope: Scope) -> list[Enrolled]:
        """The workloads of ``listing`` that use a tag of ``scope`` (all, for a full one)."""
        if scope.is_full:
            return list(listing)
        return [item for item in listing if any(scope.covers(ref) for ref in self._refs(item))]

    def _refs(self, item: Enrolled) -> set[TagRef]:
        return refs_to_resolve([item.workload], registries=self._registries, pinning=self._pinning)

    def _ask(self, item: Enrolled, state: PassState, *, now: datetime) -> Decision:
        """``decide`` one workload with this term's memory (sightings, its roll's start, the
        pods its roll saw Ready) and its health window (ROLL_HEALTHY_SECONDS or its
        annotation)."""
        key = item.workload.key
        policy = workload_policy(dict(item.workload.annotations), defaults=self._guardrails)
        health = replace(policy.health_window, seen_ready=self._rolls.ready_seen(key))
        return self._asker.decide(
            item,
            state,
            self._sightings,
            now=now,
            rolled_from=self._rolls.rolled_from(key),
            health=health,
        )

    def _decide_fresh(
        self, item: Enrolled, state: PassState, *, found: Decision
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
        decision = self._ask(fresh, replace(state, nodes={}), now=self._clock())
        self._rolls.saw(fresh)
        return fresh, decision, None

    def _remember_targets(
        self,
        resolved: Mapping[TagRef, Digest | Unknown],
        contents: Mapping[Digest, ImageContent | Unknown],
    ) -> None:
        """Resolve each target's image configs while it is still the target.

        Gitea (and Forgejo, which forked its registry) drops a tag's previous manifest when
        the tag is pushed again: once the tag has moved, the pods still running the old
        build name a manifest the registry answers 404 for, and their content is known only
        if it was fetched before (the client keeps it by digest, in memory). So at the end
        of a pass, with what is left of its registry budget, every target not yet resolved
        is: once per target digest; a failure is simply asked again next pass.
        """
        wanted = {
            ContentRequest(ref.host, ref.repository, digest)
            for ref, digest in resolved.items()
            if isinstance(digest, Digest) and digest not in contents  # not asked this pass
        }
        if not wanted:
            return
        try:
            self._registry.fetch_content(wanted)
        except Exception:
            # A best-effort fetch for later passes: whatever raised here is told, never the
            # end of a pass that has already acted (docs/adr/020).
            log.exception("resolving the targets' image configs for later passes raised")
