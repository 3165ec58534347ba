"""The pure core: given what the cluster and the registry say right now, what should happen?

API for the shell (stable; extended, never renamed)
---------------------------------------------------
1. ``refs = refs_to_resolve(workloads, registries=cfg.registry_hosts)`` -> ``set[TagRef]``
   (``autoroll.core.selection``: which containers count, and why the others do not).
2. ``resolved = registry.resolve(refs)`` -> ``dict[TagRef, Digest | Unknown]`` (one HEAD each).
3. ``sightings = observe_targets(sightings, resolved, now=now, listed=listed)``: the loop-guard
   memory, a plain ``dict[TagRef, Sighting]`` the shell keeps in memory between ticks (nothing
   on disk). ``listed = listed_uids(snapshot, registries=...)`` names, per ref, the pods the
   shell listed *before* step 2 asked the registry, and ``now`` is read after that listing:
   both are what lets a first sighting remember which pods are surely older than it
   (both in ``autoroll.core.sightings``).
4. Per workload (a Deployment, StatefulSet or DaemonSet: ``WorkloadView``)::

       decision = decide(workload=w, pods=pods, registries=..., resolved=resolved,
                         sightings=sightings, children=children_cache, contents=contents,
                         nodes=nodes)

   If ``decision.needs_children`` is not empty, fetch each ``ChildrenRequest`` (GET the index
   by digest; cache forever, digests are immutable), put ``frozenset[Digest] | Unknown`` into
   ``children_cache[request.digest]`` and call ``decide`` again with the same inputs.
   Likewise, if ``decision.needs_content`` is not empty, resolve each ``ContentRequest`` (GET
   the manifest or index by digest from the repository it names, and an index's children),
   put ``ImageContent | Unknown`` into ``contents[request.digest]`` and decide again. Every
   request gets an answer, so a request is never repeated: children first, then content,
   and the third call decides. Last, if ``decision.needs_nodes`` is not empty (a DaemonSet
   about to lose a pod), read each ``NodeRequest``'s Node, put ``NodeView | Unknown`` into
   ``nodes[request.name]`` (a map kept for this pass only: readiness changes) and decide
   again; so at most three fetch rounds precede the deciding call.
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
- at most one deletion per workload per call, and only while the workload is settled by the
  rules of its kind (``autoroll.core.kinds``); a StatefulSet pod behind the ``updateRevision``
  and a DaemonSet pod on a Node not read Ready in this pass are never deleted;
- a pod created after its target digest was first seen and after autoroll's first deletion
  in its workload's current roll (a replacement of autoroll's own, for all it knows) is never
  deleted (loop guard): a pod counts as older than the sighting only if the sighting's own
  pass listed it, or if its creationTimestamp is before the sighting by at least the
  timestamp's one-second resolution; and as older than autoroll's first deletion only if the
  read right before that deletion listed it (``rolled_from``). A pod created after the
  sighting by someone else (a drain, a scale-up) while the tag pointed elsewhere is rolled;
  its replacement, if it came back stale too, is guarded.
- every container that runs an image counts: containers, native sidecars and init
  containers alike (``ContainerView.role``).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import replace
from datetime import datetime

from autoroll.core.compare import ContentMatch, compare_pod, match_content
from autoroll.core.decision import (
    RUNS_TARGET,
    ChildrenRequest,
    ContainerVerdict,
    ContentRequest,
    Decision,
    DeletePod,
    NodeRequest,
    PodFinding,
    PodState,
    Reason,
    Settledness,
    SettledReason,
    Sighting,
    Verdict,
)
from autoroll.core.health import OFF, Health, HealthState, HealthWindow, health_window
from autoroll.core.images import TagRef
from autoroll.core.kinds import is_settled
from autoroll.core.ladder import ContainerResult, Ladder
from autoroll.core.model import (
    ContainerRole,
    ContainerView,
    Digest,
    ImageContent,
    NodeView,
    PodView,
    Unknown,
    WorkloadView,
)
from autoroll.core.selection import select_container

__all__ = [
    "ChildrenRequest",
    "ContainerVerdict",
    "ContentMatch",
    "ContentRequest",
    "Decision",
    "DeletePod",
    "HealthWindow",
    "NodeRequest",
    "PodFinding",
    "PodState",
    "Reason",
    "SettledReason",
    "Settledness",
    "Sighting",
    "Verdict",
    "decide",
    "is_settled",
    "match_content",
    "undecided",
]


# --------------------------------------------------------------------------------------------
# The decision


def decide(
    *,
    workload: WorkloadView,
    pods: Sequence[PodView],
    registries: Collection[str],
    resolved: Mapping[TagRef, Digest | Unknown],
    sightings: Mapping[TagRef, Sighting],
    children: Mapping[Digest, frozenset[Digest] | Unknown],
    contents: Mapping[Digest, ImageContent | Unknown] | None = None,
    nodes: Mapping[str, NodeView | Unknown] | None = None,
    now: datetime | None = None,
    rolled_from: frozenset[str] | None = None,
    health: HealthWindow = OFF,
    pinning: bool = False,
) -> Decision:
    """Decide one workload: a verdict per template container and at most one deletion.

    ``pods`` are the workload's pods as listed; ``resolved`` the registry's answers;
    ``sightings`` the loop-guard memory (see ``observe_targets``); ``children`` the known
    child digests of index digests (an empty set for a plain manifest); ``contents`` the
    known image configs of manifest and index digests (``ImageContent``); ``nodes`` the
    Nodes read in this pass (a DaemonSet pod goes only from a Node read Ready); ``now``
    the pass's time (how long a pod has been Ready, for ``minReadySeconds``);
    ``rolled_from`` the UIDs of the workload's pods read right before autoroll's first
    deletion in its current roll (None: it deleted none), so the loop guard spares exactly
    the pods that may be replacements of autoroll's own deletions (``compare.guard``);
    ``health`` the workload's health window (``autoroll.core.health``; off unless given): while
    a pod already running a moving tag's target is inside it, no pod goes, and one that
    failed inside it halts the roll. ``pinning``: new pods are pinned at admission
    (docs/adr/028), so an ``IfNotPresent`` container rolls too (``select_container``).
    """
    settledness = is_settled(workload=workload, pods=pods, now=now)
    results: list[ContainerResult] = []
    actions: list[DeletePod] = []
    for container in workload.containers:
        result = _decide_container(
            workload=workload,
            container=container,
            pods=pods,
            registries=registries,
            resolved=resolved,
            sightings=sightings,
            children=children,
            contents=contents if contents is not None else {},
            nodes=nodes if nodes is not None else {},
            settledness=settledness,
            already=actions[0] if actions else None,
            rolled_from=rolled_from,
            pinning=pinning,
        )
        if container.role is not ContainerRole.CONTAINER:
            result = replace(result, verdict=replace(result.verdict, role=container.role))
        results.append(result)
        if result.action is not None:
            actions.append(result.action)
    verdicts = tuple(r.verdict for r in results)
    judged = health_window(
        pods=pods,
        replacements=_replacements(verdicts, pods, sightings),
        window=health,
        min_ready_seconds=workload.min_ready_seconds,
        now=now,
    )
    if not judged.passed:
        # The last replacement must prove itself first: whatever was chosen waits.
        results = [_held_by_health(r, judged) for r in results]
        verdicts = tuple(r.verdict for r in results)
        actions = [r.action for r in results if r.action is not None]
    return Decision(
        namespace=workload.namespace,
        name=workload.name,
        settledness=settledness,
        containers=verdicts,
        actions=tuple(actions),
        needs_children=frozenset(c for r in results for c in r.needs.children),
        needs_content=frozenset(c for r in results for c in r.needs.content),
        kind=workload.kind,
        needs_nodes=frozenset(n for r in results for n in r.needs.nodes),
        health=judged,
    )


#: Verdicts of a container that got as far as choosing among its stale pods.
_CHOOSING = frozenset({Verdict.STALE, Verdict.WAITING, Verdict.NEEDS_NODES})
#: Waits a failed window replaces (it says more); the kind's holds stay what they are.
_WAITS_INSIDE = frozenset({Reason.STALE_POD, Reason.ONE_PER_TICK, Reason.NODES_NEEDED})


def _replacements(
    verdicts: Sequence[ContainerVerdict],
    pods: Sequence[PodView],
    sightings: Mapping[TagRef, Sighting],
) -> frozenset[str]:
    """The pods already running the target of a container that still has stale pods (the
    replacements of a roll under way, or pods that pulled the new content on their own),
    and those made after the target was first seen (a one-replica workload's replacement
    has no stale sibling, and its failure says as much of the new image)."""
    created = {p.name: p for p in pods}
    found: set[str] = set()
    for verdict in verdicts:
        on_target = [f for f in verdict.pods if f.state in RUNS_TARGET]
        if any(f.state is PodState.STALE for f in verdict.pods):
            found.update(f.pod for f in on_target)
            continue
        sighting = sightings.get(verdict.ref) if verdict.ref is not None else None
        if sighting is None or sighting.digest != verdict.registry_digest:
            continue
        found.update(
            f.pod
            for f in on_target
            if f.uid not in sighting.older_uids
            and f.pod in created
            and created[f.pod].created_at >= sighting.first_seen_at
        )
    return frozenset(found)


def _held_by_health(result: ContainerResult, health: Health) -> ContainerResult:
    """``result`` as it reads while the health window holds the workload: a chosen deletion
    (or a Node read for one) waits on it; a failed window replaces every wait of a stale pod."""
    verdict = result.verdict
    if verdict.verdict not in _CHOOSING:
        return result
    failed = health.state is HealthState.FAILED
    if not failed and verdict.reason not in _WAITS_INSIDE:
        return result  # not settled, or held by its kind: that wait comes first
    reason = Reason.FAILED_HEALTH_WINDOW if failed else Reason.HEALTH_WINDOW
    waiting = replace(verdict, verdict=Verdict.WAITING, reason=reason, detail=health.detail)
    return ContainerResult(waiting)


def undecided(workload: WorkloadView, detail: str) -> Decision:
    """The decision for a workload whose deciding raised: every container skipped as
    ``decision-failed`` with ``detail``, never settled, no action. One bad input (a manifest
    nested past every cap, a malformed object) makes its own workload unknown for the pass,
    never the pass's end (docs/adr/020-one-bad-input-stops-only-itself.md)."""
    return Decision(
        namespace=workload.namespace,
        name=workload.name,
        settledness=Settledness(SettledReason.NOT_JUDGED, detail),
        containers=tuple(
            ContainerVerdict(
                c.name,
                c.image,
                Verdict.SKIPPED,
                Reason.DECISION_FAILED,
                detail,
                role=c.role,
            )
            for c in workload.containers
        ),
        kind=workload.kind,
    )


