"""What happened to a roll, as people are told: a Kubernetes Event, a notification, a line of
``autoroll history``. Pure.

Four happenings, each at most once per roll of a workload onto a digest (never once per
pass; the shell keeps what it has told):

    started      the workload's first pod went for the digest   Normal  RollStarted
    done         every pod runs it, settled, past its window     Normal  RollCompleted
    halted       the roll stopped behind a pod that fails        Warning RolloutHalted
    quarantined  that failure quarantined the digest for its tag Warning DigestQuarantined

A halt that quarantines is told once, as ``quarantined`` (the one Warning says both). Each
Event carries its facts as annotations under ``autoroll.aethnet.se/`` (``HISTORY_KEYS``), so
``autoroll history`` reads them back without parsing the message.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Final

from autoroll.core.model import WorkloadView
from autoroll.core.records import EventType, RollEvent

#: The annotations an Event carries for ``autoroll history``.
HAPPENING: Final = "autoroll.aethnet.se/happening"
TAG: Final = "autoroll.aethnet.se/tag"
FROM: Final = "autoroll.aethnet.se/from"
TO: Final = "autoroll.aethnet.se/to"
TRIGGER: Final = "autoroll.aethnet.se/trigger"
HISTORY_KEYS: Final = (HAPPENING, TAG, FROM, TO, TRIGGER)


class HappeningKind(StrEnum):
    """Stable strings: the ``NOTIFY_EVENTS`` setting, the Event annotation, metric labels."""

    STARTED = "started"
    DONE = "done"
    HALTED = "halted"
    QUARANTINED = "quarantined"

    @property
    def reason(self) -> str:
        """The Kubernetes Event's reason."""
        return _REASONS[self]

    @property
    def is_warning(self) -> bool:
        return self in (HappeningKind.HALTED, HappeningKind.QUARANTINED)


_REASONS: Final = {
    HappeningKind.STARTED: "RollStarted",
    HappeningKind.DONE: "RollCompleted",
    HappeningKind.HALTED: "RolloutHalted",
    HappeningKind.QUARANTINED: "DigestQuarantined",
}
#: The Event reason of a roll that dry-run only shows (nothing is deleted).
WOULD_ROLL: Final = "WouldRoll"


@dataclass(frozen=True, slots=True)
class Happening:
    """One happening to one workload's roll. ``tag`` is ``repository:tag``; ``before`` and
    ``after`` the digests rolled from and onto ("" when not known); ``trigger`` what made
    the pass that did it (``autoroll history`` shows it); ``detail`` the rest, for people."""

    kind: HappeningKind
    workload: WorkloadView
    tag: str
    before: str
    after: str
    detail: str
    at: datetime
    trigger: str = ""
    dry_run: bool = False

    @property
    def title(self) -> str:
        """One line: what, where."""
        verb = {
            HappeningKind.STARTED: "would roll" if self.dry_run else "rolling",
            HappeningKind.DONE: "rolled",
            HappeningKind.HALTED: "roll halted",
            HappeningKind.QUARANTINED: "digest quarantined",
        }[self.kind]
        return f"autoroll: {verb}: {self.workload.key} ({self.tag})"

    @property
    def message(self) -> str:
        """The text people read in the Event and the notification."""
        move = (
            f"{_short(self.before)} → {_short(self.after)}" if self.before else _short(self.after)
        )
        trigger = f"; trigger: {self.trigger}" if self.trigger else ""
        return f"{self.tag} {move}: {self.detail}{trigger}"

    def event(self) -> RollEvent:
        """The Kubernetes Event on the workload object."""
        warning = self.kind.is_warning
        reason = WOULD_ROLL if self.dry_run and self.kind is HappeningKind.STARTED else None
        annotations = (
            (HAPPENING, self.kind.value),
            (TAG, self.tag),
            (FROM, self.before),
            (TO, self.after),
            (TRIGGER, self.trigger),
        )
        return RollEvent(
            namespace=self.workload.namespace,
            kind=self.workload.kind,
            workload=self.workload.name,
            workload_uid=self.workload.uid,
            reason=reason or self.kind.reason,
            message=f"autoroll: {self.message}",
            type=EventType.WARNING if warning else EventType.NORMAL,
            annotations=annotations,
        )


@dataclass(frozen=True, slots=True)
class Recorded:
    """One autoroll Event read back (``autoroll history``)."""

    at: datetime | None
    workload: str  # namespace/kind/name
    kind: str  # a HappeningKind value, or the Event's reason when it carries none
    tag: str
    before: str
    after: str
    trigger: str
    message: str
    count: int = 1


def _short(digest: str) -> str:
    return digest[:19] if digest.startswith("sha256:") else (digest or "-")


__all__ = [
    "FROM",
    "HAPPENING",
    "HISTORY_KEYS",
    "TAG",
    "TO",
    "TRIGGER",
    "WOULD_ROLL",
    "Happening",
    "HappeningKind",
    "Recorded",
]
