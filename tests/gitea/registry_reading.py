"""How the Gitea tier's registry tests read: a ``RegistryClient`` on a read-only token (as the
chart's Secret holds), what it reports counted by a ``Recorder`` and, for a lookup that must
fail, the ``Unknown`` it ends in (``failed_lookup``). The ``session`` fixture comes from
``tests.support.registry_recorder`` (``tests/gitea/conftest.py`` offers it)."""

from __future__ import annotations

from collections.abc import Sequence

import requests

from autoroll.core.images import TagRef
from autoroll.core.model import Unknown
from autoroll.registry import Limits, RegistryClient
from tests.support.gitea import Account, GiteaServer
from tests.support.ports import OnLoopback
from tests.support.registry_recorder import Recorder


def reader(gitea: GiteaServer, owner: Account, scopes: Sequence[str] = ("read:package",)) -> str:
    """A new token of ``owner``'s user with ``scopes`` (read-only by default)."""
    return gitea.create_token(owner.user, owner.password, scopes)


def client(
    session: requests.Session,
    url: str,
    user: str,
    token: str,
    *,
    observer: Recorder | None = None,
    concurrency: int = 4,
) -> RegistryClient:
    return RegistryClient(
        session=session,
        base_url=url,
        user=user,
        token=token,
        observer=observer,
        limits=Limits(lookup_concurrency=concurrency),
    )


def unknown(answer: object) -> Unknown:
    assert isinstance(answer, Unknown), answer
    return answer


def failed_lookup(
    session: requests.Session,
    at: OnLoopback,
    user: str,
    token: str,
    repository: str,
    *,
    tag: str = "latest",
) -> Unknown:
    """What ``user``'s client of ``at`` (Gitea, or a proxy in front of it) answers for
    ``repository:tag`` with ``token``; the answer must be an ``Unknown``."""
    ref = TagRef(at.host, repository, tag)
    return unknown(client(session, at.url, user, token).resolve([ref])[ref])
