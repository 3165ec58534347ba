"""The pass's adapter (``ClusterPort``): enrolled Deployments and their pods in, one write out.

Reads per pass: one cluster-wide Deployment list by label, then one pod list per namespace
that holds an enrolled Deployment (``1 + namespaces`` requests, never one per Deployment),
each narrowed server-side where its enrolled selectors allow. Pods are matched to
Deployments here, with each Deployment's own ``spec.selector``, so the core receives
``Enrolled`` pairs and never sees a label or a client object.

The only write is ``delete_pod``, sent with a UID precondition: a pod recreated under the
same name is a different object and is never deleted by a decision made about its
predecessor. RBAC: ``deployments: list``, ``pods: list`` and ``pods: delete``; with
``evict=True`` (ROLLOUT_METHOD=evict) the same call is an Eviction, so PodDisruptionBudgets
are honoured, and ``pods/eviction: create`` replaces ``pods: delete``.

A 404 (already gone), a 409 from the UID precondition (the name is a newer pod) and a 429 on
eviction (a disruption budget says not now) are answers, reported as ``DeleteOutcome``;
every other failure is one of ``autoroll.kube.errors``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

from autoroll.kube.convert import (
    LabelSelector,
    deployment_from_json,
    group_pods,
    list_items,
    pod_from_json,
    pod_list_selector,
)
from autoroll.kube.errors import ClusterApiError
from autoroll.kube.transport import (
    LIVE_PODS_FIELD_SELECTOR,
    REQUEST_TIMEOUT,
    KubeRest,
    LazyRest,
    connect,
)
from autoroll.model import DeleteOutcome, DeploymentView, Enrolled, PodView

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
    ) -> None:
        self._label_selector = label_selector
        self._evict = evict
        self._timeout = request_timeout
        self._api = LazyRest(api_client_factory, rest)
        self.requests = 0  # API requests sent, for benchmarks and tests

    def snapshot(self) -> tuple[Enrolled, ...]:
        """Every enrolled Deployment with its live pods: ``1 + namespaces`` list requests.

        Each namespace's list is converted and dropped before the next one is read, so
        memory follows the enrolled pods, not the cluster (docs/adr/005-reading-the-cluster.md).
        """
        rest = self._api()
        self.requests += 1
        body = rest.list_deployments(label_selector=self._label_selector, timeout=self._timeout)
        deployments = _deployments(_items("list deployments (all namespaces)", body))
        by_namespace: dict[str, list[LabelSelector]] = {}
        for view, selector in deployments:
            by_namespace.setdefault(view.namespace, []).append(selector)
        pods: list[tuple[PodView, Mapping[str, str]]] = []
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
        return group_pods(deployments, pods)

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


def _deployments(items: list[dict[str, Any]]) -> list[tuple[DeploymentView, LabelSelector]]:
    """Convert each Deployment; one that cannot be read is logged and skipped, not fatal."""
    deployments = []
    for item in items:
        try:
            deployments.append(deployment_from_json(item))
        except (ValueError, TypeError, AttributeError) as exc:
            meta = item.get("metadata") or {}
            log.warning(
                "ignoring Deployment %s/%s: %s",
                meta.get("namespace", "?"),
                meta.get("name", "?"),
                exc,
            )
    return deployments


__all__ = ["KubeCluster"]
