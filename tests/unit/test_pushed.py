"""From what a webhook says was pushed to the scope of a pass: ``autoroll.core.pushed``."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from autoroll.core.images import canonical_repository, registry_host
from autoroll.core.pushed import Pushed, elsewhere, tags_of
from autoroll.core.scope import FULL, MAX_TAGS, ImageTag, Scope

REGISTRY = "registry.example.org:5000"


@pytest.mark.parametrize(
    ("pushes", "expected"),
    [
        # The host as the body names it, in any of its spellings.
        (
            [Pushed(REGISTRY, "team/app", "latest")],
            Scope.of([ImageTag.named(REGISTRY, "team/app", "latest")]),
        ),
        (
            [Pushed("REGISTRY.example.org:5000", "Team/App", "v1")],
            Scope.of([ImageTag.named(REGISTRY, "team/app", "v1")]),
        ),
        # A push naming no host is on the source's own registry (the default host).
        (
            [Pushed(None, "team/app", "latest")],
            Scope.of([ImageTag.named(REGISTRY, "team/app", "latest")]),
        ),
        # Another host, a push by digest, a name that is no repository: nothing.
        ([Pushed("ghcr.io", "team/app", "latest")], Scope.of([])),
        ([Pushed(REGISTRY, "team/app", None)], Scope.of([])),
        ([Pushed(REGISTRY, "Team App", "latest")], Scope.of([])),
        ([Pushed(REGISTRY, "team/app", "not a tag")], Scope.of([])),
        # Several pushes: each on a host autoroll reads.
        (
            [
                Pushed(REGISTRY, "a", "1"),
                Pushed("docker.io", "nginx", "latest"),
                Pushed(REGISTRY, "b", "2"),
            ],
            Scope.of([ImageTag.named(REGISTRY, "a", "1"), ImageTag.named(REGISTRY, "b", "2")]),
        ),
    ],
)
def test_tags_of_keeps_the_tag_pushes_on_a_registry_autoroll_reads(
    pushes: list[Pushed], expected: Scope
) -> None:
    assert tags_of(pushes, hosts=[REGISTRY], default_host=REGISTRY) == expected


def test_docker_hub_pushes_are_read_when_docker_hub_is_a_registry_autoroll_reads() -> None:
    pushes = [Pushed("index.docker.io", "nginx", "1.27"), Pushed("docker.io", "a/b", "x")]
    assert tags_of(pushes, hosts=["docker.io"]) == Scope.of(
        [
            ImageTag.named("docker.io", "library/nginx", "1.27"),
            ImageTag.named("docker.io", "a/b", "x"),
        ]
    )


def test_a_push_naming_no_host_without_a_default_host_is_on_no_registry_autoroll_reads() -> None:
    assert tags_of([Pushed(None, "team/app", "v2")], hosts=[REGISTRY]) == Scope.of([])


def test_more_tags_than_a_scope_holds_make_a_full_pass() -> None:
    pushes = [Pushed(REGISTRY, "team/app", f"v{i}") for i in range(MAX_TAGS + 1)]
    assert tags_of(pushes, hosts=[REGISTRY]) == FULL


def test_elsewhere_names_the_tag_pushes_left_out_for_their_host_only() -> None:
    pushes = [
        Pushed("ghcr.io", "team/app", "latest"),
        Pushed("ghcr.io", "team/app", None),  # by digest: left out for that, not its host
        Pushed(REGISTRY, "team/app", "latest"),
    ]
    assert elsewhere(pushes, hosts=[REGISTRY]) == (Pushed("ghcr.io", "team/app", "latest"),)


_HOSTS = st.sampled_from([REGISTRY, "ghcr.io", "docker.io", "index.docker.io", "quay.io", None])
_PUSHES = st.lists(
    st.builds(
        Pushed,
        host=_HOSTS,
        repository=st.sampled_from(["team/app", "nginx", "Team/Tool", "bad name"]),
        tag=st.sampled_from(["latest", "v1", None, "no tag"]),
    ),
    max_size=8,
)


@given(pushes=_PUSHES, hosts=st.sets(_HOSTS.filter(bool), max_size=3))
def test_a_scope_names_only_tags_pushed_to_a_registry_autoroll_reads(
    pushes: list[Pushed], hosts: set[str]
) -> None:
    scope = tags_of(pushes, hosts=hosts, default_host=REGISTRY)
    known = {registry_host(h) for h in hosts}
    allowed = {
        ImageTag.named(
            p.host or REGISTRY,
            canonical_repository(registry_host(p.host or REGISTRY), p.repository.lower()),
            p.tag,
        )
        for p in pushes
        if p.tag and registry_host(p.host or REGISTRY) in known
    }
    assert scope.tags is not None  # eight pushes never make a full scope
    assert scope.tags <= allowed
    if not allowed:
        assert scope.tags == frozenset()  # nothing on a registry autoroll reads: no pass
