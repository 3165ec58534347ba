"""The pass's adapter (``ClusterPort``): enrolled workloads and their pods in, one write out.

Finding the work. With a watched cache (``autoroll.kube.cache.WatchCache``, on by default)
a snapshot is read from memory: no request at all. Without one, or while it is not synced,
the API is listed: one cluster-wide list by label per enabled kind (Deployments,
StatefulSets, DaemonSets: WORKLOAD_KINDS), then one pod list per namespace that holds an
enrolled workload the pass looks at (``kinds + namespaces`` requests, never one per
workload), each narrowed server-side where its enrolled selectors allow. Pods are matched
to workloads here, with each workload's own ``spec.selector`` and, for StatefulSets and
DaemonSets, its ``ownerReferences`` (``pods.group_pods``), so the core receives
``Enrolled`` pairs and never sees a label or a client object. A targeted scope is answered
with every enrolled workload using a repository it names (on any host: a superset; the
pass keeps those using a named tag).

Acting on it. ``read_now`` is the read a pass makes right before it acts, always from the
API, never from the cache (ARCHITECTURE.md, properties 8 and 12), and whole: the workload
object, by name and by the enrolment label (so a removed label, a pause or window
annotation, a scale-up and the status its controller wrote are as they are now), then one
narrow pod list in its namespace with its own selector, keeping the pods it controls. Before
a DaemonSet pod is deleted the core asks for its Node (``node``): one GET, only then.

The only write is ``delete_pod``, sent with a UID precondition: a pod recreated under the same
name is a different object and is never deleted by a decision made about its predecessor. Given
``within`` (the Lease authority left), its timeouts are cut so that both connection attempts and
the answer fit in it. RBAC: ``<kind>s: list`` for each enabled kind (and ``watch``, for the
cache), ``pods: list, watch``, ``pods: delete`` and, with DaemonSets, ``nodes: get``; with
``evict=True`` (ROLLOUT_METHOD=evict) the same call is an Eviction, so PodDisruptionBudgets are
honoured, and ``pods/eviction: create`` replaces ``pods: delete``.

With ``platform_aware=True`` (PLATFORM_AWARE) a pass also lists the Nodes' metadata (one
request, labels only; RBAC ``nodes: list``) and gives each pod its node's ``os/arch``, so
the core can tell which child of a multi-arch index the pod runs.

A 404 (already gone), a 409 from the UID precondition (the name is a newer pod) and a 429 on
eviction (a disruption budget says not now) are answers, reported as ``DeleteOutcome``;
every other failure is one of ``autoroll.kube.errors``.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Final

from autoroll.core.model import DeleteOutcome, Enrolled, NodeView, WorkloadKind, WorkloadView
from autoroll.core.scope import FULL, Scope
from autoroll.kube.cache import WatchCache
from autoroll.kube.cache_objects import workload_converter
from autoroll.kube.errors import ClusterApiError
from autoroll.kube.lists import list_items
from autoroll.kube.nodes import node_from_json, node_platforms
from autoroll.kube.pods import (
    ListedPod,
    foreign_pod,
    group_pods,
    owns,
    pod_from_json,
    with_platforms,
)
from autoroll.kube.selectors import (
    LabelSelector,
    pod_list_selector,
    selector_matches,
    selector_query,
)
from autoroll.kube.streamed_lists import StreamedList
from autoroll.kube.transport import (
    CONNECT_ATTEMPTS,
    LIVE_PODS_FIELD_SELECTOR,
    REQUEST_TIMEOUT,
    SMALL_CALL_TIMEOUT,
    KubeRest,
    LazyRest,
    connect,
)
from autoroll.kube.workloads import template_repositories

log = logging.getLogger(__name__)

#: Seconds the first pass waits for the watched cache's first sync before listing itself
#: (listing while the cache lists would hold both in memory at once).
FIRST_SYNC_SECONDS: Final = 60.0

_OUTCOMES: dict[int, DeleteOutcome] = {
    404: DeleteOutcome.ALREADY_GONE,
    409: DeleteOutcome.REPLACED,
    429: DeleteOutcome.BLOCKED,
}


class KubeCluster:
    """The live cluster, through a ``KubeRest`` built on first use (``LazyRest``), and,
    when given one, a watched cache for finding work."""

    def __init__(
        self,
        *,
        label_selector: str,
        api_client_factory: Callable[[], Any] = connect,
        rest: KubeRest | None = None,
        evict: bool = False,
        platform_aware: bool = False,
        request_timeout: tuple[float, float] = REQUEST_TIMEOUT,
        kinds: Iterable[WorkloadKind] = tuple(WorkloadKind),
        cache: WatchCache | None = None,
        observe: Callable[[str], None] | None = None,
        first_sync_seconds: float = FIRST_SYNC_SECONDS,
        namespaces: Iterable[str] = (),
        namespaced: bool = False,
    ) -> None:
        self._label_selector = label_selector
        wanted = set(kinds)
        self.kinds: tuple[WorkloadKind, ...] = tuple(k for k in WorkloadKind if k in wanted)
        if not self.kinds:
            raise ValueError("KubeCluster needs at least one workload kind to list")
        self._evict = evict
        self._platform_aware = platform_aware
        self._timeout = request_timeout
        self._api = LazyRest(api_client_factory, rest, observe)
        self._cache = cache
        self._first_sync = first_sync_seconds
        self._waited = False
        self._platforms: dict[str, str] = {}  # node name -> os/arch, from the last snapshot
        # ALLOWED_NAMESPACES / WATCH_NAMESPACES: the namespaces rolled (empty: all); with
        # ``namespaced`` each is listed on its own (the rights are per namespace then).
        self._namespaces = tuple(sorted(set(namespaces)))
        if namespaced and not self._namespaces:
            raise ValueError("namespaced mode needs the namespaces to watch")
        self._namespaced = namespaced
        self._convert = {k: workload_converter(k, frozenset(self._namespaces)) for k in self.kinds}
        self.requests = 0  # API requests sent, for benchmarks and tests

    @property
    def cache(self) -> WatchCache | None:
        return self._cache

    def snapshot(self, scope: Scope = FULL) -> tuple[Enrolled, ...]:
        """The enrolled workloads ``scope`` may concern, with their live pods: from the
        watched cache when it is synced, else ``kinds + namespaces`` list requests; and,
        when platform-aware, one list of the Nodes' metadata whichever found them.

        Each namespace's list is converted and dropped before the next one is read, so
        memory follows the enrolled pods, not the cluster (docs/adr/005-reading-the-cluster.md).
        """
        found: tuple[Enrolled, ...] | None = None
        if self._cache is not None:
            if not self._waited:
                self._waited = True
                # Not past a failure: an API that does not answer is the pass's to report.
                self._cache.wait_synced(self._first_sync, until_trouble=True)
            found = self._cache.snapshot(scope)
            if found is None:
                log.info("the watched cache is not synced; listing the API for this pass")
        if found is None:
            found = self._list(scope)
        return self._placed(found, fresh=True)

    def read_now(self, workload: WorkloadView) -> Enrolled | None:
        """``workload`` and the live pods it controls as the API has them now (module
        docstring); None when it is gone, was replaced or is no longer enrolled."""
        rest = self._api()
        found = self._workload_now(rest, workload)
        if found is None:
            return None
        workload, selector = found
        self.requests += 1
        body = rest.list_pods(
            workload.namespace,
            field_selector=LIVE_PODS_FIELD_SELECTOR,
            label_selector=selector_query(selector) or None,
            timeout=self._timeout,
        )
        listed = (pod_from_json(item) for item in _items(f"list pods of {workload.key}", body))
        matched = [pod for pod in listed if selector_matches(selector, pod.labels)]
        pods = sorted((p.view for p in matched if owns(workload, p)), key=lambda p: p.name)
        foreign = sorted(
            (foreign_pod(p) for p in matched if not owns(workload, p)), key=lambda p: p.name
        )
        return self._placed((Enrolled(workload, tuple(pods), tuple(foreign)),))[0]

    def _placed(self, found: tuple[Enrolled, ...], *, fresh: bool = False) -> tuple[Enrolled, ...]:
        """With PLATFORM_AWARE, give every pod its node's ``os/arch``.

        A pass lists the Nodes' metadata once (``fresh``: in ``snapshot``, whichever found
        the work — the watched cache, a targeted or a full listing); the fresh reads before
        its deletions use that same list, so a pod on a node the list does not name (a
        node added since) keeps an unknown platform and is not rolled on a guess.
        """
        if not self._platform_aware:
            return found
        if fresh:
            self._platforms = {}
            if found:
                self.requests += 1
                nodes = self._api().list_node_metadata(timeout=self._timeout)
                self._platforms = node_platforms(_items("list nodes", nodes))
        return with_platforms(found, self._platforms)

    def _workload_now(
        self, rest: KubeRest, workload: WorkloadView
    ) -> tuple[WorkloadView, LabelSelector] | None:
        """The object itself, by name and the enrolment label (a list of one: ``list``
        RBAC, no ``get``); None when it is gone, no longer enrolled or another object now."""
        self.requests += 1
        body = rest.list_workloads(
            workload.kind,
            label_selector=self._label_selector,
            timeout=self._timeout,
            namespace=workload.namespace,
            name=workload.name,
        )
        found = self._workloads(workload.kind, _items(f"read {workload.key}", body))
        if len(found) != 1 or found[0][0].uid != workload.uid:
            return None
        return found[0]

    def _workloads(
        self, kind: WorkloadKind, items: Iterable[dict[str, Any]]
    ) -> list[tuple[WorkloadView, LabelSelector]]:
        """Convert each workload; one that cannot be read, or outside the namespaces rolled,
        is logged (once) and skipped, not fatal."""
        convert = self._convert[kind]
        return [w for w in map(convert, items) if w is not None]

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

    def delete_pod(
        self, namespace: str, name: str, uid: str, *, within: float | None = None
    ) -> DeleteOutcome:
        """Remove one pod, only if it is still the object with ``uid``.

        A plain DELETE, or an Eviction when built with ``evict=True``; both carry the UID
        precondition and both are a single API call, so a shutdown never leaves one half-done.
        ``within``: the seconds the call may take in all (``capped_timeout``).
        """
        rest = self._api()
        send = rest.evict_pod if self._evict else rest.delete_pod
        self.requests += 1
        timeout = self._timeout if within is None else capped_timeout(self._timeout, within)
        status = send(namespace, name, uid=uid, timeout=timeout)
        return _OUTCOMES.get(status, DeleteOutcome.DELETED)

    def _list(self, scope: Scope) -> tuple[Enrolled, ...]:
        rest = self._api()
        workloads: list[tuple[WorkloadView, LabelSelector]] = []
        # Cluster-wide, one list per kind; namespaced, one per kind and watched namespace.
        places = self._namespaces if self._namespaced else ("",)
        for kind in self.kinds:
            for namespace in places:
                self.requests += 1
                body = rest.list_workloads(
                    kind,
                    label_selector=self._label_selector,
                    timeout=self._timeout,
                    namespace=namespace,
                )
                where = f"in namespace {namespace}" if namespace else "(all namespaces)"
                workloads.extend(
                    self._workloads(kind, _streamed(f"list {kind.resource} {where}", body))
                )
        if not scope.is_full:
            wanted = scope.repositories
            workloads = [w for w in workloads if template_repositories(w[0]) & wanted]
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
            items = _streamed(f"list pods in namespace {namespace}", page)
            pods.extend(pod_from_json(item) for item in items)
            del page
        return group_pods(workloads, pods)


def capped_timeout(timeout: tuple[float, float], within: float) -> tuple[float, float]:
    """``(connect, read)`` cut so that a call's worst case, ``CONNECT_ATTEMPTS`` connection
    attempts then the read, ends within ``within`` seconds (unchanged when it already does).
    The connection gets at most a quarter of it per attempt, the read the rest."""
    connect, read = timeout
    if CONNECT_ATTEMPTS * connect + read <= within:
        return timeout
    connect = min(connect, within / (2 * CONNECT_ATTEMPTS))
    return connect, max(within - CONNECT_ATTEMPTS * connect, 0.0)


def _streamed(what: str, body: bytes) -> Iterator[dict[str, Any]]:
    """A big list's items one at a time, each converted and dropped before the next is
    parsed (``streamed_lists``): a pass over 10,000 Deployments never holds their JSON."""
    try:
        yield from StreamedList(body).items()
    except ValueError as exc:
        raise ClusterApiError(f"{what}: {exc}", status=0) from None


def _items(what: str, body: bytes) -> list[dict[str, Any]]:
    try:
        return list_items(body)
    except ValueError as exc:
        raise ClusterApiError(f"{what}: {exc}", status=0) from None


__all__ = ["FIRST_SYNC_SECONDS", "KubeCluster", "capped_timeout"]
