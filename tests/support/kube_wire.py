"""The Kubernetes API's JSON as the fake API server (``fake_kube``) reads and answers it: a
list, a failure Status, which pod a DELETE or an Eviction removes, and whether a Lease
PATCH releases the Lease; and the routes it tells requests apart by."""

from __future__ import annotations

import json
from typing import Any, Literal, get_args

#: "delete" is a pod DELETE or, with ROLLOUT_METHOD=evict, a POST of an Eviction. The
#: lease routes serve the one leader-election Lease (fake_kube.LEASE_NAMESPACE/LEASE_NAME).
Route = Literal[
    "list-deployments",
    "read-deployment",
    "list-workloads",
    "list-pods",
    "delete",
    "get-lease",
    "create-lease",
    "patch-lease",
    "watch-lease",
]
ROUTES: tuple[Route, ...] = get_args(Route)


def is_release(body: bytes) -> bool:
    """Is this Lease PATCH a release (a spec whose holderIdentity is null)?"""
    spec = json.loads(body or b"{}").get("spec")
    return isinstance(spec, dict) and "holderIdentity" in spec and spec["holderIdentity"] is None


def removal(path: str, body: bytes) -> tuple[str, str | None]:
    """(pod name, precondition UID) of a DELETE or an Eviction request."""
    document = json.loads(body or b"{}")
    if path.endswith("/eviction"):
        name = path.rsplit("/", 2)[1]
        document = document.get("deleteOptions") or {}
    else:
        name = path.rpartition("/")[2]
    return name, (document.get("preconditions") or {}).get("uid")


def list_document(kind: str, api_version: str, items: list[dict[str, Any]]) -> dict[str, Any]:
    return {"kind": kind, "apiVersion": api_version, "metadata": {}, "items": items}


def status_document(code: int, reason: str) -> dict[str, Any]:
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "status": "Failure",
        "code": code,
        "reason": reason,
    }
