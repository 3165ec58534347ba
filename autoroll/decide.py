"""The pure core: given what the cluster and the registry say right now, what should happen?

API for the shell (stable; extended, never renamed)
---------------------------------------------------
1. ``refs = refs_to_resolve(deployments, forgejo_host=cfg.forgejo_host)`` -> ``set[TagRef]``.
2. ``resolved = registry.resolve(refs)`` -> ``dict[TagRef, Digest | Unknown]`` (one HEAD each).
3. ``sightings = observe_targets(sightings, resolved, now=now, listed=listed)``: the loop-guard
   memory, a plain ``dict[TagRef, Sighting]`` the shell keeps in memory between ticks (nothing
   on disk). ``listed = listed_uids(snapshot, forgejo_host=...)`` names, per ref, the pods the
   shell listed *before* step 2 asked the registry, and ``now`` is read after that listing:
   both are what lets a first sighting remember which pods are surely older than it.
4. Per Deployment::

       decision = decide(deployment=d, pods=pods, forgejo_host=..., resolved=resolved,
                         sightings=sightings, children=children_cache)

   If ``decision.needs_children`` is not empty, fetch each ``ChildrenRequest`` (GET the index
   by digest; cache forever, digests are immutable), put ``frozenset[Digest] | Unknown`` into
   ``children_cache[request.digest]`` and call ``decide`` again with the same inputs.
5. ``decision.actions`` is a tuple of at most one ``DeletePod``; executing it is the shell's
   job, and dry-run means "log it, don't execute it". ``decision.containers`` holds one
   ``ContainerVerdict`` per template container (verdict, reason, detail, both digests,
   per-pod findings) for logs, metrics and ``autoroll plan``.

Safety properties enforced here (see docs/adr/001-cluster-is-the-state.md):

- a pod is stale only if both its digest and the registry's are known, they differ, and the
  pod's digest is not a child of the registry's index;
- at most one deletion per Deployment per call, and only while the Deployment is settled;
- a pod created after its target digest was first seen is never deleted (loop guard): a pod
  counts as older only if the sighting's own pass listed it, or if its creationTimestamp is
  before the sighting by at least the timestamp's one-second resolution.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum

from autoroll.images import (
    ImageRef,
    ImageRefError,
    TagRef,
    host_matches,
    parse_image,
    parse_image_id,
)
from autoroll.model import PULL_ALWAYS, ContainerView, DeploymentView, Digest, PodView, Unknown

__all__ = [
    "ChildrenRequest",
    "ContainerVerdict",
    "Decision",
    "DeletePod",
    "PodFinding",
    "PodState",
    "Reason",
    "Selection",
    "SettledReason",
    "Settledness",
    "Sighting",
    "Verdict",
    "decide",
    "is_settled",
    "listed_uids",
    "observe_targets",
    "refs_to_resolve",
    "select_container",
]

#: The API server stamps ``creationTimestamp`` in whole seconds (RFC 3339, no fraction). Only
#: pods the sighting did not list itself are judged by their timestamp, rounded the safe way.
CREATION_TIMESTAMP_RESOLUTION = timedelta(seconds=1)


# --------------------------------------------------------------------------------------------
# Result types


class Verdict(StrEnum):
    """What the core concluded for one container of one Deployment."""

    CURRENT = "current"  # every compared pod runs the registry's digest
    STALE = "stale"  # a stale pod is deleted this tick (an action is emitted)
    WAITING = "waiting"  # stale pods exist but may not be deleted this tick
    SKIPPED = "skipped"  # not rolled: ignored image, or something is unknown
    LOOP_GUARD = "loop-guard"  # mismatch only on pods created after the target was first seen
    NEEDS_CHILDREN = "needs-children"  # mismatch; the index's child digests must be fetched


class Reason(StrEnum):
    """Why a verdict was reached. Stable strings: metrics and logs use them as labels."""

    UP_TO_DATE = "up-to-date"
    STALE_POD = "stale-pod"
    INVALID_IMAGE = "invalid-image"
    OTHER_HOST = "other-host"
    DIGEST_PINNED = "digest-pinned"
    PULL_POLICY_NOT_ALWAYS = "pull-policy-not-always"
    REGISTRY_UNKNOWN = "registry-unknown"
    CHILDREN_UNKNOWN = "children-unknown"
    SIGHTING_MISSING = "sighting-missing"
    NO_COMPARABLE_POD = "no-comparable-pod"
    NOT_SETTLED = "not-settled"
    ONE_PER_TICK = "one-deletion-per-tick"
    CREATED_AFTER_TARGET = "created-after-target"
    CHILDREN_NEEDED = "children-needed"

    @property
    def is_warning(self) -> bool:
        """Should the shell log this loudly (every tick)? Yes for what an operator must fix or
        know: a pull policy that defeats rolling, the loop guard, and a registry that cannot
        be asked (offline, refusing the token, answering garbage), which silently stops
        rolling until it is fixed."""
        return self in {
            Reason.PULL_POLICY_NOT_ALWAYS,
            Reason.CREATED_AFTER_TARGET,
            Reason.REGISTRY_UNKNOWN,
            Reason.CHILDREN_UNKNOWN,
        }


class PodState(StrEnum):
    """How one pod compares for one container."""

    CURRENT = "current"  # digest equals the registry's digest
    CURRENT_CHILD = "current-child"  # digest is a child of the registry's index
    STALE = "stale"  # known and different, and not a child
    LOOP_GUARD = "loop-guard"  # would be stale, but created after the target was first seen
    MISMATCH = "mismatch"  # known and different; children not known yet
    OLD_TEMPLATE = "old-template"  # pod spec image string differs from the template's
    NO_DIGEST = "no-digest"  # imageID missing, a config ID, or malformed
    TERMINATING = "terminating"  # deletionTimestamp set


class SettledReason(StrEnum):
    SETTLED = "settled"
    POD_TERMINATING = "pod-terminating"
    POD_NOT_READY = "pod-not-ready"
    TOO_FEW_READY = "too-few-ready"


@dataclass(frozen=True, slots=True)
class Settledness:
    """Whether a Deployment may lose a pod now, and why not."""

    reason: SettledReason
    detail: str = ""

    @property
    def is_settled(self) -> bool:
        return self.reason is SettledReason.SETTLED


@dataclass(frozen=True, slots=True)
class Sighting:
    """When the shell first saw ``digest`` as the registry's answer for a ref (loop guard).

    ``older_uids`` are the UIDs of the pods (of Deployments using the ref) that the sighting's
    own pass had listed before it asked the registry: each existed before the sighting,
    whatever its whole-second ``creationTimestamp`` says. Fixed at the sighting and never
    extended, so a replacement created later can never be in it.
    """

    digest: Digest
    first_seen_at: datetime
    older_uids: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True)
class ChildrenRequest:
    """The shell must GET this index by digest and report its child manifest digests."""

    ref: TagRef
    digest: Digest


@dataclass(frozen=True, slots=True)
class DeletePod:
    """The one write autoroll performs. ``uid`` lets the shell delete with a precondition."""

    namespace: str
    name: str
    uid: str
    reason: str
    image: str
    from_digest: Digest
    to_digest: Digest
    deployment: str = ""
    container: str = ""


@dataclass(frozen=True, slots=True)
class PodFinding:
    """One pod's comparison for one container."""

    pod: str
    uid: str
    state: PodState
    digest: Digest | Unknown | None = None  # None: not inspected (old template, terminating)


