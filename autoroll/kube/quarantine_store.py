"""The quarantine's record (``QuarantinePort``): one ConfigMap the controller owns.

``QUARANTINE_CONFIGMAP`` names it, in the controller's namespace (``QUARANTINE_NAMESPACE``,
the release's); the chart sets both. One data key per quarantined ``repository:tag``, its
value one JSON object (``entry_json``), so ``kubectl get configmap -o yaml`` shows what is
quarantined and why. The controller creates it on its first quarantine; every write is a
PUT naming the ``resourceVersion`` it read, so a write based on a stale read (a person's
``autoroll quarantine clear`` meanwhile, a previous leader's last write) is refused with
409 (``QuarantineConflictError``) and made again on a fresh read. RBAC, in the namespaced
Role: ``configmaps: create`` (a create cannot be limited to a name) and, for this one name,
``get, update`` (docs/adr/026-the-quarantine-lives-in-a-configmap.md).

An entry that cannot be read (a hand edit) is left out and said once: it is kept in the
object as it is, until the tag moves.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from collections.abc import Callable, Mapping
from typing import Any, Final

from autoroll.core.model import Digest
from autoroll.core.ports import QuarantineConflictError
from autoroll.core.quarantine import (
    QuarantineBook,
    QuarantineEntry,
    QuarantineKey,
    QuarantineReason,
)
from autoroll.kube.api_time import micro_time, parse_time
from autoroll.kube.errors import ClusterApiError
from autoroll.kube.operations import CREATE_CONFIGMAP, GET_CONFIGMAP, UPDATE_CONFIGMAP
from autoroll.kube.transport import SMALL_CALL_TIMEOUT, KubeRest, LazyRest, connect, segment

log = logging.getLogger(__name__)

#: The label that says what the ConfigMap is (``kubectl get cm -l`` finds it).
COMPONENT_LABEL: Final = ("app.kubernetes.io/component", "autoroll-quarantine")
_UNSAFE: Final = re.compile(r"[^-._a-zA-Z0-9]")


def data_key(key: QuarantineKey) -> str:
    """A ConfigMap data key for ``key``: readable, and unique by a hash of the whole name
    (data keys allow only ``[-._a-zA-Z0-9]``, at most 253 characters)."""
    digest = hashlib.sha256(str(key).encode()).hexdigest()[:10]
    return f"{_UNSAFE.sub('_', str(key))[:200]}.{digest}"


def entry_json(entry: QuarantineEntry) -> str:
    """One entry as the JSON text stored under its data key."""
    return json.dumps(
        {
            "host": entry.key.host,
            "repository": entry.key.repository,
            "tag": entry.key.tag,
            "digest": str(entry.digest),
            "reason": entry.reason.value,
            "workload": entry.workload,
            "pod": entry.pod,
            "detail": entry.detail,
            "at": micro_time(entry.at),
            "clearedAt": micro_time(entry.cleared_at) if entry.cleared_at else None,
        },
        sort_keys=True,
    )


def entry_from_json(text: str) -> QuarantineEntry:
    """The entry stored as ``text``; ValueError naming what is wrong."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not JSON ({exc})") from exc
    if not isinstance(data, Mapping):
        raise ValueError("not a JSON object")
    at = parse_time(data.get("at"))
    if at is None:
        raise ValueError("no readable 'at' time")
    try:
        return QuarantineEntry(
            key=QuarantineKey.named(str(data["host"]), str(data["repository"]), str(data["tag"])),
            digest=Digest(str(data["digest"])),
            reason=QuarantineReason(str(data["reason"])),
            workload=str(data.get("workload", "")),
            pod=str(data.get("pod", "")),
            detail=str(data.get("detail", "")),
            at=at,
            cleared_at=parse_time(data.get("clearedAt")),
        )
    except KeyError as exc:
        raise ValueError(f"no {exc.args[0]!r}") from None


def book_from_json(document: Mapping[str, Any]) -> QuarantineBook:
    """A ConfigMap (as JSON) → the book; unreadable entries are left out (and logged)."""
    meta = document.get("metadata") or {}
    entries: dict[QuarantineKey, QuarantineEntry] = {}
    for name, text in sorted((document.get("data") or {}).items()):
        try:
            entry = entry_from_json(str(text))
        except ValueError as exc:
            log.warning(
                "quarantine entry %s cannot be read (%s); left as it is, not applied",
                name,
                exc,
                extra={"event": "quarantine-unreadable", "key": name},
            )
            continue
        entries[entry.key] = entry
    return QuarantineBook(entries, str(meta.get("resourceVersion") or ""))


class KubeQuarantine:
    """The quarantine's ConfigMap; implements ``autoroll.core.ports.QuarantinePort``."""

    def __init__(
        self,
        *,
        namespace: str,
        name: str,
        api_client_factory: Callable[[], Any] = connect,
        rest: KubeRest | None = None,
    ) -> None:
        self.namespace = namespace
        self.name = name
        self._api = LazyRest(api_client_factory, rest)
        self._collection = f"/api/v1/namespaces/{segment(namespace)}/configmaps"
        self._path = f"{self._collection}/{segment(name)}"
        self._target = f"{namespace}/{name}"

    def load(self) -> QuarantineBook:
        answer = self._api().send(
            GET_CONFIGMAP, self._target, "GET", self._path, timeout=SMALL_CALL_TIMEOUT
        )
        if answer.status == 404:
            return QuarantineBook()
        return book_from_json(answer.json())

    def save(self, book: QuarantineBook) -> QuarantineBook:
        body = self._body(book)
        if not book.version:  # never saved: create it
            operation, method, path = CREATE_CONFIGMAP, "POST", self._collection
        else:  # replace the version that was read, or fail with 409
            body["metadata"]["resourceVersion"] = book.version
            operation, method, path = UPDATE_CONFIGMAP, "PUT", self._path
        answer = self._api().send(
            operation, self._target, method, path, body=body, timeout=SMALL_CALL_TIMEOUT
        )
        if answer.status in (404, 409):
            raise QuarantineConflictError(
                f"configmap {self._target} changed since it was read ({answer.status})"
            )
        if not answer.ok:  # pragma: no cover - send raises on every other status
            raise ClusterApiError(
                f"configmap {self._target}: {answer.status}", status=answer.status
            )
        return book_from_json(answer.json())

    def _body(self, book: QuarantineBook) -> dict[str, Any]:
        return {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": self.name,
                "namespace": self.namespace,
                "labels": {COMPONENT_LABEL[0]: COMPONENT_LABEL[1]},
            },
            "data": {data_key(k): entry_json(e) for k, e in sorted(book.entries.items())},
        }


__all__ = [
    "COMPONENT_LABEL",
    "KubeQuarantine",
    "book_from_json",
    "data_key",
    "entry_from_json",
    "entry_json",
]
