"""Whole passes over a scripted cluster (``tests/support/scripted_cluster.py``) through the real
``KubeCluster`` and ``Reconciler``: a fake registry and clock, the app's pods as the
ReplicaSet controller writes them, one pass run and its DELETEs returned.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from prometheus_client import CollectorRegistry

from autoroll.controller.reconciler import Reconciler
from autoroll.core.images import TagRef
from autoroll.core.model import Digest, WorkloadKind
from autoroll.instruments.metrics import Metrics
from tests.support import scripted_cluster as scripted
from tests.support.answering_registry import AnsweringRegistry

HOST = "git.example.org"
IMAGE = f"{HOST}/team/web:latest"
REF = TagRef(HOST, "team/web", "latest")
OLD = Digest("sha256:" + "a" * 64)
NEW = Digest("sha256:" + "b" * 64)
T0 = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
NOW = T0 + timedelta(hours=1)
HASH = "5d8f7c6b9"


class Clock:
    def __init__(self, now: datetime = NOW) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


def app_pod(
    name: str,
    *,
    digest: Digest = OLD,
    rs: str = f"web-{HASH}",
    pod_hash: str = HASH,
    labels: Mapping[str, str] | None = None,
    controller: dict[str, Any] | str | None = "rs",
    created: datetime = T0,
    ready_since: datetime | None = None,
    ready: bool = True,
    image: str = IMAGE,
) -> dict[str, Any]:
    """A pod of Deployment ``web`` by default: controlled by its ReplicaSet, labelled by it."""
    found = dict(labels or {"app": "web"})
    if pod_hash:
        found["pod-template-hash"] = pod_hash
    ref = scripted.owner("ReplicaSet", rs) if controller == "rs" else controller
    assert not isinstance(ref, str)
    repo = image.rsplit(":", 1)[0]
    return scripted.pod_doc(
        name,
        labels=found,
        containers=[scripted.container_doc("app", image)],
        statuses=[scripted.status_doc("app", image, f"{repo}@{digest}", ready=ready)],
        created=created,
        controller=ref,
        ready=ready,
        ready_since=ready_since,
    )


def web(**kwargs: Any) -> dict[str, Any]:
    return scripted.deployment_doc(
        "web", containers=[scripted.container_doc("app", IMAGE)], **kwargs
    )


def run_pass(
    world: scripted.ScriptedWorld,
    *,
    registry: AnsweringRegistry | None = None,
    clock: Clock | None = None,
    leading: Callable[[], bool] | None = None,
    kinds: tuple[WorkloadKind, ...] = (WorkloadKind.DEPLOYMENT,),
    reconciler: Reconciler | None = None,
) -> list[str]:
    """One full pass; the names of the pods it deleted."""
    before = len(world.deleted)
    if reconciler is None:
        reconciler = make_reconciler(
            world, registry=registry, clock=clock, leading=leading, kinds=kinds
        )
    reconciler.tick()
    return world.deleted[before:]


def make_reconciler(
    world: scripted.ScriptedWorld,
    *,
    registry: AnsweringRegistry | None = None,
    clock: Clock | None = None,
    leading: Callable[[], bool] | None = None,
    kinds: tuple[WorkloadKind, ...] = (WorkloadKind.DEPLOYMENT,),
    **options: Any,
) -> Reconciler:
    """A reconciler over ``world``'s cluster; ``options`` are the Reconciler's own."""
    cluster = world.cluster(kinds=kinds)
    extra: dict[str, Any] = dict(options)
    if leading is not None:
        extra.update(leading=leading, may_act=leading)
    return Reconciler(
        cluster=cluster,
        registry=registry or AnsweringRegistry({REF: NEW}),
        metrics=Metrics(CollectorRegistry()),
        registries={HOST},
        dry_run=False,
        clock=clock or Clock(),
        nodes=cluster,
        **extra,
    )