@dataclass(frozen=True, slots=True)
class ContainerVerdict:
    """The answer for one template container: what the plan table and the log line show."""

    container: str
    image: str
    verdict: Verdict
    reason: Reason
    detail: str = ""
    ref: TagRef | None = None
    registry_digest: Digest | Unknown | None = None
    pods: tuple[PodFinding, ...] = ()
    pod: str | None = None  # the pod deleted (STALE) or next in line (WAITING)

    @property
    def running_digests(self) -> tuple[Digest, ...]:
        """Distinct known digests the compared pods run, sorted."""
        return tuple(sorted({f.digest for f in self.pods if isinstance(f.digest, Digest)}))

    @property
    def loop_guard_hits(self) -> int:
        return sum(1 for f in self.pods if f.state is PodState.LOOP_GUARD)


@dataclass(frozen=True, slots=True)
class Decision:
    """Everything decided for one Deployment in one tick."""

    namespace: str
    name: str
    settledness: Settledness
    containers: tuple[ContainerVerdict, ...]
    actions: tuple[DeletePod, ...] = ()
    needs_children: frozenset[ChildrenRequest] = frozenset()

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def loop_guard_hits(self) -> int:
        return sum(c.loop_guard_hits for c in self.containers)


# --------------------------------------------------------------------------------------------
# Which containers count


