"""What the watched cache holds, and how each change its informers report is applied.

The enrolled workloads, by object UID, by key (namespace, kind and name: kinds never collide)
and by the image repositories their templates use, so a targeted pass finds its workloads
without looking at the others; each watched namespace's pods, filed under the workloads that
claim them (``NamespacePods``), its pod informer started, restarted with a new narrowing or
retired as the namespace's enrolled workloads change; and which workload informers have
listed. Every method returns the workload keys a change touched, for the cache to tell its
listeners.

Not thread-safe on its own: ``autoroll.kube.cache.WatchCache`` calls it with its lock held
(informer threads apply changes, passes read snapshots), and nothing here blocks.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping
from sys import intern

from autoroll.core.model import Enrolled, WorkloadKind, WorkloadView
from autoroll.core.scope import Scope
from autoroll.instruments.metrics import Metrics
from autoroll.kube.cache_objects import Shared
from autoroll.kube.informer import Informer
from autoroll.kube.namespace_pods import NamespacePods
from autoroll.kube.pods import ListedPod, foreign_pod
from autoroll.kube.selectors import LabelSelector, pod_list_selector
from autoroll.kube.workloads import template_repositories

Workload = tuple[WorkloadView, LabelSelector]
Pod = ListedPod


class CacheStore:
    """The cache's workloads and namespaces' pods (module docstring); the cache's lock held."""

    def __init__(
        self,
        *,
        places: tuple[tuple[WorkloadKind, str], ...],
        new_space: Callable[[str, str | None], NamespacePods],
        stopping: threading.Event,
        metrics: Metrics | None,
    ) -> None:
        """``places``: each workload informer's (kind, namespace; "" when cluster-wide);
        ``new_space`` makes a namespace's ``NamespacePods`` with its pod informer, not yet
        started; ``stopping`` is set once the cache is told to stop."""
        self._places = places
        self._new_space = new_space
        self._stopping = stopping
        self._metrics = metrics
        self.workloads: dict[str, Workload] = {}  # object uid -> workload (any kind)
        self._keys: dict[str, str] = {}  # workload key -> object uid
        self._repositories: dict[str, set[str]] = {}  # repository -> workload keys
        self.spaces: dict[str, NamespacePods] = {}
        # Each workload informer's place (kind, namespace; "" when cluster-wide), listed and
        # not broken since.
        self.kinds_ready: set[tuple[WorkloadKind, str]] = set()
        self.retired: list[Informer[Pod]] = []
        self._shared = Shared()  # what the cached objects repeat, held once

    # -- what passes read --------------------------------------------------------------------

    def synced(self) -> bool:
        return (
            self._workloads_ready()
            and not self._stopping.is_set()
            and all(space.ready for space in self.spaces.values())
        )

    def keys_for(self, scope: Scope) -> Iterable[str]:
        """The workloads ``scope`` may concern: every one, or those using one of its
        repositories."""
        if scope.is_full:
            return self._keys
        return set().union(*(self._repositories.get(r, ()) for r in scope.repositories))

    def has(self, key: str) -> bool:
        return key in self._keys

    def selector(self, key: str) -> LabelSelector | None:
        uid = self._keys.get(key)
        return self.workloads[uid][1] if uid is not None else None

    def enrolled(self, key: str) -> Enrolled:
        view, _ = self.workloads[self._keys[key]]
        space = self.spaces.get(view.namespace)
        if space is None:  # cannot happen once synced (every namespace has its space)
            return Enrolled(view, ())
        pods = (space.pods[uid].view for uid in space.members.get(key, ()))
        foreign = (foreign_pod(space.pods[uid]) for uid in space.foreign.get(key, ()))
        return Enrolled(
            view,
            tuple(sorted(pods, key=lambda p: p.name)),
            tuple(sorted(foreign, key=lambda p: p.name)),
        )

    def counts(self) -> tuple[int, int]:
        """(workloads, pods) held now."""
        return len(self.workloads), sum(len(s.pods) for s in self.spaces.values())

    # -- changes -----------------------------------------------------------------------------

    def workloads_replaced(
        self, kind: WorkloadKind, namespace: str, items: Mapping[str, Workload]
    ) -> set[str]:
        """One informer listed (again): its place's workloads are ``items`` now."""
        self.kinds_ready.add((kind, namespace))
        old = [
            uid
            for uid, (view, _) in self.workloads.items()
            if view.kind is kind and (not namespace or view.namespace == namespace)
        ]
        changed = {self.workloads[uid][0].key for uid in old}
        namespaces = {self.workloads[uid][0].namespace for uid in old}
        for uid in old:
            self._drop_workload(uid)
        for uid, workload in items.items():
            self._put_workload(uid, workload)
            changed.add(workload[0].key)
        # Every namespace: the first time every kind is in, no namespace has its space yet.
        namespaces |= {view.namespace for view, _ in self.workloads.values()}
        self._arrange_spaces(namespaces | set(self.spaces))
        return changed

    def workload_upserted(self, uid: str, workload: Workload) -> set[str]:
        changed = self._drop_workload(uid, keep_members=True)
        self._put_workload(uid, workload)
        changed.add(workload[0].key)
        self._arrange_spaces({workload[0].namespace})
        return changed

    def workload_deleted(self, uid: str) -> set[str]:
        workload = self.workloads.get(uid)
        changed = self._drop_workload(uid)
        if workload is not None:
            self._arrange_spaces({workload[0].namespace})
        return changed

    def pods_replaced(self, space: NamespacePods, items: Mapping[str, Pod]) -> set[str] | None:
        """None when ``space`` is no longer the namespace's (a dropped namespace's informer,
        still stopping): nothing was applied."""
        if self.spaces.get(space.namespace) is not space:
            return None  # a dropped namespace's informer, still stopping
        # Listed with an older narrowing than wanted: not ready until the restart lists.
        space.ready = space.informer.listing_selector == space.selector
        changed = set(space.members)
        for uid in list(space.pods):
            space.unfile(uid)
        for uid, pod in items.items():
            changed |= space.file(uid, self._interned(pod))
        self._count()
        return changed

    def pod_upserted(self, space: NamespacePods, uid: str, pod: Pod) -> set[str] | None:
        if self.spaces.get(space.namespace) is not space:
            return None
        return space.file(uid, self._interned(pod))

    def pod_deleted(self, space: NamespacePods, uid: str) -> set[str] | None:
        if self.spaces.get(space.namespace) is not space:
            return None
        return space.unfile(uid)

    # -- the bookkeeping ---------------------------------------------------------------------

    def _put_workload(self, uid: str, workload: Workload) -> None:
        workload = self._shared.workload(workload)
        self._shared.trim(len(self.workloads))
        view, selector = workload
        key = intern(view.key)  # one string for every table that files the workload
        self.workloads[uid] = workload
        self._keys[key] = uid
        for repository in template_repositories(view):
            self._repositories.setdefault(repository, set()).add(key)
        space = self.spaces.get(view.namespace)
        if space is not None:
            space.put_workload(view, selector)

    def _drop_workload(self, uid: str, *, keep_members: bool = False) -> set[str]:
        """Forget a workload (its pods stay cached while its namespace is watched);
        ``keep_members`` when it is put back at once (an update)."""
        workload = self.workloads.pop(uid, None)
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
        space = self.spaces.get(view.namespace)
        if space is not None and not keep_members:
            space.drop_workload(key)
        return {key}

    def _arrange_spaces(self, namespaces: Iterable[str]) -> None:
        """Start, restart or drop each namespace's pod informer to match its workloads."""
        if self._stopping.is_set() or not self._workloads_ready():
            return
        by_namespace: dict[str, list[Workload]] = {}
        for workload in self.workloads.values():
            by_namespace.setdefault(workload[0].namespace, []).append(workload)
        for namespace in sorted(set(namespaces)):
            workloads = by_namespace.get(namespace, [])
            space = self.spaces.get(namespace)
            if not workloads:
                if space is not None:
                    del self.spaces[namespace]
                    space.informer.request_stop()
                    self.retired.append(space.informer)
                continue
            wanted = pod_list_selector(s for _, s in workloads)
            if space is None:
                space = self._new_space(namespace, wanted)
                self.spaces[namespace] = space
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
        self.retired = [i for i in self.retired if i.alive]
        self._count()

    def _workloads_ready(self) -> bool:
        return self.kinds_ready.issuperset(self._places)

    def _interned(self, pod: Pod) -> Pod:
        """``pod`` sharing what the pods of its template repeat (memory per pod)."""
        shared = self._shared.pod(pod)
        self._shared.trim(len(self.workloads))
        return shared

    def _count(self) -> None:
        if self._metrics is None:
            return
        self._metrics.cache_objects.labels(kind="workloads").set(len(self.workloads))
        self._metrics.cache_objects.labels(kind="pods").set(
            sum(len(s.pods) for s in self.spaces.values())
        )


__all__ = ["CacheStore", "Pod", "Workload"]
