"""An in-memory Lease for leader-election tests: it keeps a resourceVersion and refuses stale
writes with a conflict, exactly the property the real API server gives; ``T0`` is where the
tests' timelines start.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime

from autoroll.core.ports import LeaseConflictError
from autoroll.core.records import LeaseRecord

T0 = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)


class FakeLease:
    """An in-memory Lease with resourceVersion semantics; ``down`` makes every call fail."""

    def __init__(self) -> None:
        self.record: LeaseRecord | None = None
        self.version = 0
        self.down = False
        self.aborts = 0
        self.writes: list[tuple[str, str]] = []
        self.before_write: list[str] = []  # e.g. ["nudge"]: a nudge sneaks in before a write
        self.lock = threading.Lock()
        self.changed = threading.Condition(self.lock)

    def _bump(self, record: LeaseRecord) -> LeaseRecord:
        self.version += 1
        self.record = replace(record, resource_version=str(self.version))
        self.changed.notify_all()
        return self.record

    def _check(self) -> None:
        if self.down:
            raise ConnectionError("API server unreachable")

    def get(self) -> LeaseRecord | None:
        with self.lock:
            self._check()
            return self.record

    def create(self, record: LeaseRecord) -> LeaseRecord:
        with self.lock:
            self._check()
            if self.record is not None:
                raise LeaseConflictError("exists")
            self.writes.append(("create", record.holder))
            return self._bump(record)

    def update(self, record: LeaseRecord) -> LeaseRecord:
        with self.lock:
            self._check()
            if self.before_write:
                self.before_write.pop(0)
                assert self.record is not None
                self._bump(replace(self.record, nudge=f"sneaky-{self.version}"))
            if self.record is None or record.resource_version != self.record.resource_version:
                raise LeaseConflictError("stale")
            self.writes.append(("update", record.holder))
            return self._bump(replace(record, nudge=self.record.nudge))

    def publish_nudge(self, value: str) -> None:
        with self.lock:
            self._check()
            assert self.record is not None
            self._bump(replace(self.record, nudge=value))

    def watch(self, resource_version: str, timeout_seconds: int) -> Iterator[LeaseRecord]:
        last = int(resource_version or 0)
        aborts = self.aborts
        while True:
            with self.lock:
                self.changed.wait_for(functools.partial(self._newer, last, aborts), timeout=0.2)
                self._check()
                if self.aborts != aborts:
                    return  # like a shut-down socket: the watch just ends
                if self.version <= last:
                    continue
                last = self.version
                record = self.record
            assert record is not None
            yield record

    def _newer(self, version: int, aborts: int) -> bool:
        return self.version > version or self.down or self.aborts != aborts

    def abort_watch(self) -> None:
        with self.lock:
            self.aborts += 1
            self.changed.notify_all()
