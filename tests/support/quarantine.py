"""An in-memory ``QuarantinePort`` for tests: the record a ConfigMap would hold, with its
compare-and-swap on a version, and what a person's ``autoroll quarantine clear`` does; the
quarantine tests' ``KEY`` (the app's tag) and ``restarted`` pods."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime

from autoroll.core.model import PodView
from autoroll.core.ports import QuarantineConflictError
from autoroll.core.quarantine import QuarantineBook, QuarantineKey, clear
from tests.support.reconciler_fakes import HOST

KEY = QuarantineKey.named(HOST, "team/app", "latest")


class MemoryQuarantine:
    """The record, versioned like a resourceVersion; ``fail`` makes every call raise."""

    def __init__(self) -> None:
        self.book = QuarantineBook()
        self.version = 0
        self.saves = 0
        self.fail: Exception | None = None

    def load(self) -> QuarantineBook:
        if self.fail is not None:
            raise self.fail
        return replace(self.book, version=str(self.version) if self.version else "")

    def save(self, book: QuarantineBook) -> QuarantineBook:
        if self.fail is not None:
            raise self.fail
        if book.version != (str(self.version) if self.version else ""):
            raise QuarantineConflictError(f"at version {self.version}, not {book.version!r}")
        self.version += 1
        self.saves += 1
        self.book = replace(book, version=str(self.version))
        return self.book

    def clear(self, key: QuarantineKey, *, now: datetime) -> None:
        """A person clears ``key`` (the record changes under the controller's copy)."""
        self.book = clear(self.book, key, now=now)
        self.version += 1
        self.book = replace(self.book, version=str(self.version))


__all__ = ["MemoryQuarantine"]


def restarted(p: PodView, restarts: int, *, ready: bool) -> PodView:
    status = replace(p.statuses[0], restart_count=restarts, ready=ready)
    return replace(p, ready=ready, statuses=(status,))
