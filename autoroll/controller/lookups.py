"""Asking the registries about a pass's tags, each with the credentials its pods pull with.

The pass's order of tags (in turns across namespaces, ``autoroll.core.tenancy``) becomes
lookups: per tag, one per distinct set of pull credentials among the workloads using it
(``autoroll.controller.credentials``; without pull secrets, one per tag), asked of a
registry that takes lookups (``LookupPort``: the ``RegistryPool``), else by tag. The
answers are merged per tag and per workload (``autoroll.core.lookups.merge_answers``); an
Unknown of a workload whose pull secrets were partly missing says which.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

from autoroll.controller.credentials import PullCredentials, explained
from autoroll.core.images import TagRef
from autoroll.core.lookups import Answer, Lookup, Resolution, merge_answers
from autoroll.core.model import Enrolled, Unknown
from autoroll.core.ports import LookupPort, RegistryPort
from autoroll.core.scope import Scope
from autoroll.core.selection import refs_to_resolve


class RegistryAsk:
    """One pass's registry step (module docstring)."""

    def __init__(
        self,
        *,
        registry: RegistryPort,
        registries: Collection[str],
        credentials: PullCredentials | None = None,
        pinning: bool = False,
    ) -> None:
        self._registry = registry
        self._registries = frozenset(registries)
        self._credentials = credentials
        self._pinning = pinning

    def ask(
        self,
        enrolled: Sequence[Enrolled],
        *,
        scope: Scope,
        order: Sequence[TagRef],
        unasked: Mapping[TagRef, Unknown],
    ) -> Resolution:
        """The answers for ``order``'s tags (``unasked`` ones are their Unknown)."""
        asked, notes = self._lookups(enrolled, scope)
        wanted = set(order)
        by_ref: dict[TagRef, list[Lookup]] = {}
        for lookups in asked.values():
            for ref, lookup in lookups.items():
                if ref in wanted and isinstance(lookup, Lookup):
                    by_ref.setdefault(ref, [])
                    if lookup not in by_ref[ref]:
                        by_ref[ref].append(lookup)
        ordered = [lookup for ref in order for lookup in by_ref.get(ref, ())]
        answers = self._answers(ordered) if ordered else {}
        resolution = merge_answers(asked, answers, unasked=unasked)
        for key, said in notes.items():
            for ref in asked.get(key, {}):
                value = resolution.for_workload(key).get(ref)
                if isinstance(value, Unknown):
                    resolution.by_workload.setdefault(key, {})[ref] = explained(value, said)
        return resolution

    def _lookups(
        self, enrolled: Sequence[Enrolled], scope: Scope
    ) -> tuple[dict[str, dict[TagRef, Lookup | Unknown]], dict[str, tuple[str, ...]]]:
        workloads = [item.workload for item in enrolled]
        if self._credentials is not None:
            asked, notes = self._credentials.lookups(
                workloads, registries=self._registries, pinning=self._pinning
            )
        else:
            asked = {
                w.key: {
                    ref: Lookup(ref)
                    for ref in refs_to_resolve(
                        [w], registries=self._registries, pinning=self._pinning
                    )
                }
                for w in workloads
            }
            notes = {}
        in_scope = {
            key: {ref: v for ref, v in lookups.items() if scope.covers(ref)}
            for key, lookups in asked.items()
        }
        return in_scope, notes

    def _answers(self, lookups: Sequence[Lookup]) -> Mapping[Lookup, Answer]:
        if isinstance(self._registry, LookupPort):
            return self._registry.lookup(lookups)
        refs = list(dict.fromkeys(lookup.ref for lookup in lookups))
        resolved = self._registry.resolve(refs)
        return {
            lookup: Answer(resolved.get(lookup.ref, Unknown("not-asked", "no answer")))
            for lookup in lookups
        }


__all__ = ["RegistryAsk"]
