"""The pass's adapter (``ClusterPort``): enrolled workloads and their pods in, one write out.

Reads per pass: one cluster-wide list by label per enabled kind (Deployments, StatefulSets,
DaemonSets: WORKLOAD_KINDS), then one pod list per namespace that holds an enrolled
workload (``kinds + namespaces`` requests, never one per workload), each narrowed
server-side where its enrolled selectors allow. Pods are matched to workloads here, with
each workload's own ``spec.selector`` and, for StatefulSets and DaemonSets, its
``ownerReferences`` (``convert.group_pods``), so the core receives ``Enrolled`` pairs and
never sees a label or a client object. Before a DaemonSet pod is deleted the core asks for
its Node (``node``): one GET, only then.

The only write is ``delete_pod``, sent with a UID precondition: a pod recreated under the
same name is a different object and is never deleted by a decision made about its
predecessor. RBAC: ``<kind>s: list`` for each enabled kind, ``pods: list``, ``pods: delete``
and, with DaemonSets, ``nodes: get``; with ``evict=True`` (ROLLOUT_METHOD=evict) the same
call is an Eviction, so PodDisruptionBudgets are honoured, and ``pods/eviction: create``
replaces ``pods: delete``.

A 404 (already gone), a 409 from the UID precondition (the name is a newer pod) and a 429 on
eviction (a disruption budget says not now) are answers, reported as ``DeleteOutcome``;
every other failure is one of ``autoroll.kube.errors``.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable
from typing import Any

from autoroll.kube.convert import (
    LabelSelector,
    ListedPod,
    group_pods,
    list_items,
    node_from_json,
    pod_from_json,
    pod_list_selector,
    workload_from_json,
)
from autoroll.kube.errors import ClusterApiError
from autoroll.kube.transport import (
    LIVE_PODS_FIELD_SELECTOR,
    REQUEST_TIMEOUT,
    SMALL_CALL_TIMEOUT,
    KubeRest,
    LazyRest,
    connect,
)
from autoroll.model import DeleteOutcome, Enrolled, NodeView, WorkloadKind, WorkloadView

log = logging.getLogger(__name__)

_OUTCOMES: dict[int, DeleteOutcome] = {
    404: DeleteOutcome.ALREADY_GONE,
    409: DeleteOutcome.REPLACED,
    429: DeleteOutcome.BLOCKED,
}


class KubeCluster:
    """The live cluster, through a ``KubeRest`` built on first use (``LazyRest``)."""

    def __init__(
        self,
        *,
        label_selector: str,
        api_client_factory: Callable[[], Any] = connect,
        rest: KubeRest | None = None,
        evict: bool = False,
        request_timeout: tuple[float, float] = REQUEST_TIMEOUT,
        kinds: Iterable[WorkloadKind] = tuple(WorkloadKind),
    ) -> None:
        self._label_selector = label_selector
        wanted = set(kinds)
        self.kinds: tuple[WorkloadKind, ...] = tuple(k for k in WorkloadKind if k in wanted)
        if not self.kinds:
            raise ValueError("KubeCluster needs at least one workload kind to list")
        self._evict = evict
        self._timeout = request_timeout
        self._api = LazyRest(api_client_factory, rest)
        self.requests = 0  # API requests sent, for benchmarks and tests

    def snapshot(self) -> tuple[Enrolled, ...]:
        """Every enrolled workload with its pods: ``kinds + namespaces`` list requests.

        Each namespace's list is converted and dropped before the next one is read, so
        memory follows the enrolled pods, not the cluster (docs/adr/005-reading-the-cluster.md).
        """
        rest = self._api()
        workloads: list[tuple[WorkloadView, LabelSelector]] = []
        for kind in self.kinds:
            self.requests += 1
            body = rest.list_workloads(
                kind, label_selector=self._label_selector, timeout=self._timeout
            )
            workloads.extend(
                _workloads(kind, _items(f"list {kind.resource} (all namespaces)", body))
            )
        by_namespace: dict[str, list[LabelSelector]] = {}
        for view, selector in workloads:
            by_namespace.setdefault(view.namespace, []).append(selector)
        pods: list[ListedPod] = []
        for namespace in sorted(by_namespace):
            self.requests += 1
            page = rest.list_pods(
                namespace,
                field_selector=LIVE_PODS_FIELD_SELECTOR,
                label_selector=pod_list_selector(by_namespace[namespace]),
                timeout=self._timeout,
            )
            items = _items(f"list pods in namespace {namespace}", page)
            pods.extend(pod_from_json(item) for item in items)
        return group_pods(workloads, pods)

    def node(self, name: str) -> NodeView:
        """Is Node ``name`` Ready? One GET (``nodes: get``); a Node that is gone is not Ready."""
        rest = self._api()
        self.requests += 1
        body = rest.get_node(name, timeout=SMALL_CALL_TIMEOUT)
        if body is None:
            return NodeView(name, False, "the Node does not exist")
        try:
            document = json.loads(body)
        except ValueError as exc:
            raise ClusterApiError(f"get node {name}: not JSON ({exc})", status=0) from None
        if not isinstance(document, dict):
            raise ClusterApiError(f"get node {name}: the answer is not an object", status=0)
        return node_from_json(document)

    def delete_pod(self, namespace: str, name: str, uid: str) -> DeleteOutcome:
        """Remove one pod, only if it is still the object with ``uid``.

        A plain DELETE, or an Eviction when built with ``evict=True``; both carry the UID
        precondition and both are a single API call, so a shutdown never leaves one half-done.
        """
        rest = self._api()
        send = rest.evict_pod if self._evict else rest.delete_pod
        self.requests += 1
        status = send(namespace, name, uid=uid, timeout=self._timeout)
        return _OUTCOMES.get(status, DeleteOutcome.DELETED)


def _items(what: str, body: bytes) -> list[dict[str, Any]]:
    try:
        return list_items(body)
    except ValueError as exc:
        raise ClusterApiError(f"{what}: {exc}", status=0) from None


def _workloads(
    kind: WorkloadKind, items: list[dict[str, Any]]
) -> list[tuple[WorkloadView, LabelSelector]]:
    """Convert each workload; one that cannot be read is logged and skipped, not fatal."""
    workloads = []
    for item in items:
        try:
            workloads.append(workload_from_json(kind, item))
        except (ValueError, TypeError, AttributeError) as exc:
            meta = item.get("metadata") or {}
            log.warning(
                "ignoring %s %s/%s: %s",
                kind.api_kind,
                meta.get("namespace", "?"),
                meta.get("name", "?"),
                exc,
            )
    return workloads


__all__ = ["KubeCluster"]
