"""The watched cache: enrolled workloads and their pods in memory, for *finding* work.

One informer (``autoroll.kube.informer``) per enabled kind keeps the enrolled workloads
(Deployments, StatefulSets, DaemonSets; cluster-wide, by the enrolment label); one informer per
namespace that holds an enrolled workload keeps its live pods, narrowed by the same label
selector a pass's pod list uses (``pod_list_selector``). When the enrolled workloads of a
namespace change that selector, that namespace's informer lists again with the new one; a
namespace left without enrolled workloads is dropped. Pods are filed under every workload that
claims them, by the rule a listing uses (its selector, found through a ``SelectorIndex``, and
its controller: ``pods.owns``; the pods a selector matches that its workload does not control
are kept as that workload's foreign pods), and workloads under the repositories their templates
use, so a targeted pass finds its workloads without looking at the others. Workloads are keyed
by their own ``key`` (namespace, kind and name), so kinds never collide.

What the cache is *not*: a source of decisions. ``snapshot`` answers where to look (None
whenever any informer is not synced: the pass then lists the API, as without a cache), and
before any deletion the pass reads that workload fresh from the API
(``KubeCluster.read_now``) and decides on that read alone (docs/adr/017).

Listeners (``subscribe``) are told which workload keys changed — their pods or their
object — after each change is applied, outside the lock: the roll pacer
(``autoroll.controller.pacer``) looks again as soon as a rolling workload's replacement is Ready.

Thread-safety: informer threads apply changes and passes read snapshots under one lock;
nothing blocking happens while it is held. What is held, and how each change applies, is the
``CacheStore``'s (``autoroll.kube.cache_store``), always called under that lock; the cache
runs the informers, answers the passes and tells the listeners.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final

from autoroll.core.model import Enrolled, WorkloadKind
from autoroll.core.scope import Scope
from autoroll.instruments.metrics import Metrics
from autoroll.kube.cache_objects import cached_pod, workload_converter
from autoroll.kube.cache_store import CacheStore, Pod, Workload
from autoroll.kube.informer import Informer, stop_all
from autoroll.kube.listing import Collection
from autoroll.kube.namespace_pods import NamespacePods
from autoroll.kube.operations import LIST_PODS, LIST_WORKLOADS, WATCH_PODS, WATCH_WORKLOADS
from autoroll.kube.selectors import LabelSelector
from autoroll.kube.transport import LIVE_PODS_FIELD_SELECTOR, LazyRest, segment

log = logging.getLogger(__name__)

#: A full relist this often, in case a watch ever lost an event (none is known to).
RESYNC_SECONDS: Final = 1800.0
#: Seconds ``stop`` waits for every informer thread.
STOP_SECONDS: Final = 5.0

Listener = Callable[[frozenset[str]], None]


class WatchCache:
    """Enrolled workloads and their pods from list + watch (module docstring)."""

    def __init__(
        self,
        *,
        label_selector: str,
        rest: LazyRest,
        kinds: Iterable[WorkloadKind] = tuple(WorkloadKind),
        metrics: Metrics | None = None,
        resync_seconds: float = RESYNC_SECONDS,
        clock: Callable[[], float] = time.monotonic,
        informer: type[Informer[Any]] = Informer,
        namespaces: Iterable[str] = (),
        namespaced: bool = False,
    ) -> None:
        self._label_selector = label_selector
        self._informer = informer
        self._rest = rest
        self._metrics = metrics
        self._resync = resync_seconds
        self._clock = clock
        self._lock = threading.Lock()
        self._listeners: list[Listener] = []
        self._stopping = threading.Event()
        self._changed = threading.Condition(self._lock)
        self._troubled = False  # a list or watch failed since the cache was last synced
        wanted = set(kinds)
        self._kinds = tuple(k for k in WorkloadKind if k in wanted)
        allowed = frozenset(namespaces)
        if namespaced and not allowed:
            raise ValueError("namespaced mode needs the namespaces to watch")
        # Cluster-wide, one informer per kind; namespaced, one per kind and namespace.
        self._places = tuple(
            (kind, namespace)
            for kind in self._kinds
            for namespace in (sorted(allowed) if namespaced else [""])
        )
        # What is held, and how each change applies: always under ``_lock``.
        self._store = CacheStore(
            places=self._places,
            new_space=self._new_space,
            stopping=self._stopping,
            metrics=metrics,
        )
        self._workload_informers: list[Informer[Workload]] = [
            informer(
                Collection(
                    (
                        f"/apis/apps/v1/namespaces/{segment(namespace)}/{kind.resource}"
                        if namespace
                        else f"/apis/apps/v1/{kind.resource}"
                    ),
                    f"in namespace {namespace}" if namespace else "(all namespaces)",
                    LIST_WORKLOADS[kind],
                    WATCH_WORKLOADS[kind],
                    label_selector=label_selector,
                ),
                rest=rest,
                convert=workload_converter(kind, allowed),
                sink=_WorkloadSink(self, kind, namespace),
                resync_seconds=resync_seconds,
                on_list=lambda cause: self._relisted("workloads", cause),
                clock=clock,
                name=f"watch-{kind.resource}" + (f"-{namespace}" if namespace else ""),
            )
            for kind, namespace in self._places
        ]

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> None:
        """Start the workload informers; pod informers start once every kind is listed."""
        for informer in self._workload_informers:
            informer.start()

    def request_stop(self) -> None:
        self._stopping.set()
        for informer in self._informers():
            informer.request_stop()

    def stop(self, timeout: float = STOP_SECONDS) -> None:
        self.request_stop()
        stop_all(self._informers(), timeout)

    def _informers(self) -> list[Informer[Any]]:
        with self._lock:
            self._changed.notify_all()
            found: list[Informer[Any]] = list(self._workload_informers)
            found += [space.informer for space in self._store.spaces.values()]
            return found + self._store.retired

    # -- what passes ask ---------------------------------------------------------------------

    @property
    def synced(self) -> bool:
        with self._lock:
            return self._store.synced()

    def wait_synced(self, timeout: float, *, until_trouble: bool = False) -> bool:
        """Block until synced (True), ``timeout`` passes or the cache is stopped (False);
        with ``until_trouble``, also stop (False) once any list or watch has failed since
        the cache was last synced: the API is not answering, and waiting would only delay
        the pass that reports it."""
        deadline = self._clock() + timeout
        with self._lock:
            while not self._store.synced():
                left = deadline - self._clock()
                if left <= 0 or self._stopping.is_set() or (until_trouble and self._troubled):
                    return False
                self._changed.wait(min(left, 0.5))
            return True

    def snapshot(self, scope: Scope) -> tuple[Enrolled, ...] | None:
        """The workloads ``scope`` may concern (a targeted scope: those using one of its
        repositories) with their cached pods; None when not synced."""
        with self._lock:
            if not self._store.synced():
                return None
            found = [self._store.enrolled(key) for key in self._store.keys_for(scope)]
        return tuple(sorted(found, key=lambda e: e.workload.key))

    def selector(self, key: str) -> LabelSelector | None:
        """The pod selector of the workload ``key`` as last seen (for a fresh read)."""
        with self._lock:
            return self._store.selector(key)

    # -- WatchPort ---------------------------------------------------------------------------

    def subscribe(self, listener: Listener) -> None:
        with self._lock:
            self._listeners.append(listener)

    def cached(self, key: str) -> Enrolled | None:
        with self._lock:
            if not self._store.has(key) or not self._store.synced():
                return None
            return self._store.enrolled(key)

    def counts(self) -> tuple[int, int]:
        """(workloads, pods) held now."""
        with self._lock:
            return self._store.counts()

    # -- changes (called from informer threads) --------------------------------------------

    def _workloads_replaced(
        self, kind: WorkloadKind, namespace: str, items: Mapping[str, Workload]
    ) -> None:
        """One informer listed (again): its place's workloads are ``items`` now."""
        with self._lock:
            changed = self._store.workloads_replaced(kind, namespace, items)
        self._after(changed)

    def _workload_upserted(self, uid: str, workload: Workload) -> None:
        with self._lock:
            changed = self._store.workload_upserted(uid, workload)
        self._after(changed)

    def _workload_deleted(self, uid: str) -> None:
        with self._lock:
            changed = self._store.workload_deleted(uid)
        self._after(changed)

    def _pods_replaced(self, space: NamespacePods, items: Mapping[str, Pod]) -> None:
        with self._lock:
            changed = self._store.pods_replaced(space, items)
        if changed is not None:
            self._after(changed)

    def _pod_upserted(self, space: NamespacePods, uid: str, pod: Pod) -> None:
        with self._lock:
            changed = self._store.pod_upserted(space, uid, pod)
        if changed is not None:
            self._after(changed)

    def _pod_deleted(self, space: NamespacePods, uid: str) -> None:
        with self._lock:
            changed = self._store.pod_deleted(space, uid)
        if changed is not None:
            self._after(changed)

    def _unsynced(self, space: NamespacePods | tuple[WorkloadKind, str]) -> None:
        """An informer's watch broke (a namespace's pods, or a kind's workloads): not ready
        until it has listed again."""
        with self._lock:
            if isinstance(space, tuple):
                self._store.kinds_ready.discard(space)
            else:
                space.ready = False
            self._troubled = True
            self._changed.notify_all()
        if self._metrics is not None:
            self._metrics.cache_synced.set(0)

    # -- the informers' plumbing -------------------------------------------------------------

    def _new_space(self, namespace: str, selector: str | None) -> NamespacePods:
        sink = _PodSink(self)
        informer: Informer[Pod] = self._informer(
            Collection(
                f"/api/v1/namespaces/{segment(namespace)}/pods",
                f"in namespace {namespace}",
                LIST_PODS,
                WATCH_PODS,
                label_selector=selector,
                field_selector=LIVE_PODS_FIELD_SELECTOR,
            ),
            rest=self._rest,
            convert=cached_pod,
            sink=sink,
            resync_seconds=self._resync,
            on_list=lambda cause: self._relisted("pods", cause),
            clock=self._clock,
            name=f"watch-pods-{namespace}",
        )
        space = NamespacePods(namespace, informer, selector)
        sink.space = space
        return space

    def _relisted(self, kind: str, cause: str) -> None:
        if self._metrics is not None:
            self._metrics.cache_relists.labels(cause=cause).inc()
        log.debug("watched cache: listing %s (%s)", kind, cause)

    def _after(self, changed: set[str]) -> None:
        """Wake waiters, update the gauge, tell the listeners (outside the lock)."""
        with self._lock:
            synced = self._store.synced()
            if synced:
                self._troubled = False
            self._changed.notify_all()
            listeners = list(self._listeners)
        if self._metrics is not None:
            self._metrics.cache_synced.set(1 if synced else 0)
        if not changed:
            return
        keys = frozenset(changed)
        for listener in listeners:
            try:
                listener(keys)
            except Exception:  # a listener's bug must not stop the watch
                log.exception("a watched-cache listener failed")


