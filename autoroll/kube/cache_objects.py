"""What the watched cache's informers turn each listed or watched object into.

A workload that cannot be read is skipped with a warning naming it (the rest of the cache
stays usable); a pod that cannot be read is skipped. Pods are kept small: label keys, a
pod's namespace and phase are interned, and ``with_containers`` lets every pod of one
template share its container specs.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from autoroll.kube.pods import ListedPod, pod_from_json
from autoroll.kube.selectors import LabelSelector
from autoroll.kube.workloads import workload_from_json
from autoroll.model import ContainerView, PodView, WorkloadKind, WorkloadView

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
    try:
        pod = pod_from_json(raw)
    except (ValueError, TypeError, AttributeError):
        return None
    # Label keys repeat across every pod: one string each; so do a controller's kind.
    labels = {sys.intern(k): v for k, v in pod.labels.items()}
    controller = pod.controller
    if controller is not None:
        controller = replace(
            controller,
            api_version=sys.intern(controller.api_version),
            kind=sys.intern(controller.kind),
        )
    return ListedPod(pod.view, labels, controller)


def with_containers(view: PodView, containers: tuple[ContainerView, ...]) -> PodView:
    """``view`` with the shared container specs, its namespace and phase interned."""
    return replace(
        view,
        namespace=sys.intern(view.namespace),
        phase=sys.intern(view.phase),
        containers=containers,
    )


__all__ = ["cached_pod", "with_containers", "workload_converter"]
