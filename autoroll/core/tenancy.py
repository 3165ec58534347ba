"""Fair shares of a pass's registry lookups across namespaces (pure).

A pass asks the registry about every tag its workloads use, within a time budget
(``registry.limits.Limits.budget_seconds``) and a back-off after a 429. One tenant that
enrols thousands of tags, or tags on a slow repository, would spend that budget before the
others' tags were asked, and their rolls would stall on ``Unknown``. So the tags are asked in
turns, namespace by namespace (each namespace's next tag in its turn), and a namespace's
tags beyond its share (``REGISTRY_LOOKUPS_PER_NAMESPACE``) are not asked at all that pass:
they are unknown, with a reason that says so. A tag several namespaces use is asked in the
first turn of any of them that is within its share.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Final

from autoroll.core.images import TagRef
from autoroll.core.model import Unknown

#: The reason of a tag left unasked because its namespaces spent their share.
NAMESPACE_SHARE: Final = "namespace-share"


def fair_order(
    uses: Mapping[str, Iterable[TagRef]], *, per_namespace: int
) -> tuple[list[TagRef], dict[TagRef, Unknown]]:
    """The tags to ask, in turns across the namespaces of ``uses`` (namespace → the tags its
    workloads use), and those left unasked, each with its ``Unknown``. ``per_namespace``: the
    most tags asked for one namespace (0: no share)."""
    queues = {ns: sorted(set(refs)) for ns, refs in sorted(uses.items())}
    order: list[TagRef] = []
    asked: set[TagRef] = set()
    turn = 0
    while any(turn < len(q) for q in queues.values()):
        if per_namespace and turn >= per_namespace:
            break
        for refs in queues.values():
            if turn < len(refs) and refs[turn] not in asked:
                asked.add(refs[turn])
                order.append(refs[turn])
        turn += 1
    left: dict[TagRef, Unknown] = {}
    for ns, refs in queues.items():
        for ref in refs:
            if ref not in asked and ref not in left:
                left[ref] = Unknown(
                    NAMESPACE_SHARE,
                    f"namespace {ns} uses {len(refs)} tags, more than its share of"
                    f" {per_namespace} registry lookups a pass (REGISTRY_LOOKUPS_PER_NAMESPACE)",
                )
    return order, left


__all__ = ["NAMESPACE_SHARE", "fair_order"]
