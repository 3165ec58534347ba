"""Limits of the registry client, its per-pass deadline, and the seams it reports through;
``each_at_once`` runs a few of its requests at once, within ``Limits.lookup_concurrency``."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Protocol, TypeVar

from autoroll.core.images import TagRef
from autoroll.core.model import Digest
from autoroll.registry.errors import BudgetError

_T = TypeVar("_T")
_A = TypeVar("_A")


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
    budget_seconds: float = 20.0  # per tick: registry time in resolve() and the fetches after
    children_cache_size: int = 1024  # index digests remembered (immutable, so never stale)
    content_cache_size: int = 4096  # manifest and index digests' configs (children count too)
    max_backoff_seconds: float = 300.0  # longest Retry-After honoured: 2.5 poll intervals
    default_backoff_seconds: float = 10.0  # a 429 without a usable Retry-After
    lookup_concurrency: int = 4  # HEADs in flight at once in resolve(); 1 sends them in turn
    #: requests to this registry in one pass, tokens included (0: no cap); the rest of the
    #: pass's lookups on it are unknown, never stale (autoroll.registry.wire)
    requests_per_pass: int = 0


class Deadline:
    """What is left of a pass's registry budget, on an injected monotonic clock.

    Only the registry's time is spent: the clock runs while one of the client's calls is in
    progress (``running``) and stands still between them. A pass that spends long deciding
    between ``resolve`` and the fetches after it (thousands of workloads, or a CPU shared
    with busy neighbours) has not waited for the registry meanwhile; counting that time
    made the end-of-pass fetch of each target's image configs run out of budget on a loaded
    machine, every pass, so the GETs meant for the cold pass slid into the steady ones
    (issue 28). A new deadline runs from its creation until its first ``pause``.
    """

    def __init__(self, clock: Callable[[], float], seconds: float) -> None:
        self._clock = clock
        self._left = seconds  # what was left when the clock last stopped
        self._since: float | None = clock()  # when it started running; None: stopped
        self._lock = threading.Lock()

    def remaining(self) -> float:
        """Seconds left; raises ``BudgetError`` once none are."""
        with self._lock:
            left = self._left
            if self._since is not None:
                left -= self._clock() - self._since
        if left <= 0:
            raise BudgetError("the per-tick registry budget is spent")
        return left

    def pause(self) -> None:
        """Stop the clock: the time until ``resume`` is not the registry's."""
        with self._lock:
            if self._since is not None:
                self._left -= self._clock() - self._since
                self._since = None

    def resume(self) -> None:
        """Start the clock again (no effect while it runs)."""
        with self._lock:
            if self._since is None:
                self._since = self._clock()

    @contextmanager
    def running(self) -> Iterator[Deadline]:
        """The clock runs for the body of the ``with``, and stops after it."""
        self.resume()
        try:
            yield self
        finally:
            self.pause()


def each_at_once(call: Callable[[_A], _T], items: list[_A], limits: Limits) -> list[_T]:
    """``call`` for each item, up to ``Limits.lookup_concurrency`` at once, in order."""
    workers = min(limits.lookup_concurrency, len(items))
    if workers <= 1:
        return [call(item) for item in items]
    with ThreadPoolExecutor(workers, thread_name_prefix="autoroll-registry") as pool:
        return list(pool.map(call, items))
