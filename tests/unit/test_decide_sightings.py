"""Which references a pass resolves, and the sightings it remembers of their targets (first seen,
the pods listed then, forgotten when no longer enrolled).
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta

import pytest

from autoroll.core.decide import Sighting
from autoroll.core.images import TagRef
from autoroll.core.model import ContainerView, Unknown
from autoroll.core.selection import refs_to_resolve
from autoroll.core.sightings import listed_uids, observe_targets
from tests.support.decide_cases import (
    AFTER,
    HOST,
    IMAGE,
    NEW,
    OLD,
    OTHER,
    REF,
    SEEN,
    SIDE_IMAGE,
    SIDE_REF,
    T0,
    deployment,
    pod,
)


def test_refs_to_resolve_dedups_and_filters() -> None:
    deps = [
        deployment(ContainerView("app", IMAGE, "Always"), name="one"),
        deployment(
            ContainerView("app", f"{HOST}/team/app", "Always"),  # same ref, default tag
            ContainerView("side", SIDE_IMAGE, "Always"),
            ContainerView("pinned", f"{HOST}/team/app@{OLD}", "Always"),
            ContainerView("never", f"{HOST}/team/other:latest", "IfNotPresent"),
            ContainerView("hub", "nginx:latest", "Always"),
            name="two",
        ),
    ]
    assert refs_to_resolve(deps, registries={HOST}) == {REF, SIDE_REF}


def test_with_pinning_an_if_not_present_tag_is_resolved_too_never_is_not() -> None:
    """Pinned at admission, an ``IfNotPresent`` replacement runs the digest (docs/adr/028)."""
    other = f"{HOST}/team/other:latest"
    dep = deployment(
        ContainerView("cached", other, "IfNotPresent"),
        ContainerView("never", SIDE_IMAGE, "Never"),
        name="pinned",
    )
    assert refs_to_resolve([dep], registries={HOST}) == set()
    assert refs_to_resolve([dep], registries={HOST}, pinning=True) == {
        TagRef(HOST, "team/other", "latest")
    }


def test_listed_uids_follow_pinning_for_an_if_not_present_container() -> None:
    cached = deployment(ContainerView("app", IMAGE, "IfNotPresent"), name="cached")
    snapshot = [(cached, [pod("a")])]
    assert listed_uids(snapshot, registries={HOST}) == {}
    assert listed_uids(snapshot, registries={HOST}, pinning=True) == {REF: frozenset({"uid-a"})}


def test_observe_targets_remembers_first_sighting() -> None:
    now = SEEN
    memory = observe_targets({}, {REF: NEW}, now=now)
    assert memory == {REF: Sighting(NEW, now)}
    later = observe_targets(memory, {REF: NEW}, now=now + timedelta(hours=1))
    assert later == {REF: Sighting(NEW, now)}, "same digest keeps its first sighting"


def test_observe_targets_unknown_keeps_previous_and_moves_reset() -> None:
    memory = {REF: Sighting(OLD, T0)}
    assert observe_targets(memory, {REF: Unknown("timeout")}, now=SEEN) == memory
    assert observe_targets({}, {REF: Unknown("timeout")}, now=SEEN) == {}
    moved = observe_targets(memory, {REF: NEW}, now=SEEN)
    assert moved == {REF: Sighting(NEW, SEEN)}
    # Moving back to an older digest is a new sighting, so intermediate pods can be replaced.
    back = observe_targets(moved, {REF: OLD}, now=AFTER)
    assert back == {REF: Sighting(OLD, AFTER)}


def test_observe_targets_forgets_unenrolled_refs() -> None:
    memory = {REF: Sighting(NEW, SEEN), SIDE_REF: Sighting(NEW, SEEN)}
    assert observe_targets(memory, {REF: NEW}, now=AFTER) == {REF: Sighting(NEW, SEEN)}


def test_observe_targets_remembers_the_pods_listed_at_a_first_sighting_only() -> None:
    listed = {REF: frozenset({"uid-a", "uid-b"}), SIDE_REF: frozenset({"uid-s"})}
    memory = observe_targets({}, {REF: NEW}, now=SEEN, listed=listed)
    assert memory == {REF: Sighting(NEW, SEEN, frozenset({"uid-a", "uid-b"}))}, "only refs asked"

    # The same digest again: the set is the sighting's, never extended by later listings
    # (a replacement listed now was created after the sighting).
    later = observe_targets(
        memory, {REF: NEW}, now=AFTER, listed={REF: frozenset({"uid-b", "uid-r"})}
    )
    assert later == memory
    # Unknown keeps the sighting with its set.
    assert observe_targets(later, {REF: Unknown("timeout")}, now=AFTER, listed={}) == memory


def test_observe_targets_replaces_the_pods_when_the_digest_moves() -> None:
    memory = {REF: Sighting(NEW, SEEN, frozenset({"uid-a", "uid-b"}))}
    moved = observe_targets(
        memory, {REF: OTHER}, now=AFTER, listed={REF: frozenset({"uid-b", "uid-r"})}
    )
    assert moved == {REF: Sighting(OTHER, AFTER, frozenset({"uid-b", "uid-r"}))}
    # Nothing listed for the ref (say its only Deployment has no pods): an empty set.
    assert observe_targets(memory, {REF: OTHER}, now=AFTER) == {REF: Sighting(OTHER, AFTER)}


def test_observe_targets_forgets_the_pods_of_unenrolled_refs() -> None:
    memory = {
        REF: Sighting(NEW, SEEN, frozenset({"uid-a"})),
        SIDE_REF: Sighting(NEW, SEEN, frozenset({"uid-s"})),
    }
    after = observe_targets(memory, {SIDE_REF: NEW}, now=AFTER, listed={REF: frozenset({"x"})})
    assert after == {SIDE_REF: Sighting(NEW, SEEN, frozenset({"uid-s"}))}


def test_listed_uids_groups_pod_uids_by_the_refs_their_deployment_uses() -> None:
    both = deployment(
        ContainerView("app", IMAGE, "Always"), ContainerView("side", SIDE_IMAGE, "Always")
    )
    app_only = deployment(name="other")
    ignored = deployment(ContainerView("app", "nginx:latest", "Always"), name="hub")
    snapshot = [
        (both, [pod("a"), pod("b"), replace(pod("nameless"), uid="")]),
        (app_only, [pod("c")]),
        (ignored, [pod("h")]),
        (deployment(name="empty"), []),
    ]
    assert listed_uids(snapshot, registries={HOST}) == {
        REF: frozenset({"uid-a", "uid-b", "uid-c"}),
        SIDE_REF: frozenset({"uid-a", "uid-b"}),
    }


def test_observe_targets_requires_aware_time() -> None:
    with pytest.raises(ValueError, match=r"^now must be timezone-aware$"):
        observe_targets({}, {}, now=datetime(2026, 1, 1))