@dataclass(frozen=True, slots=True)
class Selection:
    """Whether a template container takes part, and the ref to resolve if it does."""

    container: ContainerView
    ref: TagRef | None  # set iff counted
    reason: Reason | None = None  # why not counted
    detail: str = ""

    @property
    def is_counted(self) -> bool:
        return self.ref is not None


def select_container(container: ContainerView, *, forgejo_host: str) -> Selection:
    """Does this container take part in rolling? A ladder: the first reason to ignore wins."""
    try:
        image: ImageRef = parse_image(container.image)
    except ImageRefError as exc:
        # An image the runtime would not accept either; nothing sensible to compare.
        return Selection(container, None, Reason.INVALID_IMAGE, str(exc))
    if not host_matches(image.host, forgejo_host):
        # Only our registry's tags are watched; other hosts are someone else's business.
        return Selection(
            container, None, Reason.OTHER_HOST, f"host {image.host} is not {forgejo_host}"
        )
    ref = image.tag_ref
    if ref is None:
        # Pinned by digest: the image cannot move, so there is nothing to roll.
        return Selection(container, None, Reason.DIGEST_PINNED, "image is pinned by digest")
    if container.image_pull_policy != PULL_ALWAYS:
        # A recreated pod might reuse the node's cached image and come back stale: never roll.
        return Selection(
            container,
            None,
            Reason.PULL_POLICY_NOT_ALWAYS,
            f"imagePullPolicy is {container.image_pull_policy or 'unset'!s}; set it to Always"
            " to have this container rolled",
        )
    return Selection(container, ref)


def refs_to_resolve(deployments: Iterable[DeploymentView], *, forgejo_host: str) -> set[TagRef]:
    """Every ref the registry must be asked about this tick (deduplicated)."""
    refs: set[TagRef] = set()
    for deployment in deployments:
        for container in deployment.containers:
            ref = select_container(container, forgejo_host=forgejo_host).ref
            if ref is not None:
                refs.add(ref)
    return refs


# --------------------------------------------------------------------------------------------
# Loop-guard memory


def listed_uids(
    snapshot: Iterable[tuple[DeploymentView, Sequence[PodView]]], *, forgejo_host: str
) -> dict[TagRef, frozenset[str]]:
    """Per ref, the UIDs of the listed pods of every Deployment with a container using it.

    Feeds ``observe_targets``: taken from a listing made before the registry is asked, these
    pods all predate any digest that the registry's answers show for the first time.
    """
    uids: dict[TagRef, set[str]] = {}
    for deployment, pods in snapshot:
        pod_uids = {p.uid for p in pods if p.uid}
        for container in deployment.containers:
            ref = select_container(container, forgejo_host=forgejo_host).ref
            if ref is not None:
                uids.setdefault(ref, set()).update(pod_uids)
    return {ref: frozenset(found) for ref, found in uids.items()}


def observe_targets(
    previous: Mapping[TagRef, Sighting],
    resolved: Mapping[TagRef, Digest | Unknown],
    *,
    now: datetime,
    listed: Mapping[TagRef, frozenset[str]] | None = None,
) -> dict[TagRef, Sighting]:
    """The next loop-guard memory: when each ref's current digest was first seen, and which
    pods were listed before that.

    Keyed by ref, not by digest, so that a tag moving back to an older digest counts as a
    new sighting (otherwise pods of the intermediate digest could never be replaced). An
    unknown answer keeps the previous sighting; refs no longer resolved are forgotten, so
    the memory is bounded by the enrolled refs and, per ref, by the pods listed at its
    sighting (a new digest replaces the set, an unchanged one keeps it as it was).

    ``listed`` (see ``listed_uids``) must come from a listing finished before ``resolved``
    was asked for, and ``now`` must be read after that listing: then every UID remembered
    belongs to a pod created before ``now``. Without it only timestamps guard.
    """
    if now.tzinfo is None:
        raise ValueError("now must be timezone-aware")
    listed = listed or {}
    memory: dict[TagRef, Sighting] = {}
    for ref, answer in resolved.items():
        before = previous.get(ref)
        if isinstance(answer, Unknown):
            if before is not None:
                memory[ref] = before
        elif before is not None and before.digest == answer:
            memory[ref] = before
        else:
            memory[ref] = Sighting(answer, now, listed.get(ref, frozenset()))
    return memory


