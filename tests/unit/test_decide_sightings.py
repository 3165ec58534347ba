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
from tests.support import decide_cases as cases


def test_refs_to_resolve_dedups_and_filters() -> None:
    deps = [
        cases.deployment(ContainerView("app", cases.IMAGE, "Always"), name="one"),
        cases.deployment(
            ContainerView("app", f"{cases.HOST}/team/app", "Always"),  # same ref, default tag
            ContainerView("side", cases.SIDE_IMAGE, "Always"),
            ContainerView("pinned", f"{cases.HOST}/team/app@{cases.OLD}", "Always"),
            ContainerView("never", f"{cases.HOST}/team/other:latest", "IfNotPresent"),
            ContainerView("hub", "nginx:latest", "Always"),
            name="two",
        ),
    ]
    assert refs_to_resolve(deps, registries={cases.HOST}) == {cases.REF, cases.SIDE_REF}


def test_with_pinning_an_if_not_present_tag_is_resolved_too_never_is_not() -> None:
    """Pinned at admission, an ``IfNotPresent`` replacement runs the digest (docs/adr/028)."""
    other = f"{cases.HOST}/team/other:latest"
    dep = cases.deployment(
        ContainerView("cached", other, "IfNotPresent"),
        ContainerView("never", cases.SIDE_IMAGE, "Never"),
        name="pinned",
    )
    assert refs_to_resolve([dep], registries={cases.HOST}) == set()
    assert refs_to_resolve([dep], registries={cases.HOST}, pinning=True) == {
        TagRef(cases.HOST, "team/other", "latest")
    }


def test_listed_uids_follow_pinning_for_an_if_not_present_container() -> None:
    cached = cases.deployment(ContainerView("app", cases.IMAGE, "IfNotPresent"), name="cached")
    snapshot = [(cached, [cases.pod("a")])]
    assert listed_uids(snapshot, registries={cases.HOST}) == {}
    assert listed_uids(snapshot, registries={cases.HOST}, pinning=True) == {
        cases.REF: frozenset({"uid-a"})
    }


def test_observe_targets_remembers_first_sighting() -> None:
    now = cases.SEEN
    memory = observe_targets({}, {cases.REF: cases.NEW}, now=now)
    assert memory == {cases.REF: Sighting(cases.NEW, now)}
    later = observe_targets(memory, {cases.REF: cases.NEW}, now=now + timedelta(hours=1))
    assert later == {cases.REF: Sighting(cases.NEW, now)}, "same digest keeps its first sighting"


def test_observe_targets_unknown_keeps_previous_and_moves_reset() -> None:
    memory = {cases.REF: Sighting(cases.OLD, cases.T0)}
    assert observe_targets(memory, {cases.REF: Unknown("timeout")}, now=cases.SEEN) == memory
    assert observe_targets({}, {cases.REF: Unknown("timeout")}, now=cases.SEEN) == {}
    moved = observe_targets(memory, {cases.REF: cases.NEW}, now=cases.SEEN)
    assert moved == {cases.REF: Sighting(cases.NEW, cases.SEEN)}
    # Moving back to an older digest is a new sighting, so intermediate pods can be replaced.
    back = observe_targets(moved, {cases.REF: cases.OLD}, now=cases.AFTER)
    assert back == {cases.REF: Sighting(cases.OLD, cases.AFTER)}


def test_observe_targets_forgets_unenrolled_refs() -> None:
    memory = {
        cases.REF: Sighting(cases.NEW, cases.SEEN),
        cases.SIDE_REF: Sighting(cases.NEW, cases.SEEN),
    }
    assert observe_targets(memory, {cases.REF: cases.NEW}, now=cases.AFTER) == {
        cases.REF: Sighting(cases.NEW, cases.SEEN)
    }


def test_observe_targets_remembers_the_pods_listed_at_a_first_sighting_only() -> None:
    listed = {cases.REF: frozenset({"uid-a", "uid-b"}), cases.SIDE_REF: frozenset({"uid-s"})}
    memory = observe_targets({}, {cases.REF: cases.NEW}, now=cases.SEEN, listed=listed)
    assert memory == {cases.REF: Sighting(cases.NEW, cases.SEEN, frozenset({"uid-a", "uid-b"}))}, (
        "only refs asked"
    )

    # The same digest again: the set is the sighting's, never extended by later listings
    # (a replacement listed now was created after the sighting).
    later = observe_targets(
        memory,
        {cases.REF: cases.NEW},
        now=cases.AFTER,
        listed={cases.REF: frozenset({"uid-b", "uid-r"})},
    )
    assert later == memory
    # Unknown keeps the sighting with its set.
    assert (
        observe_targets(later, {cases.REF: Unknown("timeout")}, now=cases.AFTER, listed={})
        == memory
    )


def test_observe_targets_replaces_the_pods_when_the_digest_moves() -> None:
    memory = {cases.REF: Sighting(cases.NEW, cases.SEEN, frozenset({"uid-a", "uid-b"}))}
    moved = observe_targets(
        memory,
        {cases.REF: cases.OTHER},
        now=cases.AFTER,
        listed={cases.REF: frozenset({"uid-b", "uid-r"})},
    )
    assert moved == {cases.REF: Sighting(cases.OTHER, cases.AFTER, frozenset({"uid-b", "uid-r"}))}
    # Nothing listed for the ref (say its only Deployment has no pods): an empty set.
    assert observe_targets(memory, {cases.REF: cases.OTHER}, now=cases.AFTER) == {
        cases.REF: Sighting(cases.OTHER, cases.AFTER)
    }


def test_observe_targets_forgets_the_pods_of_unenrolled_refs() -> None:
    memory = {
        cases.REF: Sighting(cases.NEW, cases.SEEN, frozenset({"uid-a"})),
        cases.SIDE_REF: Sighting(cases.NEW, cases.SEEN, frozenset({"uid-s"})),
    }
    after = observe_targets(
        memory, {cases.SIDE_REF: cases.NEW}, now=cases.AFTER, listed={cases.REF: frozenset({"x"})}
    )
    assert after == {cases.SIDE_REF: Sighting(cases.NEW, cases.SEEN, frozenset({"uid-s"}))}


def test_listed_uids_groups_pod_uids_by_the_refs_their_deployment_uses() -> None:
    both = cases.deployment(
        ContainerView("app", cases.IMAGE, "Always"),
        ContainerView("side", cases.SIDE_IMAGE, "Always"),
    )
    app_only = cases.deployment(name="other")
    ignored = cases.deployment(ContainerView("app", "nginx:latest", "Always"), name="hub")
    snapshot = [
        (both, [cases.pod("a"), cases.pod("b"), replace(cases.pod("nameless"), uid="")]),
        (app_only, [cases.pod("c")]),
        (ignored, [cases.pod("h")]),
        (cases.deployment(name="empty"), []),
    ]
    assert listed_uids(snapshot, registries={cases.HOST}) == {
        cases.REF: frozenset({"uid-a", "uid-b", "uid-c"}),
        cases.SIDE_REF: frozenset({"uid-a", "uid-b"}),
    }


def test_observe_targets_requires_aware_time() -> None:
    with pytest.raises(ValueError, match=r"^now must be timezone-aware$"):
        observe_targets({}, {}, now=datetime(2026, 1, 1))
