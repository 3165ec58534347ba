"""The Lease and Event bodies the adapters read and send (``lease.py``, ``events.py``).

Pure, so a test pins every field: a Lease into a ``LeaseRecord`` and back into a ``spec``,
and one core/v1 Event per happening of a roll (``autoroll.core.happenings``).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, Final

from autoroll.core.records import LeaseRecord, RollEvent
from autoroll.kube.api_time import micro_time, parse_time

#: The Lease annotation a follower bumps to hand a verified webhook to the leader.
NUDGE_ANNOTATION: Final = "autoroll.aethnet.se/nudge"


def lease_from_json(document: Mapping[str, Any]) -> LeaseRecord:
    """A Lease object (as JSON) → ``LeaseRecord``. Missing fields read as a free lease."""
    meta = document.get("metadata") or {}
    spec = document.get("spec") or {}
    annotations = meta.get("annotations") or {}
    return LeaseRecord(
        holder=str(spec.get("holderIdentity") or ""),
        duration_seconds=int(spec.get("leaseDurationSeconds") or 0),
        acquired_at=parse_time(spec.get("acquireTime")),
        renewed_at=parse_time(spec.get("renewTime")),
        transitions=int(spec.get("leaseTransitions") or 0),
        resource_version=str(meta.get("resourceVersion") or ""),
        nudge=str(annotations.get(NUDGE_ANNOTATION) or ""),
    )


def lease_spec_json(record: LeaseRecord) -> dict[str, Any]:
    """The ``spec`` to write for ``record``; an empty holder is sent as null (released)."""
    return {
        "holderIdentity": record.holder or None,
        "leaseDurationSeconds": record.duration_seconds,
        "acquireTime": micro_time(record.acquired_at) if record.acquired_at else None,
        "renewTime": micro_time(record.renewed_at) if record.renewed_at else None,
        "leaseTransitions": record.transitions,
    }


def event_json(event: RollEvent, *, now: datetime, instance: str) -> dict[str, Any]:
    """The core/v1 Event body for ``event`` (pure, so a test can pin every field)."""
    stamp = now.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {
            # Unique per roll; the workload's name first, as kubectl's own events do.
            "name": f"{event.workload[:200]}.{uuid.uuid4().hex[:16]}",
            "namespace": event.namespace,
            **({"annotations": dict(event.annotations)} if event.annotations else {}),
        },
        "involvedObject": {
            "apiVersion": "apps/v1",
            "kind": event.kind.api_kind,
            "namespace": event.namespace,
            "name": event.workload,
            **({"uid": event.workload_uid} if event.workload_uid else {}),
        },
        "reason": event.reason,
        "message": event.message[:1024],
        "type": event.type.value,
        "source": {"component": "autoroll"},
        "reportingComponent": "aethnet.se/autoroll",
        "reportingInstance": instance[:128],
        "firstTimestamp": stamp,
        "lastTimestamp": stamp,
        "count": 1,
    }


__all__ = [
    "NUDGE_ANNOTATION",
    "event_json",
    "lease_from_json",
    "lease_spec_json",
]
