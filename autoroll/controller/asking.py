"""Deciding one workload, and answering in between what ``decide`` asks for.

``decide`` may ask three times before it decides (reconciler's module docstring): for the
children of a target index, for the image configs both sides stand for, and for the Nodes
of a DaemonSet's candidates. Every request is answered, ``Unknown`` when it cannot be, and
the answers go into the pass's ``PassState``, so a request is never repeated and the pass's
later workloads (fresh reads included) share them. Kept out of the reconciler so the pass
there reads as its steps only.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from datetime import datetime

from autoroll.core.decide import Decision, Sighting, decide, undecided
from autoroll.core.health import OFF, HealthWindow
from autoroll.core.images import TagRef
from autoroll.core.model import Digest, Enrolled, ImageContent, NodeView, Unknown
from autoroll.core.ports import NodePort, RegistryPort

#: ``decide`` asks for an index's children, then image configs, then Nodes: three at most.
FETCH_ROUNDS = 3

Children = dict[Digest, frozenset[Digest] | Unknown]
Contents = dict[Digest, ImageContent | Unknown]
Nodes = dict[str, NodeView | Unknown]

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class PassState:
    """What a pass resolved and fetched, shared by its later decisions (fresh ones too)."""

    resolved: Mapping[TagRef, Digest | Unknown]
    children: Children
    contents: Contents
    nodes: Nodes  # this pass's Node reads only: readiness changes
    #: by workload key, its own answers where its pull credentials got another than the
    #: tag's (autoroll.core.lookups.Resolution)
    own: Mapping[str, Mapping[TagRef, Digest | Unknown]] = field(default_factory=dict)

    def resolved_for(self, key: str) -> Mapping[TagRef, Digest | Unknown]:
        """The answers the workload ``key`` decides on."""
        mine = self.own.get(key)
        return {**self.resolved, **mine} if mine else self.resolved


class Asker:
    """Runs ``decide`` for one workload, fetching what it asks for between the runs."""

    def __init__(
        self, *, registry: RegistryPort, nodes: NodePort | None, registries: Collection[str]
    ) -> None:
        self._registry = registry
        self._nodes = nodes
        self._registries = frozenset(registries)

    def decide(
        self,
        item: Enrolled,
        state: PassState,
        sightings: Mapping[TagRef, Sighting],
        *,
        now: datetime | None = None,
        rolled_from: frozenset[str] | None = None,
        health: HealthWindow = OFF,
    ) -> Decision:
        """Decide, fetching what ``decide`` asks for (children, content, Nodes) in between;
        ``now``, ``rolled_from`` and ``health`` are passed on to ``decide``.

        Whatever raises while this workload is decided (a bug, an input no cap foresaw) is
        this workload's: logged once with its name and traceback, and its decision is
        ``undecided`` (every container ``decision-failed``, no action), so the pass goes on
        for every other workload (docs/adr/020-one-bad-input-stops-only-itself.md).
        """
        try:
            return self._decide(
                item, state, sightings, now=now, rolled_from=rolled_from, health=health
            )
        except Exception as exc:
            key = item.workload.key
            log.exception(
                "%s: deciding raised %s; this workload is unknown this pass, the others go on",
                key,
                type(exc).__name__,
                extra={"event": "decision-failed", "workload": key},
            )
            # The detail repeats in each container's line every pass: kept short.
            detail = f"deciding raised {type(exc).__name__}: {str(exc)[:300]}"
            return undecided(item.workload, detail)

    def _decide(
        self,
        item: Enrolled,
        state: PassState,
        sightings: Mapping[TagRef, Sighting],
        *,
        now: datetime | None,
        rolled_from: frozenset[str] | None,
        health: HealthWindow,
    ) -> Decision:
        def run() -> Decision:
            return decide(
                workload=item.workload,
                pods=item.pods,
                registries=self._registries,
                resolved=state.resolved_for(item.workload.key),
                sightings=sightings,
                children=state.children,
                contents=state.contents,
                nodes=state.nodes,
                now=now,
                rolled_from=rolled_from,
                health=health,
            )

        decision = run()
        for _ in range(FETCH_ROUNDS):
            if not decision.needs_anything:
                break
            self._fetch(decision, state.children, state.contents)
            self._read_nodes(decision, state.nodes)
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
