"""What people see of the quarantine and the history: ``autoroll plan``'s quarantine lines,
``autoroll quarantine list|clear`` and ``autoroll history`` (rendering is pure)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime

from autoroll.core.happenings import Recorded
from autoroll.core.ports import QuarantineConflictError, QuarantinePort
from autoroll.core.quarantine import CLEAR_COMMAND, QuarantineBook, QuarantineKey, clear

#: Writes of a clear tried when the record keeps changing (the controller writes too).
CLEAR_ATTEMPTS = 3


def quarantine_lines(book: QuarantineBook) -> list[str]:
    """``autoroll plan``'s footer: every quarantined digest, where, why and how to clear it."""
    if not book.active:
        return []
    lines = ["QUARANTINED (no workload rolls onto these until the tag moves or they are cleared):"]
    for entry in book.active:
        lines.append(
            f"  {entry.key} {entry.digest.short}: {entry.reason.value} on {entry.workload}"
            f" (pod {entry.pod}) at {entry.at.isoformat(timespec='seconds')}: {entry.detail}"
        )
        lines.append(f"    clear: {CLEAR_COMMAND} {entry.key}")
    return lines


def list_text(book: QuarantineBook) -> str:
    """``autoroll quarantine list``: every entry, cleared ones too."""
    if not book.entries:
        return "Nothing is quarantined.\n"
    rows = []
    for _, entry in sorted(book.entries.items()):
        state = (
            f"cleared {entry.cleared_at.isoformat(timespec='seconds')}"
            if entry.cleared_at
            else "QUARANTINED"
        )
        rows.append(
            f"{entry.key}  {entry.digest}  {state}  {entry.reason.value} on {entry.workload}"
            f" (pod {entry.pod}) at {entry.at.isoformat(timespec='seconds')}: {entry.detail}"
        )
    return "\n".join(rows) + "\n"


def clear_in(store: QuarantinePort, key: QuarantineKey, *, now: datetime | None = None) -> str:
    """Clear ``key`` in the record (compare and swap, tried again on a conflict); what to
    tell the person. KeyError when nothing is quarantined for it."""
    when = now or datetime.now(UTC)
    for _ in range(CLEAR_ATTEMPTS):
        book = store.load()
        entry = book.entries[key]
        if not entry.is_active:
            return f"{key}: {entry.digest.short} was already cleared\n"
        try:
            store.save(replace(clear(book, key, now=when), version=book.version))
        except QuarantineConflictError:
            continue
        return (
            f"{key}: cleared the quarantine of {entry.digest.short}; workloads on the tag roll"
            " onto it from the controller's next full pass\n"
        )
    raise QuarantineConflictError(f"the record changed {CLEAR_ATTEMPTS} times; try again")


HISTORY_HEADERS = ("TIME", "WORKLOAD", "WHAT", "TAG", "FROM", "TO", "TRIGGER")


def history_text(rows: Sequence[Recorded]) -> str:
    """``autoroll history``: what rolled when, from which digest to which, and why."""
    if not rows:
        return (
            "No autoroll Events found (the API server keeps Events for an hour by default;"
            " EMIT_EVENTS must be on).\n"
        )
    body = [
        (
            r.at.isoformat(timespec="seconds") if r.at else "-",
            r.workload,
            r.kind + (f" (x{r.count})" if r.count > 1 else ""),
            r.tag or "-",
            _short(r.before),
            _short(r.after),
            r.trigger or (r.message if not r.tag else "-"),
        )
        for r in rows
    ]
    widths = [max(len(row[i]) for row in [HISTORY_HEADERS, *body]) for i in range(6)]
    lines = [
        "  ".join([*(c.ljust(w) for c, w in zip(row[:6], widths, strict=True)), row[6]]).rstrip()
        for row in [HISTORY_HEADERS, *body]
    ]
    return "\n".join(lines) + "\n"


def _short(digest: str) -> str:
    return digest[:19] if digest else "-"


__all__ = ["clear_in", "history_text", "list_text", "quarantine_lines"]
