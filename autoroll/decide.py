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
                         sightings=sightings, children=children_cache, contents=contents)

   If ``decision.needs_children`` is not empty, fetch each ``ChildrenRequest`` (GET the index
   by digest; cache forever, digests are immutable), put ``frozenset[Digest] | Unknown`` into
   ``children_cache[request.digest]`` and call ``decide`` again with the same inputs.
   Likewise, if ``decision.needs_content`` is not empty, resolve each ``ContentRequest`` (GET
   the manifest or index by digest from the repository it names, and an index's children),
   put ``ImageContent | Unknown`` into ``contents[request.digest]`` and decide again. Every
   request gets an answer, so a request is never repeated: children first, then content,
   and the third call decides.
5. ``decision.actions`` is a tuple of at most one ``DeletePod``; executing it is the shell's
   job, and dry-run means "log it, don't execute it". ``decision.containers`` holds one
   ``ContainerVerdict`` per template container (verdict, reason, detail, both digests,
   per-pod findings) for logs, metrics and ``autoroll plan``.

Safety properties enforced here (see docs/adr/001-cluster-is-the-state.md):

- a pod is stale only if it runs other content than the target: its digest is neither the
  registry's nor a child of the registry's index, and the image configs its reference
  stands for (or the bare config it reports) are known and none is among the target's (or,
  given the pod's platform, that platform's configs differ). The name the runtime reports is
  not evidence (containerd names the alphabetically first reference recorded for the
  config, possibly another repository's). Content that cannot be resolved, and a reference
  sharing only some platforms' configs with the target, is unknown, never stale;
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
    RunningImage,
    TagRef,
    host_matches,
    parse_image,
    parse_running_image,
)
from autoroll.model import (
    PULL_ALWAYS,
    ContainerView,
    DeploymentView,
    Digest,
    ImageContent,
    PodView,
    Unknown,
)

