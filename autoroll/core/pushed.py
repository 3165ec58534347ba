"""What a webhook says was pushed, and the pass scope that follows from it (pure).

Every receiver (``autoroll.core.webhook_body`` for Forgejo and Gitea, ``autoroll.core.receivers``
for the registries) reads its body into ``Pushed`` values: the registry host *as the body
names it* (or None when the source never names one: a Forgejo package event is about the
configured Forgejo), the repository, and the tag (None for a push by digest, which moves no
tag). ``tags_of`` is the one place those become a ``Scope``: it normalises the host as images
are normalised (``autoroll.core.images.registry_host`` and ``canonical_repository``: lowercase,
Docker Hub's aliases as ``docker.io``, ``library/`` for a one-part Docker Hub name), keeps only
pushes on a registry autoroll reads, and names each as a host-aware ``ImageTag``.

A push only *scopes* a pass. The digest it moved to is never taken from a body: the pass asks
the registry (HEAD), as every pass does, and decides on a fresh read of the cluster. So a
body that names the wrong tag, or a replayed one, costs at most a pass the poll would run.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass

from autoroll.core.images import canonical_repository, is_repository, is_tag, registry_host
from autoroll.core.scope import ImageTag, Scope


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


def _tag_of(push: Pushed, default_host: str | None) -> tuple[str, ImageTag] | None:
    """The push's normalised host and ``ImageTag``; None when it moves no tag or names
    something that is not a repository and tag."""
    if push.tag is None or not is_tag(push.tag):
        return None
    named = push.host or default_host
    if not named:
        return None  # on no registry at all: nothing autoroll reads can be meant
    host = registry_host(named)
    repository = canonical_repository(host, push.repository.strip().strip("/").lower())
    if not is_repository(repository):
        return None
    return host, ImageTag.named(host, repository, push.tag)


def tags_of(
    pushes: Iterable[Pushed], *, hosts: Collection[str], default_host: str | None = None
) -> Scope:
    """The scope a delivery's pushes ask for: the tags pushed to a registry in ``hosts``.

    A push naming no host is on ``default_host`` (the source's own registry: a Forgejo
    package event's is ``FORGEJO_HOST``; None: on no registry, left out). Pushes by
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
        if host not in known:
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
        if tagged is not None and tagged[0] not in known:
            left.append(push)
    return tuple(left)


__all__ = ["Pushed", "elsewhere", "tags_of"]