class _WorkloadSink:
    """One workload informer's sink: its kind and namespace ("" when cluster-wide)."""

    def __init__(self, cache: WatchCache, kind: WorkloadKind, namespace: str = "") -> None:
        self._cache = cache
        self._kind = kind
        self._namespace = namespace

    def replaced(self, items: Mapping[str, Workload]) -> None:
        self._cache._workloads_replaced(self._kind, self._namespace, items)

    def upserted(self, uid: str, item: Workload) -> None:
        self._cache._workload_upserted(uid, item)

    def deleted(self, uid: str) -> None:
        self._cache._workload_deleted(uid)

    def unsynced(self) -> None:
        self._cache._unsynced((self._kind, self._namespace))


class _PodSink:
    """One namespace's informer's sink; knows its ``NamespacePods`` (set right after it is made)."""

    space: NamespacePods

    def __init__(self, cache: WatchCache) -> None:
        self._cache = cache

    def replaced(self, items: Mapping[str, Pod]) -> None:
        self._cache._pods_replaced(self.space, items)

    def upserted(self, uid: str, item: Pod) -> None:
        self._cache._pod_upserted(self.space, uid, item)

    def deleted(self, uid: str) -> None:
        self._cache._pod_deleted(self.space, uid)

    def unsynced(self) -> None:
        self._cache._unsynced(self.space)


__all__ = ["RESYNC_SECONDS", "WatchCache"]
