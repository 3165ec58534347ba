"""Builders for the tables of ``autoroll.core.kinds``: a StatefulSet ``db``, a DaemonSet ``agent``
and a Deployment ``web``, their pods, and ``decide`` run on them with one new image.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta

from autoroll.core import model
from autoroll.core.decide import Decision, Sighting, decide
from autoroll.core.images import TagRef
from tests.support.views import deployment_view, pod_view, rolled_out

HOST = "forgejo.example"
IMAGE = f"{HOST}/team/db:latest"
REF = TagRef(HOST, "team/db", "latest")
OLD = model.Digest("sha256:" + "0" * 64)
NEW = model.Digest("sha256:" + "1" * 64)
CONTENT = {
    d: model.ImageContent(frozenset({model.Digest(f"sha256:c{i:063x}")}))
    for i, d in enumerate([OLD, NEW])
}
T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
SEEN = T0 + timedelta(hours=1)
NOW = SEEN + timedelta(hours=1)
REV, NEXT_REV = "db-6c9f7b", "db-7d4e21"
READY = model.NodeView("n", True)


def pod(
    name: str,
    *,
    digest: model.Digest = OLD,
    ready: bool = True,
    deleting: bool = False,
    revision: str = REV,
    node: str = "",
    created: datetime = T0,
    image: str = IMAGE,
    ready_since: datetime | None = T0,
) -> model.PodView:
    return pod_view(
        name,
        image,
        f"{HOST}/team/db@{digest}",
        created=created,
        ready=ready,
        deleting=deleting,
        revision=revision,
        node=node or f"node-{name}",
        ready_changed_at=ready_since,
    )


def statefulset(
    replicas: int = 3,
    *,
    name: str = "db",
    generation: int = 4,
    strategy: model.UpdateStrategy = model.UpdateStrategy.ROLLING_UPDATE,
    **status: object,
) -> model.WorkloadView:
    fields: dict[str, object] = {
        "update_strategy": strategy,
        "ready_replicas": replicas,
        "available_replicas": replicas,
        "observed_generation": generation,
        "current_revision": REV,
        "update_revision": REV,
        **status,
    }
    return model.WorkloadView(
        "ns",
        name,
        replicas,
        (model.ContainerView("app", IMAGE),),
        uid=f"uid-{name}",
        generation=generation,
        kind=model.WorkloadKind.STATEFULSET,
        status=model.StatefulSetStatus(**fields),  # type: ignore[arg-type]
    )


def daemonset(desired: int = 3, *, generation: int = 2, **status: object) -> model.WorkloadView:
    fields: dict[str, object] = {
        "desired_number_scheduled": desired,
        "number_ready": desired,
        "number_available": desired,
        "number_unavailable": 0,
        "updated_number_scheduled": desired,
        "observed_generation": generation,
        **status,
    }
    return model.WorkloadView(
        "ns",
        "agent",
        desired,
        (model.ContainerView("app", IMAGE),),
        uid="uid-agent",
        generation=generation,
        kind=model.WorkloadKind.DAEMONSET,
        status=model.DaemonSetStatus(**fields),  # type: ignore[arg-type]
    )


def web(
    *,
    replicas: int = 3,
    paused: bool = False,
    min_ready_seconds: int = 0,
    status: model.DeploymentStatus | None = None,
    **counts: object,
) -> model.WorkloadView:
    """Deployment web of 3 replicas at generation 2; ``replicas`` is its status's count
    (pods of all its ReplicaSets), ``counts`` override single status counts."""
    found = status or rolled_out(3, generation=2)
    found = replace(found, replicas=replicas, paused=paused, **counts)  # type: ignore[arg-type]
    return replace(
        deployment_view(
            "ns", "web", 3, (model.ContainerView("app", IMAGE),), generation=2, status=found
        ),
        min_ready_seconds=min_ready_seconds,
    )


def sts_pods(n: int = 3, **kwargs: object) -> list[model.PodView]:
    return [pod(f"db-{i}", **kwargs) for i in range(n)]  # type: ignore[arg-type]


def ds_pods(n: int = 3, **kwargs: object) -> list[model.PodView]:
    return [pod(f"agent-{c}", **kwargs) for c in "abcdefgh"[:n]]  # type: ignore[arg-type]


def run(
    workload: model.WorkloadView,
    pods: Sequence[model.PodView],
    nodes: Mapping[str, model.NodeView | model.Unknown] | None = None,
) -> Decision:
    return decide(
        workload=workload,
        pods=pods,
        registries={HOST},
        resolved={REF: NEW},
        sightings={REF: Sighting(NEW, SEEN)},
        children={NEW: frozenset()},
        contents=CONTENT,
        nodes=nodes,
    )