# --------------------------------------------------------------------------------------------
# Settled


def is_settled(*, pods: Sequence[PodView], replicas: int) -> Settledness:
    """May this Deployment lose a pod now? Terminal (Succeeded/Failed) pods do not count,
    except that one being deleted is still terminating."""
    live = [p for p in pods if not p.is_terminal]
    # Terminal or not: a deleted pod whose containers exited 0 shows Succeeded (non-zero:
    # Failed) until the kubelet has finished with it, and its replacement is on its way.
    terminating = sorted(p.name for p in pods if p.deleting)
    if terminating:
        # A replacement is still on its way; deleting another would stack disruptions.
        return Settledness(
            SettledReason.POD_TERMINATING, f"pod terminating: {', '.join(terminating)}"
        )
    unready = sorted(p.name for p in live if not p.ready)
    if unready:
        # The last replacement (or something else) is not serving yet.
        return Settledness(SettledReason.POD_NOT_READY, f"pod not ready: {', '.join(unready)}")
    if len(live) < replicas:
        # Scaling up or a pod not created yet: there is no spare capacity to lose.
        return Settledness(SettledReason.TOO_FEW_READY, f"{len(live)} of {replicas} replicas ready")
    return Settledness(SettledReason.SETTLED)


# --------------------------------------------------------------------------------------------
# The decision


def decide(
    *,
    deployment: DeploymentView,
    pods: Sequence[PodView],
    forgejo_host: str,
    resolved: Mapping[TagRef, Digest | Unknown],
    sightings: Mapping[TagRef, Sighting],
    children: Mapping[Digest, frozenset[Digest] | Unknown],
) -> Decision:
    """Decide one Deployment: a verdict per template container and at most one deletion.

    ``pods`` are the Deployment's pods as listed; ``resolved`` the registry's answers;
    ``sightings`` the loop-guard memory (see ``observe_targets``); ``children`` the known
    child digests of index digests (an empty set for a plain manifest).
    """
    settledness = is_settled(pods=pods, replicas=deployment.replicas)
    verdicts: list[ContainerVerdict] = []
    actions: list[DeletePod] = []
    requests: set[ChildrenRequest] = set()
    for container in deployment.containers:
        verdict, action, request = _decide_container(
            deployment=deployment,
            container=container,
            pods=pods,
            forgejo_host=forgejo_host,
            resolved=resolved,
            sightings=sightings,
            children=children,
            settledness=settledness,
            already=actions[0] if actions else None,
        )
        verdicts.append(verdict)
        if action is not None:
            actions.append(action)
        if request is not None:
            requests.add(request)
    return Decision(
        namespace=deployment.namespace,
        name=deployment.name,
        settledness=settledness,
        containers=tuple(verdicts),
        actions=tuple(actions),
        needs_children=frozenset(requests),
    )


