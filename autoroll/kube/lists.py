"""List answers parsed without their ``managedFields``: the items, and one page of them.

Pure; the biggest bodies the controller reads go through here, so what nothing reads is
dropped while parsing (docs/performance.md).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any


def list_items(body: bytes | str) -> list[dict[str, Any]]:
    """The ``items`` of a list answer, as JSON objects without their ``managedFields``.

    ``managedFields`` is often the largest part of an object and nothing here reads it;
    dropping it while parsing frees it at once, which lowers the peak memory of a big
    list and the garbage collector's work. ``ValueError`` names what is wrong with a body
    that is not a list answer.
    """
    try:
        document = json.loads(body, object_hook=_without_managed_fields)
    except ValueError as exc:
        raise ValueError(f"the API answered with a body that is not JSON ({exc})") from None
    items = document.get("items") if isinstance(document, dict) else None
    if items is None:
        return []
    if not isinstance(items, list):
        raise ValueError("the answer's items are not a list")
    return [item for item in items if isinstance(item, dict)]


@dataclass(frozen=True, slots=True)
class ListPage:
    """One page of a list answer: its items, the token for the next page ("" at the end),
    and the resourceVersion of the list (a watch starts there)."""

    items: list[dict[str, Any]]
    continue_token: str
    resource_version: str


def list_page(body: bytes | str) -> ListPage:
    """``list_items``, with the list's ``metadata.continue`` and ``resourceVersion``."""
    try:
        document = json.loads(body, object_hook=_without_managed_fields)
    except ValueError as exc:
        raise ValueError(f"the API answered with a body that is not JSON ({exc})") from None
    if not isinstance(document, dict):
        raise ValueError("the answer is not a list")
    items = document.get("items") or []
    if not isinstance(items, list):
        raise ValueError("the answer's items are not a list")
    meta = document.get("metadata") or {}
    return ListPage(
        [item for item in items if isinstance(item, dict)],
        str(meta.get("continue") or ""),
        str(meta.get("resourceVersion") or ""),
    )


def _without_managed_fields(obj: dict[str, Any]) -> dict[str, Any]:
    obj.pop("managedFields", None)
    return obj


__all__ = [
    "ListPage",
    "list_items",
    "list_page",
]