def _decide_container(
    *,
    workload: WorkloadView,
    container: ContainerView,
    pods: Sequence[PodView],
    registries: Collection[str],
    resolved: Mapping[TagRef, Digest | Unknown],
    sightings: Mapping[TagRef, Sighting],
    children: Mapping[Digest, frozenset[Digest] | Unknown],
    contents: Mapping[Digest, ImageContent | Unknown],
    nodes: Mapping[str, NodeView | Unknown],
    settledness: Settledness,
    already: DeletePod | None,
    rolled_from: frozenset[str] | None,
    pinning: bool,
) -> ContainerResult:
    """One container's ladder; ``already`` is the deletion chosen for an earlier container."""
    found = _resolved_target(container, registries=registries, resolved=resolved, pinning=pinning)
    if isinstance(found, ContainerResult):
        return found
    ref, target = found
    index_children = children.get(target)
    findings = [
        compare_pod(
            pod,
            container,
            target=target,
            index_children=index_children,
            contents=contents,
            registries=registries,
        )
        for pod in pods
        if not pod.is_terminal
    ]
    ladder = Ladder(workload, container, ref, target, pods, findings)
    return (
        ladder.fetch_first(index_children, contents)
        or ladder.target_content_unknown(contents.get(target))
        or ladder.guarded_by(sightings.get(ref), rolled_from)
        or ladder.stale(settledness, already, nodes)
        or ladder.not_stale()
    )