def _decide_container(
    *,
    deployment: DeploymentView,
    container: ContainerView,
    pods: Sequence[PodView],
    forgejo_host: str,
    resolved: Mapping[TagRef, Digest | Unknown],
    sightings: Mapping[TagRef, Sighting],
    children: Mapping[Digest, frozenset[Digest] | Unknown],
    settledness: Settledness,
    already: DeletePod | None,
) -> tuple[ContainerVerdict, DeletePod | None, ChildrenRequest | None]:
    """One container's ladder; ``already`` is the deletion chosen for an earlier container."""
    name, image = container.name, container.image
    selection = select_container(container, forgejo_host=forgejo_host)
    if selection.ref is None:
        assert selection.reason is not None
        return (
            ContainerVerdict(name, image, Verdict.SKIPPED, selection.reason, selection.detail),
            None,
            None,
        )
    ref = selection.ref

    target = resolved.get(ref, Unknown("not-resolved", "the registry was not asked"))
    if isinstance(target, Unknown):
        # Unknown never means changed: skip this image until the registry answers.
        return (
            ContainerVerdict(
                name, image, Verdict.SKIPPED, Reason.REGISTRY_UNKNOWN, str(target), ref, target
            ),
            None,
            None,
        )

    index_children = children.get(target)
    findings = [
        _compare(pod, container, target, index_children) for pod in pods if not pod.is_terminal
    ]

    def verdict(
        v: Verdict, reason: Reason, detail: str = "", pod: str | None = None
    ) -> ContainerVerdict:
        """A verdict carrying this container's ref, target and (current) per-pod findings."""
        return ContainerVerdict(name, image, v, reason, detail, ref, target, tuple(findings), pod)

    mismatched = [f for f in findings if f.state is PodState.MISMATCH]
    if mismatched:
        if isinstance(index_children, Unknown):
            # Cannot tell a platform-child digest from a stale one: skip, never delete.
            return (
                verdict(Verdict.SKIPPED, Reason.CHILDREN_UNKNOWN, str(index_children)),
                None,
                None,
            )
        # Only now is the index worth a GET; the shell fetches and asks again.
        return (
            verdict(Verdict.NEEDS_CHILDREN, Reason.CHILDREN_NEEDED, f"fetch children of {target}"),
            None,
            ChildrenRequest(ref, target),
        )

    sighting = sightings.get(ref)
    if sighting is None or sighting.digest != target:
        if any(f.state is PodState.STALE for f in findings):
            # Without the first-seen time the loop guard cannot work: the safe answer is no.
            return (
                verdict(Verdict.SKIPPED, Reason.SIGHTING_MISSING, f"no sighting of {target}"),
                None,
                None,
            )
    else:
        findings = [_guard(f, pods, sighting) for f in findings]

    stale = [f for f in findings if f.state is PodState.STALE]
    if stale:
        stale_names = {f.pod for f in stale}
        candidates = sorted(
            (p for p in pods if p.name in stale_names), key=lambda p: (p.created_at, p.name)
        )
        if not settledness.is_settled:
            # The previous replacement (or something else) must settle first.
            return (
                verdict(
                    Verdict.WAITING, Reason.NOT_SETTLED, settledness.detail, candidates[0].name
                ),
                None,
                None,
            )
        if already is not None:
            if already.name in stale_names:
                # The pod chosen for another container is stale here too: one deletion serves both.
                return verdict(Verdict.STALE, Reason.STALE_POD, "", already.name), None, None
            # At most one deletion per Deployment per tick.
            return (
                verdict(
                    Verdict.WAITING,
                    Reason.ONE_PER_TICK,
                    f"{already.name} goes first",
                    candidates[0].name,
                ),
                None,
                None,
            )
        victim = candidates[0]
        from_digest = next(f.digest for f in stale if f.pod == victim.name)
        assert isinstance(from_digest, Digest)
        action = DeletePod(
            namespace=victim.namespace,
            name=victim.name,
            uid=victim.uid,
            reason=f"{Reason.STALE_POD}: {name} runs {from_digest.short}, {ref} is {target.short}",
            image=image,
            from_digest=from_digest,
            to_digest=target,
            deployment=deployment.name,
            container=name,
        )
        return verdict(Verdict.STALE, Reason.STALE_POD, "", victim.name), action, None

    guarded = [f for f in findings if f.state is PodState.LOOP_GUARD]
    if guarded:
        # The runtime reports another digest for a pod that must have pulled the new one.
        pods_text = ", ".join(f.pod for f in guarded)
        return (
            verdict(Verdict.LOOP_GUARD, Reason.CREATED_AFTER_TARGET, f"not deleting {pods_text}"),
            None,
            None,
        )

    if any(f.state in {PodState.CURRENT, PodState.CURRENT_CHILD} for f in findings):
        # Includes a new image that crash-loops: it matches, so it is never deleted again.
        return verdict(Verdict.CURRENT, Reason.UP_TO_DATE), None, None

    # Nothing comparable yet: pods still pulling, or only pods of an older template.
    return (
        verdict(Verdict.SKIPPED, Reason.NO_COMPARABLE_POD, "no pod of this template has a digest"),
        None,
        None,
    )


