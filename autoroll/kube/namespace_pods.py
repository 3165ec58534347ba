"""One watched namespace's pods, filed under the enrolled workloads that claim them.

The watched cache (``autoroll.kube.cache``) keeps one of these per namespace that holds an
enrolled workload. A pod is filed under the workload that claims it, by the rule a listing
uses: the workload's selector, found through a ``SelectorIndex``, and its controller
(``pods.owns``); under every other workload whose selector matches it, it is filed as
foreign (shown, never counted). Not thread-safe on its own: the cache calls it with its
lock held.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from sys import intern

from autoroll.core.model import WorkloadView
from autoroll.kube.informer import Informer
from autoroll.kube.pods import ListedPod, owns
from autoroll.kube.selectors import LabelSelector, SelectorIndex, selector_matches


@dataclass
class NamespacePods:
    """One namespace: its informer, its pods, and which workload each pod belongs to."""

    namespace: str
    informer: Informer[ListedPod]
    selector: str | None  # the narrowing wanted; the informer lists with it once restarted
    ready: bool = False  # listed with ``selector`` and not broken since
    index: SelectorIndex = field(default_factory=SelectorIndex)
    views: dict[str, WorkloadView] = field(default_factory=dict)  # key -> workload, as filed
    pods: dict[str, ListedPod] = field(default_factory=dict)  # uid -> pod
    members: dict[str, set[str]] = field(default_factory=dict)  # workload key -> pod uids
    foreign: dict[str, set[str]] = field(default_factory=dict)  # workload key -> pod uids
    owners: dict[str, tuple[str, ...]] = field(default_factory=dict)  # pod uid -> workload keys
    # One tuple for each set of keys the pods are filed under (a tuple is a quarter of a set).
    _keysets: dict[tuple[str, ...], tuple[str, ...]] = field(default_factory=dict)

    def claims(self, key: str, pod: ListedPod) -> bool:
        view = self.views.get(key)
        return view is not None and owns(view, pod)

    def file(self, uid: str, pod: ListedPod) -> set[str]:
        """File (or re-file) one pod; returns every workload key it was or is now under."""
        before = self.unfile(uid)
        self.pods[uid] = pod
        now = set(self.index.matching(pod.labels))
        for key in now:
            under = self.members if self.claims(key, pod) else self.foreign
            under.setdefault(key, set()).add(uid)
        if now:
            self._own(uid, now)
        return before | now

    def unfile(self, uid: str) -> set[str]:
        self.pods.pop(uid, None)
        keys = set(self.owners.pop(uid, ()))
        for key in keys:
            self.members.get(key, set()).discard(uid)
            self.foreign.get(key, set()).discard(uid)
        return keys

    def put_workload(self, view: WorkloadView, selector: LabelSelector) -> None:
        """File (or re-file) one workload and re-match the namespace's pods against it."""
        key = intern(view.key)  # the cache's own string for it (sys.intern)
        before, self.views[key] = self.views.get(key), view
        if before is not None and before.uid == view.uid and self.index.get(key) == selector:
            return  # its claim on pods is unchanged
        self.index.add(key, selector)
        self._rematch(key, selector)

    def drop_workload(self, key: str) -> None:
        self.views.pop(key, None)
        self.index.remove(key)
        self._rematch(key, None)

    def _rematch(self, key: str, selector: LabelSelector | None) -> None:
        for uid in self.members.pop(key, set()) | self.foreign.pop(key, set()):
            self._own(uid, set(self.owners.get(uid, ())) - {key})
        if selector is None:
            return
        for uid, pod in self.pods.items():
            if selector_matches(selector, pod.labels):
                under = self.members if self.claims(key, pod) else self.foreign
                under.setdefault(key, set()).add(uid)
                self._own(uid, {*self.owners.get(uid, ()), key})

    def _own(self, uid: str, keys: set[str]) -> None:
        """The pod ``uid`` is filed under ``keys`` (none: it is under no workload)."""
        if not keys:
            self.owners.pop(uid, None)
            return
        ordered = tuple(sorted(keys))
        found = self._keysets.get(ordered)
        if found is None:
            if len(self._keysets) > 4 * len(self.views) + 64:
                self._keysets.clear()  # bounded: sets of dropped workloads go
            found = self._keysets[ordered] = ordered
        self.owners[uid] = found


__all__ = ["NamespacePods"]
