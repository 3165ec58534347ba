"""What the shell hands back to an adapter to write, as plain data.

A ``RollEvent`` is what a core/v1 Event about one roll says (the Kubernetes adapter turns it
into the API body); a ``LeaseRecord`` is the leader-election Lease as election reads and
writes it. Like the views of ``autoroll.core.model``, each is immutable and cheap to build
in a test table, and nothing from a client library is in them.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from autoroll.core.model import WorkloadKind


class EventType(StrEnum):
    """A core/v1 Event's ``type``: a roll started or done is Normal, a halt a Warning."""

    NORMAL = "Normal"
    WARNING = "Warning"


@dataclass(frozen=True, slots=True)
class RollEvent:
    """What a core/v1 Event about one roll says; the adapter turns it into the API body.
    ``annotations`` carry its facts for ``autoroll history`` (``autoroll.core.happenings``)."""

    namespace: str
    kind: WorkloadKind
    workload: str
    workload_uid: str
    reason: str
    message: str
    type: EventType = EventType.NORMAL
    annotations: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, slots=True)
class LeaseRecord:
    """The parts of the leader-election Lease that election reads and writes.

    ``holder`` is empty when the lease was released. ``resource_version`` is what a write
    must name to succeed (optimistic concurrency); it is empty in a record about to be sent.
    ``nudge`` is the hand-off annotation a follower bumps for the leader.
    """

    holder: str
    duration_seconds: int
    acquired_at: datetime | None = None
    renewed_at: datetime | None = None
    transitions: int = 0
    resource_version: str = ""
    nudge: str = ""

    @property
    def election_fields(self) -> tuple[object, ...]:
        """What counts as "the holder renewed": not the resourceVersion, not the nudge.

        A nudge patch changes the resourceVersion; if that reset a contender's timer, a
        stream of webhooks could keep a dead leader's lease alive forever.
        """
        return (
            self.holder,
            self.duration_seconds,
            self.acquired_at,
            self.renewed_at,
            self.transitions,
        )


__all__ = ["EventType", "LeaseRecord", "RollEvent"]
