"""One container's decision ladder: the rungs after each pod was compared with the target.

``autoroll.core.decide`` compares every pod (``autoroll.core.compare``) and hands the findings to a
``Ladder``; its rungs run in order and the first that answers decides: fetch what cannot be
judged yet (an index's children, then image configs), skip when the target's content is
unknown, apply the loop guard, then either choose the one stale pod to delete (in the order
its kind rolls, passing over pods its kind holds, reading DaemonSet Nodes first: see
``autoroll.core.kinds``) or wait, or say why nothing is deleted. Each answer is a
``ContainerResult``: the verdict, the deletion it chose, and what the shell must fetch. Pure.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from autoroll.core.compare import guard
from autoroll.core.decision import (
    ChildrenRequest,
    ContainerVerdict,
    ContentRequest,
    DeletePod,
    NodeRequest,
    PodFinding,
    PodState,
    Reason,
    Settledness,
    Sighting,
    Verdict,
)
from autoroll.core.images import TagRef
from autoroll.core.model import (
    ContainerView,
    Digest,
    ImageContent,
    NodeView,
    PodView,
    Unknown,
    WorkloadView,
)
from autoroll.core.victim import choose, deletion_order


@dataclass(frozen=True, slots=True)
class Needs:
    """What one container's ladder asks the shell to fetch before it can decide."""

    children: frozenset[ChildrenRequest] = frozenset()
    content: frozenset[ContentRequest] = frozenset()
    nodes: frozenset[NodeRequest] = frozenset()


_NOTHING = Needs()
#: Pods in these states are neither rolled nor counted as current.
_UNRESOLVED = frozenset({PodState.CONTENT_UNKNOWN, PodState.PLATFORM_UNKNOWN})
_RUNS_TARGET = frozenset(
    {PodState.CURRENT, PodState.CURRENT_CHILD, PodState.SAME_CONTENT, PodState.SAME_PLATFORM}
)


@dataclass(frozen=True, slots=True)
class ContainerResult:
    """One container's answer: its verdict, the deletion it chose, what it needs fetched."""

    verdict: ContainerVerdict
    action: DeletePod | None = None
    needs: Needs = _NOTHING


