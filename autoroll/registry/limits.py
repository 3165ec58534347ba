"""Limits of the registry client, its per-pass deadline, and the seams it reports through."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from autoroll.core.images import TagRef
from autoroll.core.model import Digest
from autoroll.registry.errors import BudgetError


class RegistryObserver(Protocol):
    """What the client reports. ``autoroll.instruments.metrics.Metrics`` implements it."""

    def request_sent(self, kind: str) -> None:
        """One HTTP request of ``kind`` (``manifest-head``, ``manifest-get``, ``token``)."""

    def lookup_failed(self, reason: str) -> None:
        """One lookup ended ``Unknown(reason)``."""


class NullObserver:
    """The default observer: counts nothing."""

    def request_sent(self, kind: str) -> None:
        pass

    def lookup_failed(self, reason: str) -> None:
        pass


class ChildrenWanted(Protocol):
    """Anything naming an index to expand (``autoroll.core.decide.ChildrenRequest`` fits)."""

    @property
    def ref(self) -> TagRef: ...

    @property
    def digest(self) -> Digest: ...


class ContentWanted(Protocol):
    """Anything naming a manifest to resolve (``autoroll.core.decide.ContentRequest`` fits)."""

    @property
    def host(self) -> str: ...

    @property
    def repository(self) -> str: ...

    @property
    def digest(self) -> Digest: ...


@dataclass(frozen=True, slots=True)
class Limits:
    """Time and size bounds. Defaults fit a 120 s poll interval with room to spare."""

    connect_seconds: float = 3.0  # a registry that does not accept a connection in 3 s is down
    read_seconds: float = 5.0  # between bytes; a HEAD answer is a few hundred bytes
    budget_seconds: float = 20.0  # per tick: one resolve() and the fetch_children() after it
    children_cache_size: int = 1024  # index digests remembered (immutable, so never stale)
    content_cache_size: int = 4096  # manifest and index digests' configs (children count too)
    max_backoff_seconds: float = 300.0  # longest Retry-After honoured: 2.5 poll intervals
    default_backoff_seconds: float = 10.0  # a 429 without a usable Retry-After
    lookup_concurrency: int = 4  # HEADs in flight at once in resolve(); 1 sends them in turn
    #: requests to this registry in one pass, tokens included (0: no cap); the rest of the
    #: pass's lookups on it are unknown, never stale (autoroll.registry.wire)
    requests_per_pass: int = 0


class Deadline:
    """The end of a call's budget, on an injected monotonic clock."""

    def __init__(self, clock: Callable[[], float], seconds: float) -> None:
        self._clock = clock
        self._end = clock() + seconds

    def remaining(self) -> float:
        left = self._end - self._clock()
        if left <= 0:
            raise BudgetError("the per-tick registry budget is spent")
        return left
