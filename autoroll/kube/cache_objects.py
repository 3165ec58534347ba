"""What the watched cache's informers turn each listed or watched object into, and how the
cache keeps it small.

A workload that cannot be read is skipped with a warning naming it (the rest of the cache
stays usable); a pod that cannot be read is skipped. The cache keeps each one through
``Shared``: what a pod or workload repeats with others (its namespace, container specs and
statuses, labels, controller reference, a workload's status) is held once, so a cached
object costs under 1,000 B (docs/performance.md, ``bench.cache_memory``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Hashable, Iterable, Mapping
from dataclasses import replace
from sys import intern
from types import MappingProxyType
from typing import Any, TypeVar, cast

from autoroll.core.model import ContainerStatusView, ContainerView, WorkloadKind, WorkloadView
from autoroll.kube.pods import Controller, ListedPod, pod_from_json
from autoroll.kube.selectors import LabelSelector, Requirement
from autoroll.kube.workloads import workload_from_json

# The cache's own logger: these warnings are the cache's, as they were before the split.
log = logging.getLogger("autoroll.kube.cache")


def workload_converter(
    kind: WorkloadKind, namespaces: frozenset[str] = frozenset()
) -> Callable[[dict[str, Any]], tuple[WorkloadView, LabelSelector] | None]:
    """Each listed or watched workload of ``kind`` as the core's view; one that cannot be
    read is skipped with a warning, and one outside ``namespaces`` (ALLOWED_NAMESPACES; empty:
    all) is ignored, said once per workload and converter (one converter lives as long as
    its cache or cluster, so once per process)."""
    outside: set[str] = set()

    def convert(raw: dict[str, Any]) -> tuple[WorkloadView, LabelSelector] | None:
        meta = raw.get("metadata") or {}
        namespace = str(meta.get("namespace") or "")
        if namespaces and namespace not in namespaces:
            key = f"{namespace}/{kind}/{meta.get('name', '?')}"
            if key not in outside:
                outside.add(key)
                log.info(
                    "ignoring enrolled %s: namespace %s is not among ALLOWED_NAMESPACES",
                    key,
                    namespace,
                    extra={"event": "namespace-not-allowed", "workload": key},
                )
            return None
        try:
            return workload_from_json(kind, raw)
        except (ValueError, TypeError, AttributeError) as exc:
            log.warning(
                "ignoring %s %s/%s: %s",
                kind.api_kind,
                meta.get("namespace", "?"),
                meta.get("name", "?"),
                exc,
            )
            return None

    return convert


def cached_pod(raw: dict[str, Any]) -> ListedPod | None:
    """A listed or watched pod as converted for the cache (None when it cannot be read);
    the cache then shares its repeated parts (``Shared.pod``) under its lock."""
    try:
        return pod_from_json(raw)
    except (ValueError, TypeError, AttributeError):
        return None


_Value = TypeVar("_Value", bound=Hashable)


class Shared:
    """One object for each value the cached objects repeat, so a cached pod or workload
    holds little of its own: what it shares with the others of its template (or of its
    namespace, image or node) is held once.

    Strings that repeat across templates are interned (``sys.intern``: namespaces, images
    and imageIDs, container and node names, label keys, phases, revisions, a controller's
    kind); those a template repeats (a workload's name, its selector's and its pods' label
    values) and the small frozen values (a container's spec and status, their tuples, a
    controller reference, a workload's status, labels and annotations) go through one table;
    a pod's labels are one read-only mapping per distinct set. What stays a pod's own is its
    name, UID, times and flags; a workload's, its UID and its selector's tuples. The table
    is bounded (``trim``): once it holds many entries per workload it is emptied, which only
    stops sharing with what was filed before. Not thread-safe: the cache calls it with its
    lock held.
    """

    def __init__(self) -> None:
        self._values: dict[Hashable, Hashable] = {}
        self._labels: dict[tuple[tuple[str, str], ...], Mapping[str, str]] = {}

    def __len__(self) -> int:
        return len(self._values) + len(self._labels)

    def trim(self, workloads: int) -> None:
        """Empty the tables once they outgrow ``workloads`` (bounded: the specs, statuses
        and labels of deleted templates go)."""
        if len(self) > 16 * max(1, workloads) + 4096:
            self._values.clear()
            self._labels.clear()

    def one(self, value: _Value) -> _Value:
        """The shared object equal to ``value`` (``value`` itself the first time)."""
        return cast(_Value, self._values.setdefault(value, value))

    def pairs(self, pairs: Iterable[tuple[str, str]]) -> tuple[tuple[str, str], ...]:
        """Label or annotation pairs as one shared tuple, in their order, keys interned."""
        return self.one(tuple((intern(k), v) for k, v in pairs))

    def labels(self, labels: Mapping[str, str]) -> Mapping[str, str]:
        """A pod's labels as one read-only mapping shared by every pod carrying the same."""
        key = tuple(sorted((intern(str(k)), self.one(str(v))) for k, v in labels.items()))
        found = self._labels.get(key)
        if found is None:
            found = self._labels[key] = MappingProxyType(dict(key))
        return found

    def containers(self, containers: tuple[ContainerView, ...]) -> tuple[ContainerView, ...]:
        return self.one(
            tuple(
                self.one(
                    ContainerView(
                        name=intern(c.name),
                        image=intern(c.image),
                        image_pull_policy=intern(c.image_pull_policy),
                        role=c.role,
                    )
                )
                for c in containers
            )
        )

    def statuses(
        self, statuses: tuple[ContainerStatusView, ...]
    ) -> tuple[ContainerStatusView, ...]:
        return self.one(
            tuple(
                self.one(
                    replace(
                        s, name=intern(s.name), image=intern(s.image), image_id=intern(s.image_id)
                    )
                )
                for s in statuses
            )
        )

    def controller(self, controller: Controller | None) -> Controller | None:
        if controller is None:
            return None
        return self.one(
            replace(
                controller,
                api_version=intern(controller.api_version),
                kind=intern(controller.kind),
            )
        )

    def pod(self, pod: ListedPod) -> ListedPod:
        """``pod`` holding only its own name, UID, times and flags; the rest shared."""
        view = pod.view
        shared = replace(
            view,
            namespace=intern(view.namespace),
            phase=intern(view.phase),
            containers=self.containers(view.containers),
            statuses=self.statuses(view.statuses),
            platform=None if view.platform is None else intern(view.platform),
            revision=intern(view.revision),
            node=intern(view.node),
        )
        return ListedPod(shared, self.labels(pod.labels), self.controller(pod.controller))

    def selector(self, selector: LabelSelector) -> LabelSelector:
        """A selector with its keys interned; not tabled, as a workload's selector is
        almost always its own (a table entry would cost more than it saves)."""
        return LabelSelector(
            tuple((intern(k), self.one(v)) for k, v in selector.match_labels),
            tuple(Requirement(intern(r.key), r.operator, r.values) for r in selector.requirements),
        )

    def workload(
        self, workload: tuple[WorkloadView, LabelSelector]
    ) -> tuple[WorkloadView, LabelSelector]:
        """``workload`` holding only its own name and UID; the rest shared."""
        view, selector = workload
        shared = replace(
            view,
            namespace=intern(view.namespace),
            name=self.one(view.name),  # the same string as its selector's and pods' labels'
            containers=self.containers(view.containers),
            labels=self.pairs(view.labels),
            annotations=self.pairs(view.annotations),
            status=self.one(view.status),
            pull_secrets=self.one(view.pull_secrets),
            service_account=intern(view.service_account),
        )
        return shared, self.selector(selector)


__all__ = ["Shared", "cached_pod", "workload_converter"]
