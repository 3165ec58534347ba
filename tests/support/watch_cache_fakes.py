"""``FakeInformer`` in place of ``autoroll.kube.informer.Informer`` for the watched cache's tests:
the test plays its list and its events into the real ``WatchCache``. Documents for a
Deployment and its pods, and the ``metrics`` and ``cache`` fixtures
(``tests/unit/kube_cache/conftest.py`` imports them).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from autoroll.core.model import WorkloadKind
from autoroll.core.scope import FULL, Scope
from autoroll.instruments.metrics import Metrics
from autoroll.kube.cache import WatchCache
from autoroll.kube.informer import Collection, Sink
from autoroll.kube.transport import LazyRest

HOST = "git.example.org"
MADE: list[FakeInformer] = []


class FakeInformer:
    """Records what the cache asks; the test calls ``listed`` and ``event`` as the thread would."""

    def __init__(
        self,
        collection: Collection,
        *,
        rest: LazyRest,
        convert: Callable[[dict[str, Any]], Any],
        sink: Sink[Any],
        resync_seconds: float,
        on_list: Callable[[str], None],
        clock: Callable[[], float],
        name: str,
    ) -> None:
        self.collection = collection
        self.convert = convert
        self.sink = sink
        self.name = name
        self.started = False
        self.stopped = False
        self.restarts: list[str | None] = []
        self.listing_selector = collection.label_selector
        MADE.append(self)

    @property
    def alive(self) -> bool:
        return not self.stopped

    def start(self) -> None:
        self.started = True

    def restart(self, label_selector: str | None) -> None:
        self.restarts.append(label_selector)

    def request_stop(self) -> None:
        self.stopped = True

    def stop(self, timeout: float) -> None:
        self.stopped = True

    # -- what the thread would do --------------------------------------------------------

    def listed(self, *raws: dict[str, Any], selector: str | None = None) -> None:
        if self.restarts:
            self.listing_selector = self.restarts[-1] or None
        items = {r["metadata"]["uid"]: self.convert(r) for r in raws}
        self.sink.replaced({uid: item for uid, item in items.items() if item is not None})

    def event(self, kind: str, raw: dict[str, Any]) -> None:
        uid = raw["metadata"]["uid"]
        if kind == "DELETED":
            self.sink.deleted(uid)
        else:
            self.sink.upserted(uid, self.convert(raw))

    def broke(self) -> None:
        self.sink.unsynced()


def deployment(
    name: str, *, ns: str = "shop", image: str = f"{HOST}/team/app:latest", app: str = ""
) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": ns, "uid": f"d-{ns}-{name}"},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": app or name}},
            "template": {"spec": {"containers": [{"name": "app", "image": image}]}},
        },
    }


def pod(
    name: str, app: str, *, ns: str = "shop", ready: bool = True, deployment: str = ""
) -> dict[str, Any]:
    """A pod of Deployment ``deployment`` (by default the one named as its ``app`` label):
    controlled by that Deployment's ReplicaSet, labelled with its pod-template-hash."""
    owner = deployment or app
    return {
        "metadata": {
            "name": name,
            "namespace": ns,
            "uid": f"p-{ns}-{name}",
            "labels": {"app": app, "pod-template-hash": "h1"},
            "creationTimestamp": "2026-01-01T00:00:00Z",
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "kind": "ReplicaSet",
                    "name": f"{owner}-h1",
                    "uid": f"rs-{ns}-{owner}",
                    "controller": True,
                }
            ],
        },
        "spec": {"containers": [{"name": "app", "image": f"{HOST}/team/app:latest"}]},
        "status": {
            "phase": "Running",
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
        },
    }


@pytest.fixture
def metrics() -> Metrics:
    return Metrics(CollectorRegistry())


@pytest.fixture
def cache(metrics: Metrics) -> Iterator[WatchCache]:
    MADE.clear()
    built = WatchCache(
        label_selector="aethnet.se/autoroll=true",
        rest=LazyRest(lambda: None),
        kinds=[WorkloadKind.DEPLOYMENT, WorkloadKind.STATEFULSET],
        metrics=metrics,
        informer=FakeInformer,  # type: ignore[arg-type]
    )
    built.start()
    yield built
    built.stop()


def informer(name: str) -> FakeInformer:
    return next(i for i in MADE if i.name == name and not i.stopped)


def keys(cache: WatchCache, scope: Scope = FULL) -> dict[str, list[str]]:
    """Per workload, the pods it controls."""
    found = cache.snapshot(scope)
    assert found is not None, "the cache is not synced"
    return {e.workload.kind_name: [p.name for p in e.pods] for e in found}  # all in shop


def matched(cache: WatchCache, scope: Scope = FULL) -> dict[str, list[str]]:
    """Per workload, every pod its selector matches: those it controls and its foreign ones."""
    found = cache.snapshot(scope)
    assert found is not None, "the cache is not synced"
    return {
        e.workload.kind_name: sorted([p.name for p in e.pods] + [f.name for f in e.foreign])
        for e in found
    }


def synced(cache: WatchCache) -> WatchCache:
    """List the workloads web and api in shop (no StatefulSet), and shop's pods."""
    informer("watch-statefulsets").listed()
    informer("watch-deployments").listed(
        deployment("web"), deployment("api", image=f"{HOST}/team/api:v2")
    )
    informer("watch-pods-shop").listed(pod("web-1", "web"), pod("api-1", "api"), pod("bg", "x"))
    return cache
