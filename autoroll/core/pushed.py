"""What a webhook says was pushed, and the pass scope that follows from it (pure).

Every receiver (``autoroll.core.webhook_body`` for Forgejo and Gitea, ``autoroll.core.receivers``
for the registries) reads its body into ``Pushed`` values: the registry host *as the body
names it* (or None when the source never names one: a Forgejo package event is about the
configured Forgejo), the repository, and the tag (None for a push by digest, which moves no
tag). ``tags_of`` is the one place those become a ``Scope``: it normalises the host (lowercase,
Docker Hub's aliases as ``docker.io``, ``library/`` for a one-part Docker Hub name), keeps only
pushes on a registry autoroll reads, and names each as an ``ImageTag``.

A push only *scopes* a pass. The digest it moved to is never taken from a body: the pass asks
the registry (HEAD), as every pass does, and decides on a fresh read of the cluster. So a
body that names the wrong tag, or a replayed one, costs at most a pass the poll would run.

``registry_host`` is a minimal normaliser of this module's own; the registry list (issue 25)
brings the project-wide one, which should replace it.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass
from typing import Final

from autoroll.core.images import DEFAULT_HOST, is_repository, is_tag
from autoroll.core.scope import ImageTag, Scope

#: Names Docker Hub answers to: a body (or a pod) may use any of them for ``docker.io``.
DOCKER_HUB_ALIASES: Final = frozenset(
    {"docker.io", "index.docker.io", "registry-1.docker.io", "registry.hub.docker.com"}
)


@dataclass(frozen=True, slots=True, order=True)
class Pushed:
    """One push a webhook names: ``host`` as the body names it (None: the source's own
    registry, never named), ``repository`` as written, ``tag`` None for a push by digest."""

    host: str | None
    repository: str
    tag: str | None

    def __str__(self) -> str:
        where = f"{self.host}/" if self.host else ""
        return f"{where}{self.repository}:{self.tag or '<digest>'}"


def registry_host(host: str) -> str:
    """``host[:port]`` as autoroll compares hosts: lowercase, Docker Hub's aliases as
    ``docker.io``."""
    lowered = host.strip().lower()
    return DEFAULT_HOST if lowered in DOCKER_HUB_ALIASES else lowered


def repository_on(host: str, repository: str) -> str:
    """The repository as the registry stores it: lowercase, and on Docker Hub a one-part
    name is an official image under ``library/`` (``nginx`` is ``library/nginx``)."""
    lowered = repository.strip().strip("/").lower()
    if host == DEFAULT_HOST and "/" not in lowered:
        return f"library/{lowered}"
    return lowered


def _tag_of(push: Pushed, default_host: str | None) -> tuple[str, ImageTag] | None:
    """The push's normalised host and ``ImageTag``; None when it moves no tag or names
    something that is not a repository and tag."""
    if push.tag is None or not is_tag(push.tag):
        return None
    named = push.host or default_host
    host = registry_host(named) if named else ""
    repository = repository_on(host, push.repository)
    if not is_repository(repository):
        return None
    return host, ImageTag(repository, push.tag)


def tags_of(
    pushes: Iterable[Pushed], *, hosts: Collection[str], default_host: str | None = None
) -> Scope:
    """The scope a delivery's pushes ask for: the tags pushed to a registry in ``hosts``.

    A push naming no host is on ``default_host`` (the source's own registry; None: accepted
    as on a registry autoroll reads, as a Forgejo package event always was). Pushes by
    digest, on another host, or naming no valid repository and tag are left out; an empty
    scope looks at nothing (the caller starts no pass). More than ``scope.MAX_TAGS`` tags
    make a full scope, as every scope does.
    """
    known = {registry_host(h) for h in hosts}
    found: list[ImageTag] = []
    for push in pushes:
        tagged = _tag_of(push, default_host)
        if tagged is None:
            continue
        host, tag = tagged
        if host and host not in known:
            continue
        found.append(tag)
    return Scope.of(found)


def elsewhere(
    pushes: Iterable[Pushed], *, hosts: Collection[str], default_host: str | None = None
) -> tuple[Pushed, ...]:
    """The tag pushes ``tags_of`` leaves out because their host is not one autoroll reads
    (for the answer that says why a delivery started no pass)."""
    known = {registry_host(h) for h in hosts}
    left: list[Pushed] = []
    for push in pushes:
        tagged = _tag_of(push, default_host)
        if tagged is not None and tagged[0] and tagged[0] not in known:
            left.append(push)
    return tuple(left)


__all__ = [
    "DOCKER_HUB_ALIASES",
    "Pushed",
    "elsewhere",
    "registry_host",
    "repository_on",
    "tags_of",
]
