"""Scopes: what a pass covers, and how coalescing nudges merge them."""

from __future__ import annotations

from autoroll.core.images import TagRef
from autoroll.core.scope import FULL, MAX_TAGS, ImageTag, Scope

HOST = "git.example.org"
APP = ImageTag.named(HOST, "team/app", "latest")
API = ImageTag.named(HOST, "team/api", "v2")


def test_a_full_scope_covers_every_ref() -> None:
    assert FULL.is_full and Scope.full() is FULL
    assert FULL.covers(TagRef("other.example", "x/y", "z"))
    assert FULL.repositories == frozenset()
    assert str(FULL) == "full"


def test_a_targeted_scope_covers_only_its_tags() -> None:
    scope = Scope.of([APP])
    assert not scope.is_full
    assert scope.covers(TagRef(HOST, "team/app", "latest"))
    assert not scope.covers(TagRef(HOST, "team/app", "v1"))  # another tag
    assert not scope.covers(TagRef(HOST, "team/api", "latest"))  # another repository
    assert not scope.covers(TagRef(HOST, "team/app", "LATEST"))  # tags are case-sensitive
    assert not scope.covers(TagRef("mirror.example", "team/app", "latest"))  # another host
    assert scope.repositories == {"team/app"}
    assert str(scope) == "git.example.org/team/app:latest"


def test_an_empty_targeted_scope_covers_nothing() -> None:
    scope = Scope.of([])
    assert not scope.is_full
    assert not scope.covers(TagRef(HOST, "team/app", "latest"))


def test_merging_unites_tags_and_full_absorbs_everything() -> None:
    assert Scope.of([APP]).merge(Scope.of([API])) == Scope.of([APP, API])
    assert Scope.of([APP]).merge(FULL) is FULL
    assert FULL.merge(Scope.of([APP])) is FULL


def test_more_than_max_tags_become_one_full_scope() -> None:
    many = [ImageTag.named(HOST, "team/app", f"t{n}") for n in range(MAX_TAGS)]
    assert not Scope.of(many).is_full
    assert Scope.of(many).merge(Scope.of([API])) is FULL


def test_an_image_tag_names_a_ref_by_lowercased_repository_and_exact_tag() -> None:
    assert APP.names(TagRef(HOST, "team/app", "latest"))
    assert ImageTag.of(TagRef(HOST, "team/app", "latest")) == APP
    assert str(API) == "git.example.org/team/api:v2"


def test_an_image_tag_normalises_its_host_and_docker_hubs_library() -> None:
    """One registry under several names: the host as ``registry_host`` writes it, and Docker
    Hub's one-part names under ``library/``, so a webhook's tag meets the pod's image."""
    assert ImageTag.named("Git.Example.ORG", "Team/App", "latest") == APP
    hub = ImageTag.named("docker.io", "library/nginx", "1.27")
    assert ImageTag.named("index.docker.io", "nginx", "1.27") == hub
    assert ImageTag.named("registry-1.docker.io", "library/nginx", "1.27") == hub
    assert hub.names(TagRef("docker.io", "library/nginx", "1.27"))
    assert not hub.names(TagRef("docker.io", "library/nginx", "1.27-alpine"))