def _compare(
    pod: PodView,
    container: ContainerView,
    target: Digest,
    index_children: frozenset[Digest] | Unknown | None,
) -> PodFinding:
    """Compare one pod's container with the registry's digest (no loop guard yet)."""
    if pod.deleting:
        return PodFinding(pod.name, pod.uid, PodState.TERMINATING)
    if pod.spec_image(container.name) != container.image:
        # Pods of an older template are the Deployment controller's business.
        return PodFinding(pod.name, pod.uid, PodState.OLD_TEMPLATE)
    status = pod.status_of(container.name)
    running = parse_image_id(status.image_id) if status is not None else Unknown("no-status")
    if isinstance(running, Unknown):
        return PodFinding(pod.name, pod.uid, PodState.NO_DIGEST, running)
    if running == target:
        return PodFinding(pod.name, pod.uid, PodState.CURRENT, running)
    if isinstance(index_children, frozenset):
        state = PodState.CURRENT_CHILD if running in index_children else PodState.STALE
        return PodFinding(pod.name, pod.uid, state, running)
    return PodFinding(pod.name, pod.uid, PodState.MISMATCH, running)


def _guard(finding: PodFinding, pods: Sequence[PodView], sighting: Sighting) -> PodFinding:
    """Turn STALE into LOOP_GUARD for a pod that may have been created after the target was
    first seen. A pod the sighting's own pass had listed is surely older. Any other pod is
    judged by ``creationTimestamp``, which has whole-second resolution: one stamped in the
    same second as the sighting may be younger than it (a replacement created milliseconds
    after a deletion), so it counts as created after.
    """
    if finding.state is not PodState.STALE:
        return finding
    if finding.uid and finding.uid in sighting.older_uids:
        # Listed before the registry was asked: older than the sighting, whatever its stamp.
        return finding
    pod = next(p for p in pods if p.name == finding.pod)
    if pod.created_at + CREATION_TIMESTAMP_RESOLUTION > sighting.first_seen_at:
        return PodFinding(finding.pod, finding.uid, PodState.LOOP_GUARD, finding.digest)
    return finding


# --------------------------------------------------------------------------------------------
# A halted rollout


@dataclass(frozen=True, slots=True)
class RolloutHalt:
    """A rollout that has waited longer than the bound on a pod that does not become Ready
    (a crash-looping or unpullable new image, a failing readiness probe)."""

    deployment: str  # namespace/name
    pod: str
    unready_for: timedelta
    restarts: int
    waiting: int  # stale pods that wait behind it

    def message(self) -> str:
        minutes = int(self.unready_for.total_seconds()) // 60
        seconds = int(self.unready_for.total_seconds()) % 60
        return (
            f"rollout of {self.deployment} is halted: pod {self.pod} has not been Ready for"
            f" {minutes}m{seconds:02d}s ({self.restarts} restart(s)); {self.waiting} stale"
            " pod(s) wait until it is Ready (fix or roll back the image)"
        )


def rollout_halt(
    *, decision: Decision, pods: Sequence[PodView], now: datetime, after: timedelta
) -> RolloutHalt | None:
    """Has this Deployment's rollout been stuck for at least ``after``? The pure check behind
    the halted-rollout warning: stale pods wait only because a pod is not Ready, and that pod
    has been unready (since its Ready condition last changed, else since it was created) for
    at least ``after``."""
    stale = {
        f.pod
        for v in decision.containers
        if v.verdict is Verdict.WAITING and v.reason is Reason.NOT_SETTLED
        for f in v.pods
        if f.state is PodState.STALE
    }
    if not stale:
        # Nothing waits to be rolled: a pod that is not Ready is not autoroll's concern.
        return None
    if decision.settledness.reason is not SettledReason.POD_NOT_READY:
        # Terminating or scaling: the rollout is moving, or waits on the Deployment controller.
        return None
    stuck = [
        (now - (p.ready_changed_at or p.created_at), p)
        for p in pods
        if not p.is_terminal and not p.deleting and not p.ready
    ]
    stuck = [(age, p) for age, p in stuck if age >= after]
    if not stuck:
        # Within the bound: a slow start, not yet a halt.
        return None
    age, pod = max(stuck, key=lambda item: (item[0], item[1].name))
    restarts = max((s.restart_count for s in pod.statuses), default=0)
    return RolloutHalt(decision.key, pod.name, age, restarts, len(stale - {pod.name}))