def _resolved_target(
    container: ContainerView,
    *,
    registries: Collection[str],
    resolved: Mapping[TagRef, Digest | Unknown],
    pinning: bool,
) -> tuple[TagRef, Digest] | ContainerResult:
    """The container's tag and its target digest, or the SKIPPED result saying why there is
    no target to compare with (not autoroll's image, outside this pass, registry Unknown)."""
    name, image = container.name, container.image
    selection = select_container(container, registries=registries, pinning=pinning)
    if selection.ref is None:
        assert selection.reason is not None
        skipped = Verdict.SKIPPED
        return ContainerResult(
            ContainerVerdict(name, image, skipped, selection.reason, selection.detail)
        )
    ref = selection.ref
    target = resolved.get(ref)
    if target is None:
        # A targeted pass asked the registry about other tags only: nothing to say yet.
        return ContainerResult(
            ContainerVerdict(
                name,
                image,
                Verdict.SKIPPED,
                Reason.NOT_IN_SCOPE,
                f"this pass looks at other tags than {ref.repository}:{ref.tag}",
                ref,
            )
        )
    if isinstance(target, Unknown):
        # Unknown never means changed: skip this image until the registry answers.
        return ContainerResult(
            ContainerVerdict(
                name, image, Verdict.SKIPPED, Reason.REGISTRY_UNKNOWN, str(target), ref, target
            )
        )
    return ref, target
