"""One reconcile pass: snapshot → resolve → decide → act, then count and log every decision.

This is the imperative shell around ``autoroll.decide``. It owns the only state autoroll
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
pass's later workloads (Node answers by this pass only: readiness changes). At the end of a
pass each target's configs are resolved once, while the registry still holds the manifest
(``_remember_targets``).

A pass lists the cluster first, then reads the sighting clock, then asks the registry, and
deletes only after that. So every pod in the listing predates any digest the pass sees for
the first time (the sighting remembers their UIDs), and every replacement of a pod this or a
later pass deletes is created after the sighting (its UID is not remembered, and even
rounded down to a whole second its creationTimestamp is less than a second before it).

A pass has a scope (``autoroll.scope``): full (the poll timer, the first pass) or targeted
at some tags (a package webhook, a workload in the middle of a roll). The cluster port finds
the work — from a watched cache when it has one — and answers a targeted scope with every
enrolled workload using a repository it names; the pass keeps those using a named tag and
asks the registry about the named tags only. So every tag a pass resolves was listed with
every workload that uses it, and the sighting it records is as exact as a full pass's; a
targeted pass leaves every other tag's sighting alone (``observe_targets(partial=True)``).

Finding work is not deciding on it. Before a deletion the pass reads that one workload's
pods again (and, for a kind whose status counts, the object), fresh from the API
(``ClusterPort.read_now``), and decides once more on that read; only that decision's
action is carried out (ARCHITECTURE.md, property 8). Whatever found the work — a cache
lagging behind, or a listing made seconds ago in a long pass — settledness, staleness and
the loop guard are judged on what the API says right before the DELETE. If that read
fails, nothing is deleted and the pass ends (every other deletion would wait on the same
API).

The pass only orders the steps. Carrying out a deletion (or, in dry-run, not; and not at
all once leadership lapsed) is the ``Executor``'s (``autoroll.executor``), with a typed
``Outcome``; metrics, log lines and Events about decisions and actions are the
``PassObserver``'s (``autoroll.observer``), and so is saying loudly that a rollout is
halted (``autoroll.halt`` decides when: stale pods have waited ``halted_after`` behind a pod
that is not Ready). A replica that does not lead (``leading``)
skips the whole pass and reports it as ``skipped``.

Collaborators are injected (cluster, registry, clock), so unit tests drive a full pass with
hand-written fakes; nothing here imports the Kubernetes client or an HTTP library (the
import contracts in pyproject.toml enforce it).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta

from autoroll.decide import (
    ContentRequest,
    Decision,
    Sighting,
    decide,
    listed_uids,
    observe_targets,
    refs_to_resolve,
)
from autoroll.executor import Executed, Executor, Outcome
from autoroll.halt import rollout_halt
from autoroll.images import TagRef
from autoroll.metrics import Metrics
from autoroll.model import Digest, Enrolled, ImageContent, NodeView, Unknown
from autoroll.observer import PassObserver
from autoroll.ports import ClusterPort, EventPort, NodePort, RegistryPort
from autoroll.scope import FULL, Scope

log = logging.getLogger(__name__)

#: ``Executed.outcome`` when the leadership check before a deletion failed.
NOT_LEADER = Outcome.NOT_LEADER
#: ``decide`` asks for an index's children, then image configs, then Nodes: three at most.
FETCH_ROUNDS = 3

Children = dict[Digest, frozenset[Digest] | Unknown]
Contents = dict[Digest, ImageContent | Unknown]
Nodes = dict[str, NodeView | Unknown]


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
    scope: Scope = FULL  # what the pass looked at
    fresh_reads: int = 0  # workloads whose pods were read again before acting


def _never() -> bool:
    return False


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
        forgejo_host: str,
        dry_run: bool,
        clock: Callable[[], datetime] = _utcnow,
        may_act: Callable[[], bool] = _always,
        leading: Callable[[], bool] = _always,
        events: EventPort | None = None,
        evicting: bool = False,
        nodes: NodePort | None = None,
        halted_after: timedelta = timedelta(minutes=10),
    ) -> None:
        self._cluster = cluster
        self._nodes = nodes
        self._halted_after = halted_after
        self._registry = registry
        self._forgejo_host = forgejo_host
        self._clock = clock
        self._leading = leading
        self._executor = Executor(cluster=cluster, dry_run=dry_run, may_act=may_act)
        self._observer = PassObserver(metrics=metrics, events=events, evicting=evicting)
        self._sightings: dict[TagRef, Sighting] = {}

    @property
    def sightings(self) -> Mapping[TagRef, Sighting]:
        """The loop-guard memory (read-only view, for tests and debugging)."""
        return dict(self._sightings)

    def tick(self, stopping: Callable[[], bool] = _never, scope: Scope = FULL) -> TickReport:
        """One pass over ``scope``. Cluster errors propagate (the worker logs and counts them).

        ``stopping`` is polled before each workload: on shutdown (or past the pass timeout)
        the pass ends between workloads, never inside a deletion (which is a single API call
        anyway).
        """
        now = self._clock()
        if not self._leading():
            return TickReport(now, skipped=True, scope=scope)
        enrolled, resolved = self._read(scope)
        # The caches as this pass starts, plus every answer it gets (Unknown included).
        children: Children = dict(self._registry.known_children())
        contents: Contents = dict(self._registry.known_content())
        nodes: Nodes = {}  # this pass's Node reads only
        decisions: list[Decision] = []
        executed: list[Executed] = []
        abandoned = False
        fresh_reads = 0
        for listed in enrolled:
            item = listed
            if stopping():
                abandoned = True
                log.info("stop requested; leaving the rest of this pass undone")
                break
            decision = self._decide(item, resolved, children, contents, nodes)
            failed: Executed | None = None
            if decision.actions:
                # Found on what the snapshot said; acted on only what the API says now.
                fresh_reads += 1
                item, decision, failed = self._decide_fresh(
                    item, resolved, children, contents, nodes, found=decision
                )
            decisions.append(decision)
            self._observer.decided(decision)
            halt = rollout_halt(
                decision=decision, pods=item.pods, now=now, after=self._halted_after
            )
            if halt is not None:
                self._observer.halted(item.workload, halt)
            # decide() emits at most one action; slicing keeps that true even if it did not.
            for action in decision.actions[:1]:
                done = self._executor.execute(action)
                executed.append(done)
                self._observer.executed(item.workload, done)
                abandoned = done.outcome.ends_pass
            if failed is not None:
                executed.append(failed)
                self._observer.executed(item.workload, failed)
                abandoned = True
            if abandoned:
                break
        self._observer.pass_ended(
            enrolled, scope=scope, fresh_reads=fresh_reads, complete=not abandoned
        )
        if not abandoned:
            self._remember_targets(resolved, contents)
        return TickReport(
            now,
            enrolled,
            resolved,
            tuple(decisions),
            tuple(executed),
            abandoned,
            scope=scope,
            fresh_reads=fresh_reads,
        )

    # -- steps ------------------------------------------------------------------------------

    def _read(self, scope: Scope) -> tuple[tuple[Enrolled, ...], dict[TagRef, Digest | Unknown]]:
        """The listing, then the sighting clock, then the registry (module docstring)."""
        enrolled = tuple(self._in_scope(self._cluster.snapshot(scope), scope))
        refs = {
            ref
            for ref in refs_to_resolve(
                (e.workload for e in enrolled), forgejo_host=self._forgejo_host
            )
            if scope.covers(ref)
        }
        # Order matters to the loop guard: every pod listed is older than the sighting time
        # read after the listing, which is older than the registry's answer.
        listed = listed_uids(
            ((e.workload, e.pods) for e in enrolled), forgejo_host=self._forgejo_host
        )
        seen_at = self._clock()
        resolved = dict(self._registry.resolve(sorted(refs))) if refs else {}
        self._sightings = observe_targets(
            self._sightings, resolved, now=seen_at, listed=listed, partial=not scope.is_full
        )
        return enrolled, resolved

    def _in_scope(self, listing: Sequence[Enrolled], scope: Scope) -> list[Enrolled]:
        """The workloads of ``listing`` that use a tag of ``scope`` (all, for a full one)."""
        if scope.is_full:
            return list(listing)
        return [
            item
            for item in listing
            if any(
                scope.covers(ref)
                for ref in refs_to_resolve([item.workload], forgejo_host=self._forgejo_host)
            )
        ]

    def _decide_fresh(
        self,
        item: Enrolled,
        resolved: Mapping[TagRef, Digest | Unknown],
        children: Children,
        contents: Contents,
        nodes: Nodes,
        *,
        found: Decision,
    ) -> tuple[Enrolled, Decision, Executed | None]:
        """Read the workload again and decide on that read (module docstring).

        A failed read deletes nothing: the decision found is kept without its action, and
        the failure is reported as that action's outcome (which ends the pass).
        """
        try:
            fresh = self._cluster.read_now(item.workload)
        except Exception as exc:  # reported as the action's outcome by the observer
            failed = Executed(found.actions[0], Outcome.READ_FAILED, str(exc))
            return item, replace(found, actions=()), failed
        return fresh, self._decide(fresh, resolved, children, contents, nodes), None

    def _decide(
        self,
        item: Enrolled,
        resolved: Mapping[TagRef, Digest | Unknown],
        children: Children,
        contents: Contents,
        nodes: Nodes,
    ) -> Decision:
        """Decide, fetching what ``decide`` asks for (children, content, Nodes) in between."""

        def run() -> Decision:
            return decide(
                workload=item.workload,
                pods=item.pods,
                forgejo_host=self._forgejo_host,
                resolved=resolved,
                sightings=self._sightings,
                children=children,
                contents=contents,
                nodes=nodes,
            )

        decision = run()
        for _ in range(FETCH_ROUNDS):
            if not decision.needs_anything:
                break
            self._fetch(decision, children, contents)
            self._read_nodes(decision, nodes)
            decision = run()
        # Still asking after both rounds cannot happen (every request got an answer); if it
        # did, the containers that ask carry no action, so nothing is deleted on a guess.
        return decision

    def _fetch(
        self,
        decision: Decision,
        children: Children,
        contents: Contents,
    ) -> None:
        """Only on a mismatch: GET what ``decide`` asked for. Every request gets an answer
        (Unknown if the client gave none), so the next ``decide`` cannot ask it again."""
        if decision.needs_children:
            found = self._registry.fetch_children(decision.needs_children)
            for request in decision.needs_children:
                children[request.digest] = found.get(
                    request.digest, Unknown("not-fetched", "the registry client gave no answer")
                )
        if decision.needs_content:
            resolved = self._registry.fetch_content(decision.needs_content)
            for wanted in decision.needs_content:
                contents[wanted.digest] = resolved.get(
                    wanted.digest, Unknown("not-fetched", "the registry client gave no answer")
                )

    def _read_nodes(self, decision: Decision, nodes: Nodes) -> None:
        """Read each Node a DaemonSet decision asked for; one that cannot be read is Unknown
        (its pod is then not deleted), and the error says what to fix."""
        for request in sorted(decision.needs_nodes, key=lambda r: r.name):
            if self._nodes is None:
                nodes[request.name] = Unknown("no-node-reader", "this pass cannot read Nodes")
                continue
            try:
                nodes[request.name] = self._nodes.node(request.name)
            except Exception as exc:
                nodes[request.name] = Unknown("node-unreadable", str(exc))

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
        if wanted:
            self._registry.fetch_content(wanted)
