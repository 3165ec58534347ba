"""What the tests against a real registry hand a ``RegistryClient``: a ``requests`` session
(the ``session`` fixture), an observer that counts what the client reports (``Recorder``),
and a monotonic clock moved by hand (``ManualClock``: a token's expiry, or the reconcile
worker's liveness bound in the isolation fault rows).

Used by ``tests/integration``, ``tests/faults`` and ``tests/gitea``; the unit tests' scripted
client has its own (``tests.support.registry_fakes``).
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
import requests


class Recorder:
    """A hand-written ``RegistryObserver``: counts requests by kind and failed lookups by
    reason (``resolve()`` reports from several threads, hence the lock)."""

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


@dataclass
class ManualClock:
    """A monotonic clock the test moves by hand (``clock.now += 60``); it starts well clear
    of zero, as ``time.monotonic`` does on a running machine."""

    now: float = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def session() -> Iterator[requests.Session]:
    """One ``requests`` session per test, closed after it."""
    with requests.Session() as s:
        yield s
