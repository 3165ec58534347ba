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

Per Deployment, ``decide`` may ask twice before it decides: for the children of the target
index (a pod reporting a platform child), then for the image configs both sides stand for (a
pod reporting another manifest, possibly in another repository). Every request is answered,
``Unknown`` when the registry cannot, so a request is never repeated; the answers are shared
by the pass's later Deployments. At the end of a pass each target's configs are resolved
once, while the registry still holds the manifest (``_remember_targets``).

A pass lists the cluster first, then reads the sighting clock, then asks the registry, and
deletes only after that. So every pod in the listing predates any digest the pass sees for
the first time (the sighting remembers their UIDs), and every replacement of a pod this or a
later pass deletes is created after the sighting (its UID is not remembered, and even
rounded down to a whole second its creationTimestamp is less than a second before it).

Dry-run is "don't execute the plan": ``decide`` returns the same actions either way; this
module alone chooses between executing them and logging them.

Collaborators are injected (cluster, registry, clock), so unit tests drive a full pass with
hand-written fakes; nothing here imports the Kubernetes client or an HTTP library.

With leader election, ``may_act`` (``Elector.may_act``) is asked immediately before every
deletion: a replica whose leadership lapsed mid-pass deletes nothing more and ends the pass
(docs/adr/004-leader-election-and-webhook-handoff.md). With EMIT_EVENTS, each executed roll
is also recorded as a Kubernetes Event on its Deployment; an Event that fails is logged and
counted, never allowed to fail the pass.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Protocol

from autoroll.cluster import (
    REASON_DELETED,
    REASON_DRY_RUN,
    REASON_EVICTED,
    REASON_HALTED,
    DeleteOutcome,
    Enrolled,
    RollEvent,
)
from autoroll.decide import (
    ChildrenRequest,
    ContainerVerdict,
    ContentRequest,
    Decision,
    DeletePod,
    PodState,
    Reason,
    RolloutHalt,
    Sighting,
    Verdict,
    decide,
    listed_uids,
    observe_targets,
    refs_to_resolve,
    rollout_halt,
)
from autoroll.images import TagRef
from autoroll.metrics import Metrics
from autoroll.model import Digest, ImageContent, Unknown

log = logging.getLogger(__name__)


class ClusterPort(Protocol):
    """What a pass needs from Kubernetes (``autoroll.cluster.KubeCluster`` in production)."""

    def snapshot(self) -> Sequence[Enrolled]: ...

    def delete_pod(self, namespace: str, name: str, uid: str) -> DeleteOutcome: ...


class RegistryPort(Protocol):
    """What a pass needs from the registry (``autoroll.registry.RegistryClient``).

    The client caches index children and manifests' image configs by digest (immutable);
    ``known_children`` and ``known_content`` seed each pass's decisions with those caches,
    so a manifest is fetched once, not once per tick.
    """

    def resolve(self, refs: Iterable[TagRef]) -> Mapping[TagRef, Digest | Unknown]: ...

    def known_children(self) -> Mapping[Digest, frozenset[Digest]]: ...

    def fetch_children(
        self, wanted: Iterable[ChildrenRequest]
    ) -> Mapping[Digest, frozenset[Digest] | Unknown]: ...

    def known_content(self) -> Mapping[Digest, ImageContent]: ...

    def fetch_content(
        self, wanted: Iterable[ContentRequest]
    ) -> Mapping[Digest, ImageContent | Unknown]: ...


class EventPort(Protocol):
    """Records a Kubernetes Event (``autoroll.cluster.KubeEvents`` in production)."""

    def emit(self, event: RollEvent) -> None: ...


#: ``Executed.outcome`` when the leadership check before a deletion failed.
NOT_LEADER = "not-leader"
#: ``decide`` asks for an index's children, then for image configs: two fetches at most.
FETCH_ROUNDS = 2
#: Pods whose content cannot be told; each is warned about once, not every pass.
_UNRESOLVED = frozenset({PodState.CONTENT_UNKNOWN, PodState.PLATFORM_UNKNOWN})


@dataclass(frozen=True, slots=True)
class Executed:
    """An action and what became of it: a ``DeleteOutcome`` value, ``dry-run`` or ``error``."""

    action: DeletePod
    outcome: str
    detail: str = ""


