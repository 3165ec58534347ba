"""``decide`` on the decision table's scene (``tests.support.decide_cases``): the app Deployment,
``REF`` resolved to ``NEW`` and first seen at ``SEEN``, ``NEW`` a plain manifest (no children),
each digest its own content. Tests that call ``decide`` directly name only what differs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime

from autoroll.core.decide import Decision, Sighting, decide
from autoroll.core.health import OFF, HealthWindow
from autoroll.core.images import TagRef
from autoroll.core.model import Digest, ImageContent, PodView, Unknown, WorkloadView
from tests.support.decide_cases import HOST, NEW, OWN_CONTENT, REF, SEEN, deployment


def decide_app(
    pods: Sequence[PodView],
    *,
    workload: WorkloadView | None = None,
    resolved: Mapping[TagRef, Digest | Unknown] | None = None,
    sightings: Mapping[TagRef, Sighting] | None = None,
    children: Mapping[Digest, frozenset[Digest] | Unknown] | None = None,
    contents: Mapping[Digest, ImageContent | Unknown] = OWN_CONTENT,
    now: datetime | None = None,
    rolled_from: frozenset[str] | None = None,
    health: HealthWindow = OFF,
    registries: frozenset[str] = frozenset({HOST}),
) -> Decision:
    """``decide`` for ``pods`` of ``workload`` (default: ``deployment()``, two replicas), with
    ``registries`` enrolled (default: only ``HOST``); each argument left out is the scene's."""
    return decide(
        workload=workload if workload is not None else deployment(),
        pods=pods,
        registries=registries,
        resolved=resolved if resolved is not None else {REF: NEW},
        sightings=sightings if sightings is not None else {REF: Sighting(NEW, SEEN)},
        children=children if children is not None else {NEW: frozenset()},
        contents=contents,
        now=now,
        rolled_from=rolled_from,
        health=health,
    )
