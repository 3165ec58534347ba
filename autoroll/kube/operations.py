"""Every call the controller makes of the Kubernetes API, as an ``Operation``.

Each names its action (for messages and the ``autoroll_kube_requests_total`` label), the RBAC
rule it needs, which of the chart's objects grants that rule, and the statuses it expects as
answers rather than errors (``autoroll.kube.errors.api_error`` maps the others). The calls
are sent through ``autoroll.kube.transport.KubeRest``; a module whose calls no other module
makes keeps its own operations beside them (``secrets``, ``webhook_config``).
"""

from __future__ import annotations

from typing import Final

from autoroll.core.model import WorkloadKind
from autoroll.kube.errors import Grant, Operation

LIST_WORKLOADS: Final = {
    kind: Operation(f"list {kind.resource}", f"{kind.resource}: list", Grant.WORKLOAD_KIND)
    for kind in WorkloadKind
}
LIST_PODS: Final = Operation("list pods", "pods: list")
LIST_NODES: Final = Operation("list nodes", "nodes: list", Grant.NODE_PLATFORMS)
GET_NODE: Final = Operation("get node", "nodes: get", Grant.NODES, answers=frozenset({404}))
DELETE_POD: Final = Operation("delete pod", "pods: delete", answers=frozenset({404, 409}))
EVICT_POD: Final = Operation(
    "evict pod", "pods/eviction: create", answers=frozenset({404, 409, 429})
)
CREATE_EVENT: Final = Operation("create event for", "events: create", Grant.EVENTS)
GET_LEASE: Final = Operation("get lease", "leases: get", Grant.LEASE_ROLE, answers=frozenset({404}))
CREATE_LEASE: Final = Operation(
    "create lease", "leases: create", Grant.LEASE_ROLE, answers=frozenset({404, 409})
)
PATCH_LEASE: Final = Operation(
    "patch lease", "leases: patch", Grant.LEASE_ROLE, answers=frozenset({404, 409})
)
WATCH_LEASE: Final = Operation("watch lease", "leases: watch", Grant.LEASE_ROLE)
GET_CONFIGMAP: Final = Operation(
    "get configmap", "configmaps: get", Grant.QUARANTINE_ROLE, answers=frozenset({404})
)
CREATE_CONFIGMAP: Final = Operation(
    "create configmap", "configmaps: create", Grant.QUARANTINE_ROLE, answers=frozenset({409})
)
UPDATE_CONFIGMAP: Final = Operation(
    "update configmap", "configmaps: update", Grant.QUARANTINE_ROLE, answers=frozenset({404, 409})
)
LIST_EVENTS: Final = Operation("list events", "events: list", Grant.HISTORY)
WATCH_WORKLOADS: Final = {
    kind: Operation(f"watch {kind.resource}", f"{kind.resource}: watch", Grant.WATCH)
    for kind in WorkloadKind
}
WATCH_PODS: Final = Operation("watch pods", "pods: watch", Grant.WATCH)


__all__ = [
    "CREATE_CONFIGMAP",
    "CREATE_EVENT",
    "CREATE_LEASE",
    "DELETE_POD",
    "EVICT_POD",
    "GET_CONFIGMAP",
    "GET_LEASE",
    "GET_NODE",
    "LIST_EVENTS",
    "LIST_NODES",
    "LIST_PODS",
    "LIST_WORKLOADS",
    "PATCH_LEASE",
    "UPDATE_CONFIGMAP",
    "WATCH_LEASE",
    "WATCH_PODS",
    "WATCH_WORKLOADS",
]