@dataclass(frozen=True, slots=True)
class TickReport:
    """Everything one pass saw and did; ``autoroll plan`` renders it as a table."""

    started_at: datetime
    enrolled: tuple[Enrolled, ...] = ()
    resolved: Mapping[TagRef, Digest | Unknown] = field(default_factory=dict)
    decisions: tuple[Decision, ...] = ()
    executed: tuple[Executed, ...] = ()
    abandoned: bool = False  # stop was requested before every Deployment was decided


def _never() -> bool:
    return False


def _always() -> bool:
    return True


def _utcnow() -> datetime:
    return datetime.now(UTC)


class Reconciler:
    """Runs passes; one instance per process, so the loop-guard memory is one map."""

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
        events: EventPort | None = None,
        evicting: bool = False,
        halted_after: timedelta = timedelta(minutes=10),
    ) -> None:
        self._cluster = cluster
        self._halted_after = halted_after
        # (Deployment UID, pod) already announced with an Event: one Event per halt, while
        # the warning line repeats every pass.
        self._halts_announced: set[tuple[str, str]] = set()
        self._may_act = may_act
        self._events = events
        self._evicting = evicting
        self._registry = registry
        self._metrics = metrics
        self._forgejo_host = forgejo_host
        self._dry_run = dry_run
        self._clock = clock
        self._sightings: dict[TagRef, Sighting] = {}
        # (namespace, pod, uid, container, reference) already warned as unresolved.
        self._warned: set[tuple[str, str, str, str, str]] = set()

    @property
    def sightings(self) -> Mapping[TagRef, Sighting]:
        """The loop-guard memory (read-only view, for tests and debugging)."""
        return dict(self._sightings)

    def tick(self, stopping: Callable[[], bool] = _never) -> TickReport:
        """One full pass. Cluster errors propagate (the worker logs and counts them).

        ``stopping`` is polled before each Deployment: on shutdown the pass ends between
        Deployments, never inside a deletion (which is a single API call anyway).
        """
        now = self._clock()
        enrolled = tuple(self._cluster.snapshot())
        deployments = [e.deployment for e in enrolled]
        refs = refs_to_resolve(deployments, forgejo_host=self._forgejo_host)
        # Order matters to the loop guard: listed, then the clock, then the registry. Every
        # pod listed is older than the sighting time read after the listing, which is older
        # than the registry's answer (module docstring).
        listed = listed_uids(
            ((e.deployment, e.pods) for e in enrolled), forgejo_host=self._forgejo_host
        )
        seen_at = self._clock()
        resolved = dict(self._registry.resolve(sorted(refs))) if refs else {}
        self._sightings = observe_targets(self._sightings, resolved, now=seen_at, listed=listed)

        decisions: list[Decision] = []
        executed: list[Executed] = []
        halted: set[tuple[str, str]] = set()
        abandoned = False
        # The caches as this pass starts, plus every answer it gets (Unknown included).
        children: dict[Digest, frozenset[Digest] | Unknown] = dict(self._registry.known_children())
        contents: dict[Digest, ImageContent | Unknown] = dict(self._registry.known_content())
        for item in enrolled:
            if stopping():
                abandoned = True
                log.info("stop requested; leaving the rest of this pass undone")
                break
            decision = self._decide(item, resolved, children, contents)
            decisions.append(decision)
            self._record(decision)
            halt = rollout_halt(
                decision=decision, pods=item.pods, now=now, after=self._halted_after
            )
            if halt is not None:
                halted.add((item.deployment.uid, halt.pod))
                self._report_halt(item, halt)
            # decide() emits at most one action; slicing keeps that true even if it did not.
            for action in decision.actions[:1]:
                # Asked right before the call: the renew deadline may have passed mid-pass.
                if not self._may_act():
                    executed.append(self._refuse(action))
                    abandoned = True
                    break
                done = self._execute(action)
                executed.append(done)
                self._emit(item, done)
            if abandoned:
                break
        self._forget_warnings(enrolled)
        if not abandoned:
            self._remember_targets(resolved, contents)

        self._metrics.rollouts_halted.set(len(halted))
        if not abandoned:
            self._halts_announced &= halted  # a halt that ended may be announced again later
        log.debug(
            "pass done: %d Deployment(s), %d ref(s), %d action(s)",
            len(decisions),
            len(resolved),
            len(executed),
        )
        return TickReport(now, enrolled, resolved, tuple(decisions), tuple(executed), abandoned)

    # -- steps ------------------------------------------------------------------------------

    def _decide(
        self,
        item: Enrolled,
        resolved: Mapping[TagRef, Digest | Unknown],
        children: dict[Digest, frozenset[Digest] | Unknown],
        contents: dict[Digest, ImageContent | Unknown],
    ) -> Decision:
        """Decide, fetching what ``decide`` asks for (children, then content) in between."""

        def run() -> Decision:
            return decide(
                deployment=item.deployment,
                pods=item.pods,
                forgejo_host=self._forgejo_host,
                resolved=resolved,
                sightings=self._sightings,
                children=children,
                contents=contents,
            )

        decision = run()
        for _ in range(FETCH_ROUNDS):
            if not decision.needs_children and not decision.needs_content:
                break
            self._fetch(decision, children, contents)
            decision = run()
        # Still asking after both rounds cannot happen (every request got an answer); if it
        # did, the containers that ask carry no action, so nothing is deleted on a guess.
        return decision

    def _fetch(
        self,
        decision: Decision,
        children: dict[Digest, frozenset[Digest] | Unknown],
        contents: dict[Digest, ImageContent | Unknown],
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

    def _execute(self, action: DeletePod) -> Executed:
        fields = _action_fields(action)
        if self._dry_run:
            self._metrics.deletions.labels(mode="dry").inc()
            log.info(
                "DRY_RUN: would delete stale pod %s/%s (%s)",
                action.namespace,
                action.name,
                action.reason,
                extra={**fields, "event": "delete", "dry_run": True},
            )
            return Executed(action, "dry-run")
        try:
            outcome = self._cluster.delete_pod(action.namespace, action.name, action.uid)
        except Exception as exc:
            # One failed deletion must not stop the other Deployments' decisions.
            log.error(
                "deleting pod %s/%s failed: %s",
                action.namespace,
                action.name,
                exc,
                extra={**fields, "event": "delete-failed"},
            )
            return Executed(action, "error", str(exc))
        if outcome is DeleteOutcome.DELETED:
            self._metrics.deletions.labels(mode="real").inc()
            log.info(
                "deleted stale pod %s/%s (%s)",
                action.namespace,
                action.name,
                action.reason,
                extra={**fields, "event": "delete", "dry_run": False},
            )
        elif outcome is DeleteOutcome.BLOCKED:
            # One line per Deployment per pass at most (one action each): no storm.
            self._metrics.deletions_not_done.labels(reason=outcome.value).inc()
            log.warning(
                "eviction of pod %s/%s refused (a PodDisruptionBudget allows no disruption"
                " now); trying again next pass",
                action.namespace,
                action.name,
                extra={**fields, "event": "delete-noop", "reason": outcome.value},
            )
        else:
            self._metrics.deletions_not_done.labels(reason=outcome.value).inc()
            log.info(
                "pod %s/%s not deleted: %s",
                action.namespace,
                action.name,
                outcome.value,
                extra={**fields, "event": "delete-noop", "reason": outcome.value},
            )
        return Executed(action, outcome.value)

    def _refuse(self, action: DeletePod) -> Executed:
        self._metrics.deletions_not_done.labels(reason=NOT_LEADER).inc()
        log.warning(
            "not deleting pod %s/%s: this replica is no longer the leader; ending the pass",
            action.namespace,
            action.name,
            extra={**_action_fields(action), "event": "delete-noop", "reason": NOT_LEADER},
        )
        return Executed(action, NOT_LEADER)

    def _emit(self, item: Enrolled, done: Executed) -> None:
        """One Event per executed roll; failures are logged and counted, never raised."""
        if self._events is None:
            return
        action = done.action
        if done.outcome == "dry-run":
            reason, verb = REASON_DRY_RUN, "would delete"
        elif done.outcome == DeleteOutcome.DELETED.value:
            reason, verb = (
                (REASON_EVICTED, "evicted")
                if self._evicting
                else (
                    REASON_DELETED,
                    "deleted",
                )
            )
        else:
            return
        event = RollEvent(
            namespace=item.deployment.namespace,
            deployment=item.deployment.name,
            deployment_uid=item.deployment.uid,
            reason=reason,
            message=(
                f"autoroll {verb} stale pod {action.name}: container {action.container}"
                f" image {action.image} runs {action.from_digest}, the registry has"
                f" {action.to_digest}"
            ),
        )
        try:
            self._events.emit(event)
        except Exception as exc:
            self._metrics.events.labels(outcome="error").inc()
            log.warning(
                "could not record an Event on %s: %s",
                item.deployment.key,
                exc,
                extra={"event": "event-failed", "deployment": item.deployment.key},
            )
            return
        self._metrics.events.labels(outcome="created").inc()

    def _report_halt(self, item: Enrolled, halt: RolloutHalt) -> None:
        """A WARNING every pass while halted; one Warning Event per halt (EMIT_EVENTS)."""
        log.warning(
            halt.message(),
            extra={
                "event": "rollout-halted",
                "deployment": halt.deployment,
                "pod": halt.pod,
                "reason": "rollout-halted",
            },
        )
        key = (item.deployment.uid, halt.pod)
        if self._events is None or key in self._halts_announced:
            return
        self._halts_announced.add(key)
        event = RollEvent(
            namespace=item.deployment.namespace,
            deployment=item.deployment.name,
            deployment_uid=item.deployment.uid,
            reason=REASON_HALTED,
            message=f"autoroll: {halt.message()}",
            type="Warning",
        )
        try:
            self._events.emit(event)
        except Exception as exc:
            self._metrics.events.labels(outcome="error").inc()
            log.warning(
                "could not record an Event on %s: %s",
                item.deployment.key,
                exc,
                extra={"event": "event-failed", "deployment": item.deployment.key},
            )
            return
        self._metrics.events.labels(outcome="created").inc()

    def _warn_unresolved(self, decision: Decision) -> None:
        """One warning per pod and reference whose content cannot be told, not one per pass:
        a foreign reference can last as long as the pod (docs/adr/001, point 3)."""
        for verdict in decision.containers:
            if verdict.reason is Reason.TARGET_CONTENT_UNKNOWN:
                continue  # the registry's fault, warned every pass as the verdict itself
            for finding in verdict.pods:
                if finding.state not in _UNRESOLVED or finding.running is None:
                    continue
                reference = finding.running.reference
                key = (decision.namespace, finding.pod, finding.uid, verdict.container, reference)
                if key in self._warned:
                    continue
                self._warned.add(key)
                log.warning(
                    "%s %s: cannot tell what pod %s runs: %s",
                    decision.key,
                    verdict.container,
                    finding.pod,
                    finding.note,
                    extra={
                        **decision_fields(decision, verdict),
                        "event": "content-unknown",
                        "pod": finding.pod,
                        "running_digest": reference,
                        "reason": finding.state.value,
                    },
                )

    def _forget_warnings(self, enrolled: Iterable[Enrolled]) -> None:
        """Keep warned keys only for pods still listed: bounded by the pods enrolled."""
        listed = {(p.namespace, p.name, p.uid) for e in enrolled for p in e.pods}
        self._warned = {k for k in self._warned if (k[0], k[1], k[2]) in listed}

    def _record(self, decision: Decision) -> None:
        """Metrics and one log line per container decision."""
        self._warn_unresolved(decision)
        if decision.loop_guard_hits:
            self._metrics.loop_guard_hits.inc(decision.loop_guard_hits)
        for verdict in decision.containers:
            if verdict.verdict is Verdict.SKIPPED:
                self._metrics.containers_skipped.labels(reason=verdict.reason.value).inc()
            level = logging.WARNING if verdict.reason.is_warning else logging.INFO
            log.log(
                level,
                "%s %s: %s (%s)%s",
                decision.key,
                verdict.container,
                verdict.verdict.value,
                verdict.reason.value,
                f": {verdict.detail}" if verdict.detail else "",
                extra=decision_fields(decision, verdict),
            )


def _digest_text(value: Digest | Unknown | None) -> str:
    if value is None:
        return "-"
    return str(value)


def running_text(verdict: ContainerVerdict) -> str:
    """The digests the compared pods run, or ``-`` when none is known."""
    return ",".join(str(d) for d in verdict.running_digests) or "-"


def decision_fields(decision: Decision, verdict: ContainerVerdict) -> dict[str, object]:
    """The structured fields of a decision's log line: Deployment, pod, image, both digests."""
    pods = verdict.pod or ",".join(f.pod for f in verdict.pods) or "-"
    return {
        "event": "decision",
        "deployment": decision.key,
        "container": verdict.container,
        "pod": pods,
        "image": verdict.image,
        "running_digest": running_text(verdict),
        "registry_digest": _digest_text(verdict.registry_digest),
        "verdict": verdict.verdict.value,
        "reason": verdict.reason.value,
    }


def _action_fields(action: DeletePod) -> dict[str, object]:
    return {
        "deployment": f"{action.namespace}/{action.deployment}",
        "container": action.container,
        "pod": action.name,
        "image": action.image,
        "running_digest": str(action.from_digest),
        "registry_digest": str(action.to_digest),
    }
