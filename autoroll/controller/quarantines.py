"""The shell around the quarantine (``autoroll.core.quarantine``): read it, add to it, write it.

The record lives in the cluster (``QuarantinePort``: a ConfigMap the controller owns,
docs/adr/026), so a restart or a new leader finds every quarantine as it was. The keeper
holds a copy for the passes of one term:

- it is read at the start of every term, and that read must succeed: a term that cannot
  tell what is quarantined deletes nothing (the pass fails, and the next one asks again);
- it is read again at every full pass, so a person's ``autoroll quarantine clear`` is seen
  within a poll interval (a failure then keeps the copy: it can only hold too much);
- a halt's evidence (``condemn``) and a tag that moved (``prune``) change the copy at once
  and are written at once; a write refused because the record changed since it was read
  (409) is made again on a fresh read, with this pass's changes applied to it; a write
  that fails is tried again at the next pass (the copy holds meanwhile).

Without a port (``QUARANTINE_CONFIGMAP`` unset, or ``autoroll plan``, which writes nothing)
the copy is the only record: it lasts as long as the process.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Final

from autoroll.core.images import TagRef
from autoroll.core.model import Digest, Unknown
from autoroll.core.ports import QuarantineConflictError, QuarantinePort
from autoroll.core.quarantine import (
    EMPTY,
    QuarantineBook,
    QuarantineEntry,
    QuarantineKey,
    prune,
    record,
)
from autoroll.instruments.metrics import Metrics

log = logging.getLogger(__name__)

#: Writes tried on one pass's changes when the record keeps changing under them.
WRITE_ATTEMPTS: Final = 3


class QuarantineKeeper:
    """This term's copy of the quarantine, and the writes that keep the record in step."""

    def __init__(
        self,
        *,
        metrics: Metrics,
        store: QuarantinePort | None = None,
        writable: bool = True,
    ) -> None:
        self._metrics = metrics
        self._store = store
        self._writable = writable and store is not None
        self._book: QuarantineBook = EMPTY
        self._loaded = False
        # This term's changes not yet written: entries added, keys pruned (with the digest
        # they held, so a newer entry written by someone else is never removed).
        self._added: dict[QuarantineKey, QuarantineEntry] = {}
        self._pruned: dict[QuarantineKey, Digest] = {}

    @property
    def book(self) -> QuarantineBook:
        return self._book

    def new_term(self) -> None:
        """A new term reads the record again before it acts."""
        self._loaded = False
        self._added.clear()
        self._pruned.clear()

    def refresh(self, *, full: bool) -> None:
        """Read the record at a term's first pass (required) and at every full pass."""
        if self._store is None or (self._loaded and not full):
            self._gauge()
            return
        try:
            fresh = self._store.load()
        except Exception as exc:
            if not self._loaded:
                raise  # cannot tell what is quarantined: this pass must not act
            log.warning(
                "could not read the quarantine again (%s); keeping this term's copy",
                exc,
                extra={"event": "quarantine-read-failed"},
            )
            return
        self._loaded = True
        self._book = self._apply(fresh)
        if self._added or self._pruned:
            self._write()
        self._gauge()

    def condemn(self, found: Sequence[QuarantineEntry]) -> tuple[QuarantineEntry, ...]:
        """Add a halt's evidence; the entries it added (none when each tag already holds
        that digest, quarantined or cleared)."""
        self._book, added = record(self._book, found)
        for entry in added:
            self._added[entry.key] = entry
            self._pruned.pop(entry.key, None)
            self._metrics.quarantines.inc()
            log.warning(
                "%s",
                entry.message(),
                extra={
                    "event": "quarantined",
                    "workload": entry.workload,
                    "pod": entry.pod,
                    "reason": entry.reason.value,
                    "image": str(entry.key),
                    "registry_digest": str(entry.digest),
                },
            )
        if added:
            self._write()
        self._gauge()
        return added

    def prune(self, resolved: Mapping[TagRef, Digest | Unknown]) -> None:
        """Forget the quarantines whose tag now names another digest (a new push)."""
        before = self._book
        self._book = prune(before, resolved)
        gone = set(before.entries) - set(self._book.entries)
        for key in gone:
            entry = before.entries[key]
            self._pruned[key] = entry.digest
            self._added.pop(key, None)
            log.info(
                "%s moved on from %s: its quarantine ends",
                key,
                entry.digest.short,
                extra={"event": "quarantine-ended", "image": str(key)},
            )
        if gone:
            self._write()
        self._gauge()

    def warn_active(self) -> None:
        """Say every active quarantine (a full pass does, at WARNING: a person may act)."""
        for entry in self._book.active:
            log.warning(
                "%s",
                entry.message(),
                extra={"event": "quarantine", "image": str(entry.key), "reason": entry.reason},
            )

    # -- the record -------------------------------------------------------------------------

    def _apply(self, fresh: QuarantineBook) -> QuarantineBook:
        """``fresh`` with this term's unwritten changes on it."""
        book, _ = record(fresh, list(self._added.values()))
        entries = {
            k: e
            for k, e in book.entries.items()
            if not (k in self._pruned and e.digest == self._pruned[k])
        }
        return replace(book, entries=entries)

    def _write(self) -> None:
        if not self._writable or self._store is None:
            self._added.clear()
            self._pruned.clear()
            return
        for _ in range(WRITE_ATTEMPTS):
            try:
                self._book = self._store.save(self._book)
            except QuarantineConflictError:
                try:
                    self._book = self._apply(self._store.load())
                except Exception as exc:
                    self._write_failed(exc)
                    return
                continue
            except Exception as exc:
                self._write_failed(exc)
                return
            self._added.clear()
            self._pruned.clear()
            return
        self._write_failed(RuntimeError(f"the record changed {WRITE_ATTEMPTS} times"))

    def _write_failed(self, exc: Exception) -> None:
        self._metrics.quarantine_write_errors.inc()
        log.error(
            "could not write the quarantine (%s); it holds in this process and is written"
            " again at the next pass",
            exc,
            extra={"event": "quarantine-write-failed"},
        )

    def _gauge(self) -> None:
        self._metrics.digests_quarantined.set(len(self._book.active))


__all__ = ["WRITE_ATTEMPTS", "QuarantineKeeper"]
