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
nothing blocking happens while it is held.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from sys import intern
from typing import Any, Final

from autoroll.core.model import Enrolled, WorkloadKind, WorkloadView
from autoroll.core.scope import Scope
from autoroll.instruments.metrics import Metrics
from autoroll.kube.cache_objects import Shared, cached_pod, workload_converter
from autoroll.kube.informer import Collection, Informer, stop_all
from autoroll.kube.namespace_pods import NamespacePods
from autoroll.kube.pods import ListedPod, foreign_pod
from autoroll.kube.selectors import (
    LabelSelector,
    pod_list_selector,
)
from autoroll.kube.transport import (
    LIST_PODS,
    LIST_WORKLOADS,
    LIVE_PODS_FIELD_SELECTOR,
    WATCH_PODS,
    WATCH_WORKLOADS,
    LazyRest,
    segment,
)
from autoroll.kube.workloads import template_repositories

log = logging.getLogger(__name__)

#: A full relist this often, in case a watch ever lost an event (none is known to).
RESYNC_SECONDS: Final = 1800.0
#: Seconds ``stop`` waits for every informer thread.
STOP_SECONDS: Final = 5.0

Workload = tuple[WorkloadView, LabelSelector]
Pod = ListedPod
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
        self._workloads: dict[str, Workload] = {}  # object uid -> workload (any kind)
        self._keys: dict[str, str] = {}  # workload key -> object uid
        self._repositories: dict[str, set[str]] = {}  # repository -> workload keys
        self._spaces: dict[str, NamespacePods] = {}
        # Each workload informer's place (kind, namespace; "" when cluster-wide), listed and
        # not broken since.
        self._kinds_ready: set[tuple[WorkloadKind, str]] = set()
        self._retired: list[Informer[Pod]] = []
        self._stopping = threading.Event()
        self._changed = threading.Condition(self._lock)
        self._shared = Shared()  # what the cached objects repeat, held once
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
            found += [space.informer for space in self._spaces.values()]
            return found + self._retired

    # -- what passes ask ---------------------------------------------------------------------

    @property
    def synced(self) -> bool:
        with self._lock:
            return self._synced_locked()

    def wait_synced(self, timeout: float, *, until_trouble: bool = False) -> bool:
        """Block until synced (True), ``timeout`` passes or the cache is stopped (False);
        with ``until_trouble``, also stop (False) once any list or watch has failed since
        the cache was last synced: the API is not answering, and waiting would only delay
        the pass that reports it."""
        deadline = self._clock() + timeout
        with self._lock:
            while not self._synced_locked():
                left = deadline - self._clock()
                if left <= 0 or self._stopping.is_set() or (until_trouble and self._troubled):
                    return False
                self._changed.wait(min(left, 0.5))
            return True

    def snapshot(self, scope: Scope) -> tuple[Enrolled, ...] | None:
        """The workloads ``scope`` may concern (a targeted scope: those using one of its
        repositories) with their cached pods; None when not synced."""
        with self._lock:
            if not self._synced_locked():
                return None
            if scope.is_full:
                keys: Iterable[str] = self._keys
            else:
                keys = set().union(*(self._repositories.get(r, ()) for r in scope.repositories))
            found = [self._enrolled(key) for key in keys]
        return tuple(sorted(found, key=lambda e: e.workload.key))

    def selector(self, key: str) -> LabelSelector | None:
        """The pod selector of the workload ``key`` as last seen (for a fresh read)."""
        with self._lock:
            uid = self._keys.get(key)
            return self._workloads[uid][1] if uid is not None else None

    # -- WatchPort ---------------------------------------------------------------------------

    def subscribe(self, listener: Listener) -> None:
        with self._lock:
            self._listeners.append(listener)

    def cached(self, key: str) -> Enrolled | None:
        with self._lock:
            if key not in self._keys or not self._synced_locked():
                return None
            return self._enrolled(key)

    def counts(self) -> tuple[int, int]:
        """(workloads, pods) held now."""
        with self._lock:
            return len(self._workloads), sum(len(s.pods) for s in self._spaces.values())

    # -- changes (called from informer threads) --------------------------------------------

    def _workloads_replaced(
        self, kind: WorkloadKind, namespace: str, items: Mapping[str, Workload]
    ) -> None:
        """One informer listed (again): its place's workloads are ``items`` now."""
        with self._lock:
            self._kinds_ready.add((kind, namespace))
            old = [
                uid
                for uid, (view, _) in self._workloads.items()
                if view.kind is kind and (not namespace or view.namespace == namespace)
            ]
            changed = {self._workloads[uid][0].key for uid in old}
            namespaces = {self._workloads[uid][0].namespace for uid in old}
            for uid in old:
                self._drop_workload_locked(uid)
            for uid, workload in items.items():
                self._put_workload_locked(uid, workload)
                changed.add(workload[0].key)
            # Every namespace: the first time every kind is in, no namespace has its space yet.
            namespaces |= {view.namespace for view, _ in self._workloads.values()}
            self._arrange_spaces_locked(namespaces | set(self._spaces))
        self._after(changed)

    def _workload_upserted(self, uid: str, workload: Workload) -> None:
        with self._lock:
            changed = self._drop_workload_locked(uid, keep_members=True)
            self._put_workload_locked(uid, workload)
            changed.add(workload[0].key)
            self._arrange_spaces_locked({workload[0].namespace})
        self._after(changed)

    def _workload_deleted(self, uid: str) -> None:
        with self._lock:
            workload = self._workloads.get(uid)
            changed = self._drop_workload_locked(uid)
            if workload is not None:
                self._arrange_spaces_locked({workload[0].namespace})
        self._after(changed)

    def _pods_replaced(self, space: NamespacePods, items: Mapping[str, Pod]) -> None:
        with self._lock:
            if self._spaces.get(space.namespace) is not space:
                return  # a dropped namespace's informer, still stopping
            # Listed with an older narrowing than wanted: not ready until the restart lists.
            space.ready = space.informer.listing_selector == space.selector
            changed = set(space.members)
            for uid in list(space.pods):
                space.unfile(uid)
            for uid, pod in items.items():
                changed |= space.file(uid, self._interned(pod))
            self._count_locked()
        self._after(changed)

    def _pod_upserted(self, space: NamespacePods, uid: str, pod: Pod) -> None:
        with self._lock:
            if self._spaces.get(space.namespace) is not space:
                return
            changed = space.file(uid, self._interned(pod))
        self._after(changed)

    def _pod_deleted(self, space: NamespacePods, uid: str) -> None:
        with self._lock:
            if self._spaces.get(space.namespace) is not space:
                return
            changed = space.unfile(uid)
        self._after(changed)

    def _unsynced(self, space: NamespacePods | tuple[WorkloadKind, str]) -> None:
        """An informer's watch broke (a namespace's pods, or a kind's workloads): not ready
        until it has listed again."""
        with self._lock:
            if isinstance(space, tuple):
                self._kinds_ready.discard(space)
            else:
                space.ready = False
            self._troubled = True
            self._changed.notify_all()
        if self._metrics is not None:
            self._metrics.cache_synced.set(0)

    # -- the bookkeeping (lock held) ---------------------------------------------------------

    def _put_workload_locked(self, uid: str, workload: Workload) -> None:
        workload = self._shared.workload(workload)
        self._shared.trim(len(self._workloads))
        view, selector = workload
        key = intern(view.key)  # one string for every table that files the workload
        self._workloads[uid] = workload
        self._keys[key] = uid
        for repository in template_repositories(view):
            self._repositories.setdefault(repository, set()).add(key)
        space = self._spaces.get(view.namespace)
        if space is not None:
            space.put_workload(view, selector)

    def _drop_workload_locked(self, uid: str, *, keep_members: bool = False) -> set[str]:
        """Forget a workload (its pods stay cached while its namespace is watched);
        ``keep_members`` when it is put back at once (an update)."""
        workload = self._workloads.pop(uid, None)
        if workload is None:
            return set()
        view = workload[0]
        key = view.key
        if self._keys.get(key) == uid:
            del self._keys[key]
        for repository in template_repositories(view):
            keys = self._repositories.get(repository)
            if keys is not None:
                keys.discard(key)
                if not keys:
                    del self._repositories[repository]
        space = self._spaces.get(view.namespace)
        if space is not None and not keep_members:
            space.drop_workload(key)
        return {key}

    def _arrange_spaces_locked(self, namespaces: Iterable[str]) -> None:
        """Start, restart or drop each namespace's pod informer to match its workloads."""
        if self._stopping.is_set() or not self._workloads_ready_locked():
            return
        by_namespace: dict[str, list[Workload]] = {}
        for workload in self._workloads.values():
            by_namespace.setdefault(workload[0].namespace, []).append(workload)
        for namespace in sorted(set(namespaces)):
            workloads = by_namespace.get(namespace, [])
            space = self._spaces.get(namespace)
            if not workloads:
                if space is not None:
                    del self._spaces[namespace]
                    space.informer.request_stop()
                    self._retired.append(space.informer)
                continue
            wanted = pod_list_selector(s for _, s in workloads)
            if space is None:
                space = self._new_space(namespace, wanted)
                self._spaces[namespace] = space
                space.informer.start()
            elif space.selector != wanted:
                # Pods the old narrowing left out were never seen: list with the new one.
                space.selector = wanted
                space.ready = False
                space.informer.restart(wanted)
            keys = {view.key for view, _ in workloads}
            for key in space.index.keys() - keys:
                space.drop_workload(key)
            for view, selector in workloads:
                space.put_workload(view, selector)
        self._retired = [i for i in self._retired if i.alive]
        self._count_locked()

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

    def _workloads_ready_locked(self) -> bool:
        return self._kinds_ready.issuperset(self._places)

    def _synced_locked(self) -> bool:
        return (
            self._workloads_ready_locked()
            and not self._stopping.is_set()
            and all(space.ready for space in self._spaces.values())
        )

    def _enrolled(self, key: str) -> Enrolled:
        view, _ = self._workloads[self._keys[key]]
        space = self._spaces.get(view.namespace)
        if space is None:  # cannot happen once synced (every namespace has its space)
            return Enrolled(view, ())
        pods = (space.pods[uid].view for uid in space.members.get(key, ()))
        foreign = (foreign_pod(space.pods[uid]) for uid in space.foreign.get(key, ()))
        return Enrolled(
            view,
            tuple(sorted(pods, key=lambda p: p.name)),
            tuple(sorted(foreign, key=lambda p: p.name)),
        )

    def _interned(self, pod: Pod) -> Pod:
        """``pod`` sharing what the pods of its template repeat (memory per pod)."""
        shared = self._shared.pod(pod)
        self._shared.trim(len(self._workloads))
        return shared

    def _count_locked(self) -> None:
        if self._metrics is None:
            return
        self._metrics.cache_objects.labels(kind="workloads").set(len(self._workloads))
        self._metrics.cache_objects.labels(kind="pods").set(
            sum(len(s.pods) for s in self._spaces.values())
        )

    def _relisted(self, kind: str, cause: str) -> None:
        if self._metrics is not None:
            self._metrics.cache_relists.labels(cause=cause).inc()
        log.debug("watched cache: listing %s (%s)", kind, cause)

    def _after(self, changed: set[str]) -> None:
        """Wake waiters, update the gauge, tell the listeners (outside the lock)."""
        with self._lock:
            synced = self._synced_locked()
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
