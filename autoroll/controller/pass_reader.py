"""What a pass reads, in the order the loop guard needs: the cluster, the clock, the registry.

A pass lists the cluster first, then reads the sighting clock, then asks the registry, and
deletes only after that. So every pod in the listing predates any digest the pass sees for
the first time (the sighting remembers their UIDs), and every replacement of a pod this or a
later pass deletes is created after the sighting (its UID is not remembered, and even
rounded down to a whole second its creationTimestamp is less than a second before it).

The cluster port finds the work (from a watched cache when it has one) and answers a
targeted scope with every enrolled workload using a repository it names; the reader keeps
those using a named tag and asks the registry about the named tags only, in turns across
namespaces (``autoroll.core.tenancy``), each with the credentials its workloads' pods pull
with (``RegistryAsk``). So every tag a pass resolves was listed with every workload that
uses it, and the sighting it records is as exact as a full pass's; a targeted pass leaves
every other tag's sighting alone (``observe_targets(partial=True)``).

At the end of a pass each target's image configs are resolved once, while the registry still
holds the manifest (``remember_targets``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Mapping, Sequence
from datetime import datetime

from autoroll.controller.lookups import RegistryAsk
from autoroll.core.decide import ContentRequest, Sighting
from autoroll.core.images import TagRef
from autoroll.core.lookups import Resolution
from autoroll.core.model import Digest, Enrolled, ImageContent, Unknown
from autoroll.core.ports import ClusterPort, RegistryPort
from autoroll.core.scope import Scope
from autoroll.core.selection import refs_to_resolve
from autoroll.core.sightings import listed_uids, observe_targets
from autoroll.core.tenancy import fair_order

#: The pass's lines keep the logger name they always had: log queries select on it.
log = logging.getLogger("autoroll.controller.reconciler")


class PassReader:
    """Reads a pass's scope from the cluster and its tags from the registry (module docstring)."""

    def __init__(
        self,
        *,
        cluster: ClusterPort,
        registry: RegistryPort,
        registry_ask: RegistryAsk,
        registries: Collection[str],
        clock: Callable[[], datetime],
        pinning: bool,
        lookups_per_namespace: int,
    ) -> None:
        self._cluster = cluster
        self._registry = registry
        self._registry_ask = registry_ask
        self._registries = frozenset(registries)
        self._clock = clock
        self._pinning = pinning
        self._lookups_per_namespace = lookups_per_namespace  # 0: no share (autoroll.core.tenancy)

    def read(
        self, scope: Scope, sightings: Mapping[TagRef, Sighting]
    ) -> tuple[tuple[Enrolled, ...], Resolution, dict[TagRef, Sighting]]:
        """The listing, then the sighting clock, then the registry (module docstring); with
        the loop-guard memory that follows from them."""
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
        observed = observe_targets(
            sightings,
            resolution.by_ref,
            now=seen_at,
            listed=listed,
            partial=not scope.is_full,
        )
        return enrolled, resolution, observed

    def _in_scope(self, listing: Sequence[Enrolled], scope: Scope) -> list[Enrolled]:
        """The workloads of ``listing`` that use a tag of ``scope`` (all, for a full one)."""
        if scope.is_full:
            return list(listing)
        return [item for item in listing if any(scope.covers(ref) for ref in self._refs(item))]

    def _refs(self, item: Enrolled) -> set[TagRef]:
        return refs_to_resolve([item.workload], registries=self._registries, pinning=self._pinning)

    def remember_targets(
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
