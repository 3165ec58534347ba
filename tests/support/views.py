"""Builders of the core's views for test tables: one place that knows what a settled
workload's status and a running pod look like, so tables state only what their row is
about."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from autoroll.core.model import (
    ContainerStatusView,
    ContainerView,
    DeploymentStatus,
    PodView,
    WorkloadKind,
    WorkloadView,
)


def rolled_out(replicas: int, generation: int = 1, **fields: Any) -> DeploymentStatus:
    """A Deployment's status once its controller has finished: every replica updated and
    available, the latest generation observed (``fields`` override single counts)."""
    status: dict[str, Any] = {
        "observed_generation": generation,
        "replicas": replicas,
        "updated_replicas": replicas,
        "ready_replicas": replicas,
        "available_replicas": replicas,
        **fields,
    }
    return DeploymentStatus(**status)


def deployment_view(
    namespace: str,
    name: str,
    replicas: int,
    containers: Sequence[ContainerView],
    *,
    generation: int = 1,
    status: DeploymentStatus | None = None,
    **kwargs: Any,
) -> WorkloadView:
    """A Deployment its controller reports rolled out (unless ``status`` says otherwise);
    ``kwargs`` are ``WorkloadView``'s other fields (labels, uid, annotations...)."""
    return WorkloadView(
        namespace,
        name,
        replicas,
        tuple(containers),
        generation=generation,
        kind=WorkloadKind.DEPLOYMENT,
        status=status if status is not None else rolled_out(replicas, generation),
        **kwargs,
    )


def pod_view(
    name: str,
    image: str,
    image_id: str | None,
    *,
    created: datetime,
    namespace: str = "ns",
    ready: bool = True,
    container: str = "app",
    **fields: Any,
) -> PodView:
    """A pod (uid ``uid-<name>``) whose one container asks for ``image`` and runs
    ``image_id`` as its status reports it (None: no status reported yet), Ready or not with
    the pod; ``fields`` are ``PodView``'s others (deleting, phase, revision, node,
    ready_changed_at...)."""
    status = () if image_id is None else (ContainerStatusView(container, image, image_id, ready),)
    return PodView(
        namespace=namespace,
        name=name,
        uid=f"uid-{name}",
        created_at=created,
        ready=ready,
        containers=(ContainerView(container, image),),
        statuses=status,
        **fields,
    )


__all__ = ["deployment_view", "pod_view", "rolled_out"]