__all__ = [
    "ChildrenRequest",
    "ContainerVerdict",
    "ContentMatch",
    "ContentRequest",
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
    "match_content",
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
    NEEDS_CONTENT = "needs-content"  # not a child either; the configs must be resolved


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
    CONTENT_NEEDED = "content-needed"
    TARGET_CONTENT_UNKNOWN = "target-content-unknown"
    CONTENT_UNKNOWN = "content-unknown"
    PLATFORM_UNKNOWN = "platform-unknown"

    @property
    def is_warning(self) -> bool:
        """Should the shell log this loudly (every tick)? Yes for what an operator must fix or
        know: a pull policy that defeats rolling, the loop guard, and a registry that cannot
        be asked (offline, refusing the token, answering garbage), which silently stops
        rolling until it is fixed. Not for one pod's unresolvable reference
        (``CONTENT_UNKNOWN``, ``PLATFORM_UNKNOWN``): that can last as long as the pod, so the
        shell warns once per pod and reference instead."""
        return self in {
            Reason.PULL_POLICY_NOT_ALWAYS,
            Reason.CREATED_AFTER_TARGET,
            Reason.REGISTRY_UNKNOWN,
            Reason.CHILDREN_UNKNOWN,
            Reason.TARGET_CONTENT_UNKNOWN,
        }


class PodState(StrEnum):
    """How one pod compares for one container."""

    CURRENT = "current"  # digest equals the registry's digest
    CURRENT_CHILD = "current-child"  # digest is a child of the registry's index
    SAME_CONTENT = "same-content"  # another name for the target's content (configs among its)
    STALE = "stale"  # runs other content: no config its reference stands for is the target's
    LOOP_GUARD = "loop-guard"  # would be stale, but created after the target was first seen
    MISMATCH = "mismatch"  # known and different; children not known yet
    NEEDS_CONTENT = "needs-content"  # not the target nor a child; configs not resolved yet
    CONTENT_UNKNOWN = "content-unknown"  # its reference (or the target) cannot be resolved
    PLATFORM_UNKNOWN = "platform-unknown"  # shares only some platforms' configs with the target
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
class ContentRequest:
    """The shell must resolve this manifest or index (by digest, from ``repository`` on
    ``host``) to the image configs it stands for."""

    host: str
    repository: str
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
    """One pod's comparison for one container.

    ``running`` is what the runtime named (None when not inspected or not parsable);
    ``note`` says, for a person, why a pod is current under another name or unresolved,
    and what to do about the latter.
    """

    pod: str
    uid: str
    state: PodState
    digest: Digest | Unknown | None = None  # None: not inspected (old template, terminating)
    running: RunningImage | None = None
    note: str = ""


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
    needs_content: frozenset[ContentRequest] = frozenset()

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
# Same content?


class ContentMatch(StrEnum):
    """How the configs a pod's reference stands for compare with the target's."""

    SAME = "same"  # every one is among the target's: the pod runs the target's content
    OTHER = "other"  # none is: the pod runs other content, whatever its node's platform
    PARTIAL = "partial"  # some are: which one the pod runs depends on its node's platform


def match_content(
    running: ImageContent, target: ImageContent, *, platform: str | None = None
) -> ContentMatch:
    """Does a pod whose reference stands for ``running`` run the target's content?

    containerd runs, of an index, the child for its node's platform, and names it by any
    reference it recorded for that child's config. So the pod's config is one of
    ``running.configs``: all among the target's is the target's content, none is other
    content. Some but not all (a multi-arch push that left some platforms unchanged) can be
    told only from the node's ``platform``, and only where both indexes name it exactly;
    otherwise it stays ``PARTIAL``, which the core treats as unknown, never stale.
    """
    if running.configs <= target.configs:
        return ContentMatch.SAME
    if running.configs.isdisjoint(target.configs):
        return ContentMatch.OTHER
    if platform is not None:
        mine, theirs = running.config_for(platform), target.config_for(platform)
        if mine is not None and theirs is not None:
            return ContentMatch.SAME if mine == theirs else ContentMatch.OTHER
    return ContentMatch.PARTIAL


# --------------------------------------------------------------------------------------------
# The decision


@dataclass(frozen=True, slots=True)
class _Needs:
    """What one container's ladder asks the shell to fetch before it can decide."""

    children: frozenset[ChildrenRequest] = frozenset()
    content: frozenset[ContentRequest] = frozenset()


_NOTHING = _Needs()
#: Pods in these states are neither rolled nor counted as current.
_UNRESOLVED = frozenset({PodState.CONTENT_UNKNOWN, PodState.PLATFORM_UNKNOWN})
_RUNS_TARGET = frozenset({PodState.CURRENT, PodState.CURRENT_CHILD, PodState.SAME_CONTENT})
#: Registry answers a person can fix by granting the registry user read access.
_ACCESS_REASONS = frozenset({"unauthorized", "forbidden", "not-found"})


def decide(
    *,
    deployment: DeploymentView,
    pods: Sequence[PodView],
    forgejo_host: str,
    resolved: Mapping[TagRef, Digest | Unknown],
    sightings: Mapping[TagRef, Sighting],
    children: Mapping[Digest, frozenset[Digest] | Unknown],
    contents: Mapping[Digest, ImageContent | Unknown] | None = None,
) -> Decision:
    """Decide one Deployment: a verdict per template container and at most one deletion.

    ``pods`` are the Deployment's pods as listed; ``resolved`` the registry's answers;
    ``sightings`` the loop-guard memory (see ``observe_targets``); ``children`` the known
    child digests of index digests (an empty set for a plain manifest); ``contents`` the
    known image configs of manifest and index digests (``ImageContent``).
    """
    settledness = is_settled(pods=pods, replicas=deployment.replicas)
    verdicts: list[ContainerVerdict] = []
    actions: list[DeletePod] = []
    wanted_children: set[ChildrenRequest] = set()
    wanted_content: set[ContentRequest] = set()
    for container in deployment.containers:
        verdict, action, needs = _decide_container(
            deployment=deployment,
            container=container,
            pods=pods,
            forgejo_host=forgejo_host,
            resolved=resolved,
            sightings=sightings,
            children=children,
            contents=contents if contents is not None else {},
            settledness=settledness,
            already=actions[0] if actions else None,
        )
        verdicts.append(verdict)
        if action is not None:
            actions.append(action)
        wanted_children |= needs.children
        wanted_content |= needs.content
    return Decision(
        namespace=deployment.namespace,
        name=deployment.name,
        settledness=settledness,
        containers=tuple(verdicts),
        actions=tuple(actions),
        needs_children=frozenset(wanted_children),
        needs_content=frozenset(wanted_content),
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
    contents: Mapping[Digest, ImageContent | Unknown],
    settledness: Settledness,
    already: DeletePod | None,
) -> tuple[ContainerVerdict, DeletePod | None, _Needs]:
    """One container's ladder; ``already`` is the deletion chosen for an earlier container."""
    name, image = container.name, container.image
    selection = select_container(container, forgejo_host=forgejo_host)
    if selection.ref is None:
        assert selection.reason is not None
        return (
            ContainerVerdict(name, image, Verdict.SKIPPED, selection.reason, selection.detail),
            None,
            _NOTHING,
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
            _NOTHING,
        )

    index_children = children.get(target)
    target_content = contents.get(target)
    findings = [
        _compare(
            pod,
            container,
            target=target,
            index_children=index_children,
            contents=contents,
            forgejo_host=forgejo_host,
        )
        for pod in pods
        if not pod.is_terminal
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
                _NOTHING,
            )
        # Only now is the index worth a GET; the shell fetches and asks again.
        return (
            verdict(Verdict.NEEDS_CHILDREN, Reason.CHILDREN_NEEDED, f"fetch children of {target}"),
            None,
            _Needs(children=frozenset({ChildrenRequest(ref, target)})),
        )

    needing = [f for f in findings if f.state is PodState.NEEDS_CONTENT]
    if needing:
        # Neither the target nor a child by name: only the configs tell what the pod runs.
        wanted = (
            {ContentRequest(ref.host, ref.repository, target)} if target_content is None else set()
        )
        for finding in needing:
            running = finding.running
            assert running is not None
            if running.is_config or running.digest in contents:
                continue
            # Only a reference named on the configured host is ever left needing content.
            assert running.host is not None and running.repository is not None
            wanted.add(ContentRequest(running.host, running.repository, running.digest))
        return (
            verdict(
                Verdict.NEEDS_CONTENT,
                Reason.CONTENT_NEEDED,
                f"resolve {len(wanted)} manifest(s) to their image configs",
            ),
            None,
            _Needs(content=frozenset(wanted)),
        )

    if isinstance(target_content, Unknown) and any(f.state in _UNRESOLVED for f in findings):
        # Same content or other content cannot be told without the target's: skip, never delete.
        return (
            verdict(
                Verdict.SKIPPED,
                Reason.TARGET_CONTENT_UNKNOWN,
                f"the image configs of {target.short} could not be resolved: {target_content}",
            ),
            None,
            _NOTHING,
        )

    sighting = sightings.get(ref)
    if sighting is None or sighting.digest != target:
        if any(f.state is PodState.STALE for f in findings):
            # Without the first-seen time the loop guard cannot work: the safe answer is no.
            return (
                verdict(Verdict.SKIPPED, Reason.SIGHTING_MISSING, f"no sighting of {target}"),
                None,
                _NOTHING,
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
                _NOTHING,
            )
        if already is not None:
            if already.name in stale_names:
                # The pod chosen for another container is stale here too: one deletion serves both.
                return verdict(Verdict.STALE, Reason.STALE_POD, "", already.name), None, _NOTHING
            # At most one deletion per Deployment per tick.
            return (
                verdict(
                    Verdict.WAITING,
                    Reason.ONE_PER_TICK,
                    f"{already.name} goes first",
                    candidates[0].name,
                ),
                None,
                _NOTHING,
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
        return verdict(Verdict.STALE, Reason.STALE_POD, "", victim.name), action, _NOTHING

    guarded = [f for f in findings if f.state is PodState.LOOP_GUARD]
    if guarded:
        # The runtime reports another digest for a pod that must have pulled the new one.
        pods_text = ", ".join(f.pod for f in guarded)
        return (
            verdict(Verdict.LOOP_GUARD, Reason.CREATED_AFTER_TARGET, f"not deleting {pods_text}"),
            None,
            _NOTHING,
        )

    unresolved = [f for f in findings if f.state in _UNRESOLVED]
    if unresolved:
        # What these pods run cannot be told: not rolled, and not counted as current either.
        reason = (
            Reason.CONTENT_UNKNOWN
            if any(f.state is PodState.CONTENT_UNKNOWN for f in unresolved)
            else Reason.PLATFORM_UNKNOWN
        )
        detail = "; ".join(f"{f.pod}: {f.note}" for f in unresolved)
        return verdict(Verdict.SKIPPED, reason, detail), None, _NOTHING

    if any(f.state in _RUNS_TARGET for f in findings):
        # Includes a new image that crash-loops: it matches, so it is never deleted again.
        return (
            verdict(Verdict.CURRENT, Reason.UP_TO_DATE, _same_content_text(findings)),
            None,
            _NOTHING,
        )

    # Nothing comparable yet: pods still pulling, or only pods of an older template.
    return (
        verdict(Verdict.SKIPPED, Reason.NO_COMPARABLE_POD, "no pod of this template has a digest"),
        None,
        _NOTHING,
    )


def _same_content_text(findings: Sequence[PodFinding]) -> str:
    """Names the pods that run the target's content under another name, and those names."""
    same = [f for f in findings if f.state is PodState.SAME_CONTENT and f.running is not None]
    if not same:
        return ""
    pods = ", ".join(f.pod for f in same)
    names = ", ".join(sorted({f.running.reference for f in same if f.running is not None}))
    return f"{pods}: the target's content under another name ({names})"


def _compare(
    pod: PodView,
    container: ContainerView,
    *,
    target: Digest,
    index_children: frozenset[Digest] | Unknown | None,
    contents: Mapping[Digest, ImageContent | Unknown],
    forgejo_host: str,
) -> PodFinding:
    """Compare one pod's container with the registry's digest (no loop guard yet)."""
    if pod.deleting:
        return PodFinding(pod.name, pod.uid, PodState.TERMINATING)
    if pod.spec_image(container.name) != container.image:
        # Pods of an older template are the Deployment controller's business.
        return PodFinding(pod.name, pod.uid, PodState.OLD_TEMPLATE)
    status = pod.status_of(container.name)
    running = parse_running_image(status.image_id) if status is not None else Unknown("no-status")
    if isinstance(running, Unknown):
        return PodFinding(pod.name, pod.uid, PodState.NO_DIGEST, running)
    if running.digest == target:
        return PodFinding(pod.name, pod.uid, PodState.CURRENT, running.digest, running)
    if not running.is_config:
        if not isinstance(index_children, frozenset):
            # Children first: a platform child (CRI-O reports one) needs no further GET.
            return PodFinding(pod.name, pod.uid, PodState.MISMATCH, running.digest, running)
        if running.digest in index_children:
            return PodFinding(pod.name, pod.uid, PodState.CURRENT_CHILD, running.digest, running)
    return _compare_content(
        pod, running, target=target, contents=contents, forgejo_host=forgejo_host
    )


def _compare_content(
    pod: PodView,
    running: RunningImage,
    *,
    target: Digest,
    contents: Mapping[Digest, ImageContent | Unknown],
    forgejo_host: str,
) -> PodFinding:
    """The name is not the target's: compare the image configs both stand for."""

    def found(state: PodState, note: str = "") -> PodFinding:
        return PodFinding(pod.name, pod.uid, state, running.digest, running, note)

    reference = running.reference
    if running.is_config:
        # A bare config ID is exactly what the container runs.
        mine: ImageContent | Unknown | None = ImageContent(frozenset({running.digest}))
    elif running.host is None or running.repository is None:
        return found(
            PodState.CONTENT_UNKNOWN,
            f"{reference} names no repository autoroll can read; not rolled, not counted"
            " current (delete the pod by hand to replace it)",
        )
    elif not host_matches(running.host, forgejo_host):
        # Only the configured registry is asked; another host's copy cannot be resolved.
        return found(
            PodState.CONTENT_UNKNOWN,
            f"{reference} is on another registry host than {forgejo_host}, which autoroll"
            " does not ask; not rolled, not counted current (delete the pod by hand to"
            " replace it)",
        )
    else:
        mine = contents.get(running.digest)
    theirs = contents.get(target)
    if mine is None or theirs is None:
        return found(PodState.NEEDS_CONTENT)
    if isinstance(theirs, Unknown):
        return found(PodState.CONTENT_UNKNOWN, f"the target's image configs are {theirs}")
    if isinstance(mine, Unknown):
        hint = (
            f"give autoroll's registry user read access to {running.repository},"
            " or delete the pod by hand"
            if mine.reason in _ACCESS_REASONS - {"not-found"}
            else (
                "the registry no longer holds it: Gitea and Forgejo drop a tag's previous"
                " manifest when the tag is pushed again, and autoroll knows its content"
                " only if it saw it as the target before; delete the pod by hand"
            )
            if mine.reason == "not-found"
            else "asked again next pass"
        )
        return found(
            PodState.CONTENT_UNKNOWN,
            f"{reference} could not be resolved: {mine}; not rolled, not counted current ({hint})",
        )
    match match_content(mine, theirs, platform=pod.platform):
        case ContentMatch.SAME:
            return found(
                PodState.SAME_CONTENT, f"runs the target's content under another name: {reference}"
            )
        case ContentMatch.OTHER:
            return found(PodState.STALE)
        case ContentMatch.PARTIAL:
            return found(
                PodState.PLATFORM_UNKNOWN,
                f"{reference} shares only some platforms' image configs with the target (a"
                " multi-arch push that left some platforms unchanged): which one the pod runs"
                " depends on its node's platform, which autoroll does not read; not rolled,"
                " not counted current (delete the pod by hand to replace it)",
            )


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
