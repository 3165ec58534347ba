"""Node JSON into what a pass needs of it: each Node's platform and its Ready condition.

Pure; the platforms come from the kubelet's well-known labels, Ready from the Node's own
``Ready`` condition (docs/adr/005-reading-the-cluster.md).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final

from autoroll.core.model import (
    NodeView,
)

#: The well-known labels the kubelet puts on its Node (``GOOS``/``GOARCH`` of the kubelet).
NODE_OS_LABEL: Final = "kubernetes.io/os"
NODE_ARCH_LABEL: Final = "kubernetes.io/arch"


def node_platforms(items: Iterable[Mapping[str, Any]]) -> dict[str, str]:
    """Node name → ``os/arch`` from the Nodes' well-known labels; a Node without both is left
    out (its pods' platform stays unknown)."""
    platforms: dict[str, str] = {}
    for item in items:
        meta = item.get("metadata") or {}
        labels = meta.get("labels") or {}
        name, os_name, arch = (
            meta.get("name"),
            labels.get(NODE_OS_LABEL),
            labels.get(NODE_ARCH_LABEL),
        )
        if all(isinstance(v, str) and v and "/" not in v for v in (name, os_name, arch)):
            platforms[str(name)] = f"{os_name}/{arch}"
    return platforms


def node_from_json(node: Mapping[str, Any]) -> NodeView:
    """A ``Node`` → ``NodeView``: Ready only with a ``Ready`` condition of ``True`` on a Node
    that is not being deleted; the detail says what the condition says otherwise."""
    meta = node.get("metadata") or {}
    name = str(meta.get("name") or "")
    if meta.get("deletionTimestamp") is not None:
        return NodeView(name, False, "the Node is being deleted")
    conditions = (node.get("status") or {}).get("conditions") or ()
    ready = next(
        (c for c in conditions if isinstance(c, Mapping) and c.get("type") == "Ready"), None
    )
    if ready is None:
        return NodeView(name, False, "the Node reports no Ready condition")
    if ready.get("status") == "True":
        return NodeView(name, True)
    said = ": ".join(str(part) for part in (ready.get("reason"), ready.get("message")) if part)
    return NodeView(
        name, False, f"Ready={ready.get('status') or 'unset'}" + (f" ({said})" if said else "")
    )


__all__ = [
    "NODE_ARCH_LABEL",
    "NODE_OS_LABEL",
    "node_from_json",
    "node_platforms",
]
