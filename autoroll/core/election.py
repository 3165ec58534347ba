"""Pure leader-election rules: what to do with the Lease as just read, and who may act.

``autoroll.controller.leader`` runs the threads; everything they decide is decided here, over plain
data and a monotonic ``now`` passed in, and table-tested (tests/unit/test_leader.py)::

    observe()        first-seen time of the holder record, on this replica's own clock
    decide_lease()   CREATE | ACQUIRE | RENEW | WAIT | STEP_DOWN, with the reason
    has_authority()  may the leader still act (inside the renew deadline)?
    authority_left() until when a call it starts now must be over
    next_record()    the record to write for CREATE, ACQUIRE or RENEW
    released_record() our lease handed back on shutdown

Safety in one line: a contender takes an unreleased lease only after *it* has seen the same
holder record, unchanged, for a full lease duration on its own monotonic clock; the leader
stops acting ``renew deadline`` after the moment it *sent* its last successful renew, which
is earlier than any contender's first sight of that record
(docs/adr/004-leader-election-and-webhook-handoff.md).
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass, replace
from datetime import datetime
from enum import StrEnum

from autoroll.core.records import LeaseRecord


@dataclass(frozen=True, slots=True)
class Observation:
    """A holder record and when this replica first saw it, on its own monotonic clock."""

    fields: tuple[object, ...]
    seen_at: float


class Step(StrEnum):
    CREATE = "create"  # no Lease object yet: create it naming us
    ACQUIRE = "acquire"  # free or expired: take it over
    RENEW = "renew"  # ours: extend it
    WAIT = "wait"  # another replica holds it and is within its duration
    STEP_DOWN = "step-down"  # we thought we led, but the Lease names someone else


@dataclass(frozen=True, slots=True)
class LeaseDecision:
    step: Step
    reason: str
    observation: Observation | None
    expires_in: float | None = None  # WAIT only: seconds until we may try to acquire


@dataclass(frozen=True, slots=True)
class Timings:
    """Election timings in seconds; ``Config`` has validated their order."""

    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0


# --------------------------------------------------------------------------------------------
# Pure decisions


def observe(
    lease: LeaseRecord | None, previous: Observation | None, now: float
) -> Observation | None:
    """Keep the first-seen time while the holder record is unchanged; restart it on change."""
    if lease is None:
        return None
    fields = lease.election_fields
    if previous is not None and previous.fields == fields:
        return previous
    return Observation(fields, now)


def decide_lease(
    *,
    lease: LeaseRecord | None,
    observed: Observation | None,
    identity: str,
    now: float,
    leading: bool,
    lease_duration: float,
) -> LeaseDecision:
    """What to do with the Lease as just read. ``now`` is this replica's monotonic clock."""
    observation = observe(lease, observed, now)
    if lease is None:
        # Nobody has ever led (or the Lease was deleted): creating is atomic, one wins.
        return LeaseDecision(Step.CREATE, "no lease yet", None)
    if lease.holder == identity:
        # Ours, whether we lead right now or stepped down after missing the deadline: a
        # renew that succeeds proves nobody took it meanwhile (the resourceVersion matched).
        return LeaseDecision(Step.RENEW, "we hold the lease", observation)
    if leading:
        # Someone else holds it although we believed we led: stop acting at once.
        return LeaseDecision(Step.STEP_DOWN, f"the lease names {lease.holder!r}", observation)
    if not lease.holder:
        # Released on a clean shutdown: no need to wait out a duration.
        return LeaseDecision(Step.ACQUIRE, "the lease was released", observation)
    assert observation is not None
    # The holder's own declared duration wins over ours (replicas mid-upgrade may differ).
    duration = lease.duration_seconds if lease.duration_seconds > 0 else lease_duration
    unchanged_for = now - observation.seen_at
    if unchanged_for >= duration:
        return LeaseDecision(
            Step.ACQUIRE,
            f"{lease.holder!r} has not renewed for {unchanged_for:.1f}s (duration {duration}s)",
            observation,
        )
    return LeaseDecision(
        Step.WAIT,
        f"held by {lease.holder!r}, unchanged for {unchanged_for:.1f}s of {duration}s",
        observation,
        expires_in=duration - unchanged_for,
    )


def has_authority(*, renewed_at: float | None, now: float, renew_deadline: float) -> bool:
    """May the leader still act? Only until ``renew_deadline`` after its last renew was sent.

    ``renewed_at`` is the monotonic time taken *before* the renew request went out, so it
    precedes the moment any other replica could first see that renewal.
    """
    return renewed_at is not None and now < renewed_at + renew_deadline


def authority_left(
    *, renewed_at: float | None, now: float, renew_deadline: float, lease_duration: float
) -> float:
    """Seconds until another replica could take the Lease over, while this one may still act
    (0 otherwise): a call started now must be over by then.

    A contender acquires only after seeing our last renewed record unchanged for a full
    ``lease_duration`` on its own clock, and it cannot have seen that record before we sent
    it (``renewed_at``); so no other replica leads before ``renewed_at + lease_duration``.
    """
    if not has_authority(renewed_at=renewed_at, now=now, renew_deadline=renew_deadline):
        return 0.0
    assert renewed_at is not None
    return max(0.0, renewed_at + lease_duration - now)


def next_record(
    step: Step, lease: LeaseRecord | None, *, identity: str, now: datetime, duration: float
) -> LeaseRecord:
    """The record to write for CREATE, ACQUIRE or RENEW (resourceVersion and nudge kept)."""
    seconds = max(1, round(duration))
    if step is Step.RENEW and lease is not None:
        return replace(lease, holder=identity, duration_seconds=seconds, renewed_at=now)
    if step is Step.ACQUIRE and lease is not None:
        return replace(
            lease,
            holder=identity,
            duration_seconds=seconds,
            acquired_at=now,
            renewed_at=now,
            transitions=lease.transitions + 1,
        )
    if step is Step.CREATE:
        return LeaseRecord(identity, seconds, acquired_at=now, renewed_at=now, transitions=0)
    raise ValueError(f"no record to write for {step} with lease {lease!r}")


def released_record(lease: LeaseRecord, *, now: datetime) -> LeaseRecord:
    """Our lease, handed back: no holder, so the next replica acquires without waiting."""
    return replace(lease, holder="", duration_seconds=1, renewed_at=now)


def default_identity() -> str:
    """``hostname-pid`` when POD_NAME is not set: unique per process on one host."""
    return f"{socket.gethostname()}-{os.getpid()}"


__all__ = [
    "LeaseDecision",
    "LeaseRecord",
    "Observation",
    "Step",
    "Timings",
    "authority_left",
    "decide_lease",
    "default_identity",
    "has_authority",
    "next_record",
    "observe",
    "released_record",
]
