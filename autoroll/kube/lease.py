"""The leader-election adapter (``LeasePort``): one named ``coordination.k8s.io/v1`` Lease.

Calls go through ``KubeRest`` like every other (no generated API class). RBAC, in the
namespaced Role: ``leases: create`` and, for this one name, ``get, patch, watch``.

Writes are JSON merge patches that carry ``metadata.resourceVersion``: the API server then
refuses them with 409 if anyone wrote since our read (optimistic concurrency), and, unlike a
PUT, they leave the nudge annotation alone. A 409 becomes ``LeaseConflictError``; a 404 on
a read means "no Lease yet". The watch uses a field selector on the name, so RBAC can grant
``watch`` for this one Lease only (docs/adr/004-leader-election-and-webhook-handoff.md).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

from autoroll.core.ports import LeaseConflictError
from autoroll.core.records import LeaseRecord
from autoroll.kube.errors import ClusterApiError
from autoroll.kube.lease_event_bodies import NUDGE_ANNOTATION, lease_from_json, lease_spec_json
from autoroll.kube.operations import CREATE_LEASE, GET_LEASE, PATCH_LEASE, WATCH_LEASE
from autoroll.kube.transport import (
    LEASE_CALL_TIMEOUT,
    MERGE_PATCH,
    Answer,
    KubeRest,
    LazyRest,
    connect,
    segment,
)
from autoroll.kube.watch_stream import WatchStream


class KubeLease:
    """One named Lease in one namespace; implements ``autoroll.core.ports.LeasePort``."""

    def __init__(
        self,
        *,
        namespace: str,
        name: str,
        api_client_factory: Callable[[], Any] = connect,
        rest: KubeRest | None = None,
        timeout: tuple[float, float] = LEASE_CALL_TIMEOUT,
    ) -> None:
        self.namespace = namespace
        self.name = name
        self._api = LazyRest(api_client_factory, rest)
        self._timeout = timeout
        self._watch_lock = threading.Lock()
        self._stream: WatchStream | None = None
        self._collection = f"/apis/coordination.k8s.io/v1/namespaces/{segment(namespace)}/leases"
        self._path = f"{self._collection}/{segment(name)}"
        self._target = f"{namespace}/{name}"

    def get(self) -> LeaseRecord | None:
        answer = self._api().send(GET_LEASE, self._target, "GET", self._path, timeout=self._timeout)
        return None if answer.status == 404 else lease_from_json(answer.json())

    def create(self, record: LeaseRecord) -> LeaseRecord:
        body = {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": self.name, "namespace": self.namespace},
            "spec": lease_spec_json(record),
        }
        answer = self._api().send(
            CREATE_LEASE, self._target, "POST", self._collection, body=body, timeout=self._timeout
        )
        self._raise_on_conflict(answer, "create")
        if answer.status == 404:
            raise ClusterApiError(
                f"create lease {self._target}: 404 (does the namespace exist?)", status=404
            )
        return lease_from_json(answer.json())

    def update(self, record: LeaseRecord) -> LeaseRecord:
        """Write ``record`` only if the Lease is still at ``record.resource_version``."""
        if not record.resource_version:
            raise ValueError("an update needs the resourceVersion it was decided on")
        body = {
            "metadata": {"resourceVersion": record.resource_version},
            "spec": lease_spec_json(record),
        }
        answer = self._patch(self._target, body)
        self._raise_on_conflict(answer, "patch")
        if answer.status == 404:
            raise LeaseConflictError(f"lease {self._target} is gone")
        return lease_from_json(answer.json())

    def publish_nudge(self, value: str) -> None:
        """Set the nudge annotation (no resourceVersion: it must not lose to a renewal)."""
        body = {"metadata": {"annotations": {NUDGE_ANNOTATION: value}}}
        answer = self._patch(f"{self._target} (nudge)", body)
        self._raise_on_conflict(answer, "patch")
        if answer.status == 404:
            raise ClusterApiError(
                f"lease {self._target} does not exist: no leader to nudge", status=404
            )

    def watch(self, resource_version: str, timeout_seconds: int) -> Iterator[LeaseRecord]:
        """Changes to the Lease after ``resource_version``, until the server ends the watch."""
        query = [
            ("fieldSelector", f"metadata.name={self.name}"),
            ("watch", "true"),
            ("timeoutSeconds", str(timeout_seconds)),
            ("allowWatchBookmarks", "false"),
        ]
        if resource_version:
            query.append(("resourceVersion", resource_version))
        connect_seconds, read_seconds = self._timeout
        stream = self._api().watch(
            WATCH_LEASE,
            self._target,
            self._collection,
            query=query,
            timeout=(connect_seconds, timeout_seconds + read_seconds),
        )
        with self._watch_lock:
            self._stream = stream
        try:
            for kind, document in stream.events():
                if kind in ("ADDED", "MODIFIED"):
                    yield lease_from_json(document)
        finally:
            with self._watch_lock:
                self._stream = None

    def abort_watch(self) -> None:
        """Unblock a watch waiting in another thread (used on shutdown)."""
        with self._watch_lock:
            stream = self._stream
        if stream is not None:
            stream.abort()

    def _patch(self, target: str, body: dict[str, Any]) -> Answer:
        return self._api().send(
            PATCH_LEASE,
            target,
            "PATCH",
            self._path,
            body=body,
            content_type=MERGE_PATCH,
            timeout=self._timeout,
        )

    def _raise_on_conflict(self, answer: Answer, verb: str) -> None:
        if answer.status == 409:
            raise LeaseConflictError(f"{verb} lease {self._target}: 409 Conflict")


__all__ = ["KubeLease"]