@dataclass(slots=True)
class Ladder:
    """The rungs after the comparison, in order; each answers or passes (None) to the next."""

    workload: WorkloadView
    container: ContainerView
    ref: TagRef
    target: Digest
    pods: Sequence[PodView]
    findings: list[PodFinding]

    def result(
        self,
        verdict: Verdict,
        reason: Reason,
        detail: str = "",
        pod: str | None = None,
        *,
        action: DeletePod | None = None,
        needs: Needs = _NOTHING,
    ) -> ContainerResult:
        """A result carrying this container's ref, target and (current) per-pod findings."""
        name, image = self.container.name, self.container.image
        found = tuple(self.findings)
        return ContainerResult(
            ContainerVerdict(
                name, image, verdict, reason, detail, self.ref, self.target, found, pod
            ),
            action,
            needs,
        )

    def with_state(self, *states: PodState) -> list[PodFinding]:
        return [f for f in self.findings if f.state in states]

    def fetch_first(
        self,
        index_children: frozenset[Digest] | Unknown | None,
        contents: Mapping[Digest, ImageContent | Unknown],
    ) -> ContainerResult | None:
        """Mismatches the core cannot judge yet: the index's children, then image configs."""
        if self.with_state(PodState.MISMATCH):
            if isinstance(index_children, Unknown):
                # Cannot tell a platform-child digest from a stale one: skip, never delete.
                return self.result(Verdict.SKIPPED, Reason.CHILDREN_UNKNOWN, str(index_children))
            # Only now is the index worth a GET; the shell fetches and asks again.
            return self.result(
                Verdict.NEEDS_CHILDREN,
                Reason.CHILDREN_NEEDED,
                f"fetch children of {self.target}",
                needs=Needs(children=frozenset({ChildrenRequest(self.ref, self.target)})),
            )
        needing = self.with_state(PodState.NEEDS_CONTENT)
        if not needing:
            return None
        # Neither the target nor a child by name: only the configs tell what the pod runs.
        wanted = set()
        if self.target not in contents:
            wanted.add(ContentRequest(self.ref.host, self.ref.repository, self.target))
        for finding in needing:
            running = finding.running
            assert running is not None
            if running.is_config or running.digest in contents:
                continue
            # Only a reference named on the configured host is ever left needing content.
            assert running.host is not None and running.repository is not None
            wanted.add(ContentRequest(running.host, running.repository, running.digest))
        return self.result(
            Verdict.NEEDS_CONTENT,
            Reason.CONTENT_NEEDED,
            f"resolve {len(wanted)} manifest(s) to their image configs",
            needs=Needs(content=frozenset(wanted)),
        )

    def target_content_unknown(
        self, target_content: ImageContent | Unknown | None
    ) -> ContainerResult | None:
        if isinstance(target_content, Unknown) and self.with_state(*_UNRESOLVED):
            # Same or other content cannot be told without the target's: skip, never delete.
            return self.result(
                Verdict.SKIPPED,
                Reason.TARGET_CONTENT_UNKNOWN,
                f"the image configs of {self.target.short} could not be resolved: {target_content}",
            )
        return None

    def guarded_by(
        self, sighting: Sighting | None, rolled_from: frozenset[str] | None = None
    ) -> ContainerResult | None:
        """The loop guard: without the target's first sighting no stale pod may go; with it,
        a stale pod that may replace one autoroll deleted is spared (``compare.guard``)."""
        if sighting is None or sighting.digest != self.target:
            if self.with_state(PodState.STALE):
                # Without the first-seen time the loop guard cannot work: the safe answer is no.
                return self.result(
                    Verdict.SKIPPED, Reason.SIGHTING_MISSING, f"no sighting of {self.target}"
                )
            return None
        self.findings = [guard(f, self.pods, sighting, rolled_from) for f in self.findings]
        return None

    def stale(
        self,
        settledness: Settledness,
        already: DeletePod | None,
        nodes: Mapping[str, NodeView | Unknown],
    ) -> ContainerResult | None:
        stale = self.with_state(PodState.STALE)
        if not stale:
            return None
        stale_names = {f.pod for f in stale}
        candidates = deletion_order(self.workload, [p for p in self.pods if p.name in stale_names])
        first = candidates[0].name
        if not settledness.is_settled:
            # The previous replacement (or its controller) must settle first.
            return self.result(Verdict.WAITING, Reason.NOT_SETTLED, settledness.detail, first)
        if already is not None:
            if already.name in stale_names:
                # The pod chosen for another container is stale here too: one deletion serves both.
                return self.result(Verdict.STALE, Reason.STALE_POD, "", already.name)
            # At most one deletion per workload per tick.
            return self.result(
                Verdict.WAITING, Reason.ONE_PER_TICK, f"{already.name} goes first", first
            )
        choice = choose(workload=self.workload, candidates=candidates, nodes=nodes)
        if choice.needs:
            # A DaemonSet pod goes only once its Node is known Ready: the shell reads it first.
            names = ", ".join(n.name for n in choice.needs)
            return self.result(
                Verdict.NEEDS_NODES,
                Reason.NODES_NEEDED,
                f"read node(s) {names}",
                needs=Needs(nodes=frozenset(choice.needs)),
            )
        victim = choice.victim
        if victim is None:
            # Every candidate is held: by its revision (a template change to release) or its node.
            held = choice.holds[0]
            detail = "; ".join(h.detail for h in choice.holds)
            return self.result(Verdict.WAITING, held.reason, detail, held.pod)
        from_digest = next(f.digest for f in stale if f.pod == victim.name)
        assert isinstance(from_digest, Digest)
        name = self.container.name
        action = DeletePod(
            namespace=victim.namespace,
            name=victim.name,
            uid=victim.uid,
            reason=f"{Reason.STALE_POD}: {name} runs {from_digest.short},"
            f" {self.ref} is {self.target.short}",
            image=self.container.image,
            from_digest=from_digest,
            to_digest=self.target,
            workload=self.workload.name,
            container=name,
            kind=self.workload.kind,
        )
        return self.result(Verdict.STALE, Reason.STALE_POD, "", victim.name, action=action)

    def not_stale(self) -> ContainerResult:
        """Nothing to delete: spared by the loop guard, unknown, current, or not comparable."""
        guarded = self.with_state(PodState.LOOP_GUARD)
        if guarded:
            # The runtime reports another digest for a pod that must have pulled the new one.
            pods_text = ", ".join(f.pod for f in guarded)
            return self.result(
                Verdict.LOOP_GUARD, Reason.CREATED_AFTER_TARGET, f"not deleting {pods_text}"
            )
        unresolved = self.with_state(*_UNRESOLVED)
        if unresolved:
            # What these pods run cannot be told: not rolled, and not counted as current either.
            reason = (
                Reason.CONTENT_UNKNOWN
                if self.with_state(PodState.CONTENT_UNKNOWN)
                else Reason.PLATFORM_UNKNOWN
            )
            detail = "; ".join(f"{f.pod}: {f.note}" for f in unresolved)
            return self.result(Verdict.SKIPPED, reason, detail)
        if self.with_state(*_RUNS_TARGET):
            # Includes a new image that crash-loops: it matches, so it is never deleted again.
            return self.result(
                Verdict.CURRENT, Reason.UP_TO_DATE, _same_content_text(self.findings)
            )
        # Nothing comparable yet: pods still pulling, or only pods of an older template.
        return self.result(
            Verdict.SKIPPED, Reason.NO_COMPARABLE_POD, "no pod of this template has a digest"
        )


def _same_content_text(findings: Sequence[PodFinding]) -> str:
    """Names the pods that run the target's content under another name, and those names;
    and the pods whose node's platform has the same image in the target (only other
    platforms changed)."""
    parts = []
    same = [f for f in findings if f.state is PodState.SAME_CONTENT and f.running is not None]
    if same:
        pods = ", ".join(f.pod for f in same)
        names = ", ".join(sorted({f.running.reference for f in same if f.running is not None}))
        parts.append(f"{pods}: the target's content under another name ({names})")
    platform = [f for f in findings if f.state is PodState.SAME_PLATFORM]
    if platform:
        pods = ", ".join(f.pod for f in platform)
        parts.append(f"{pods}: only other platforms changed (their node's image is the same)")
    return "; ".join(parts)
