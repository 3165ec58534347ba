"""How the Gitea tier's registry tests read: a ``RegistryClient`` on a read-only token (as the
chart's Secret holds), what it reports counted by ``Recorder``, and the ``session`` fixture
(``tests/gitea/conftest.py`` offers it)."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterator, Sequence

import pytest
import requests

from autoroll.core.model import Unknown
from autoroll.registry import Limits, RegistryClient
from tests.support.gitea import Account, GiteaServer


class Recorder:
    """Counts what the client reports (from several threads)."""

    def __init__(self) -> None:
        self.requests: Counter[str] = Counter()
        self.errors: Counter[str] = Counter()
        self._lock = threading.Lock()

    def request_sent(self, kind: str) -> None:
        with self._lock:
            self.requests[kind] += 1

    def lookup_failed(self, reason: str) -> None:
        with self._lock:
            self.errors[reason] += 1


@pytest.fixture
def session() -> Iterator[requests.Session]:
    with requests.Session() as s:
        yield s


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
