"""The watched cache across kinds and modes: a StatefulSet claims only its pods, a kind's broken
watch unsyncs the cache, the first sync's wait, platform awareness, namespaced informers,
and the objects it shares between pods.
"""

from __future__ import annotations

from typing import Any

import pytest

from autoroll.core.model import WorkloadKind
from autoroll.core.scope import FULL, ImageTag, Scope
from autoroll.instruments.metrics import Metrics
from autoroll.kube.cache import WatchCache
from autoroll.kube.cache_objects import Shared
from autoroll.kube.pods import pod_from_json
from autoroll.kube.selectors import selector_from_json
from autoroll.kube.transport import LazyRest
from autoroll.kube.workloads import workload_from_json
from tests.support import watch_cache_fakes as fakes


def statefulset(name: str) -> dict[str, Any]:
    document = fakes.deployment(name)
    document["metadata"]["uid"] = f"s-{name}"
    document["metadata"]["generation"] = 1
    document["status"] = {"observedGeneration": 1, "readyReplicas": 2}
    return document


def owned(name: str, app: str, owner: str) -> dict[str, Any]:
    document = fakes.pod(name, app)
    document["metadata"]["ownerReferences"] = [{"uid": owner, "controller": True}]
    return document


def test_a_statefulset_claims_only_the_pods_it_controls_and_kinds_never_collide(
    cache: WatchCache,
) -> None:
    """A Deployment and a StatefulSet both named db, both selecting app=db: the key tells
    them apart, the StatefulSet takes only pods whose controller is its own UID, and the
    Deployment only those of its own ReplicaSets."""
    fakes.informer("watch-deployments").listed(fakes.deployment("db"))
    fakes.informer("watch-statefulsets").listed(statefulset("db"))
    fakes.informer("watch-pods-shop").listed(
        owned("db-0", "db", "s-db"), owned("db-x", "db", "rs-123"), fakes.pod("loose", "db")
    )
    assert fakes.keys(cache) == {
        "deployment/db": ["loose"],  # its ReplicaSet db-h1's
        "statefulset/db": ["db-0"],
    }
    assert fakes.matched(cache) == {
        "deployment/db": ["db-0", "db-x", "loose"],
        "statefulset/db": ["db-0", "db-x", "loose"],
    }
    entry = cache.cached("shop/statefulset/db")
    assert entry is not None and entry.workload.kind is WorkloadKind.STATEFULSET


def test_a_kind_whose_watch_broke_unsyncs_the_cache(cache: WatchCache) -> None:
    fakes.synced(cache)
    fakes.informer("watch-statefulsets").broke()
    assert cache.snapshot(FULL) is None
    fakes.informer("watch-statefulsets").listed()
    assert cache.synced


def test_wait_synced_returns_false_when_stopped(cache: WatchCache) -> None:
    cache.request_stop()
    assert cache.wait_synced(5) is False


def test_waiting_for_the_first_sync_ends_at_the_first_failure_when_asked(
    cache: WatchCache,
) -> None:
    """A pass waits for the first sync, but not past a failed list: with the API down it
    lists (and reports the error) itself instead of waiting out the whole bound."""
    fakes.informer("watch-deployments").broke()  # the first list failed
    assert cache.wait_synced(30, until_trouble=True) is False
    fakes.synced(cache)
    assert cache.wait_synced(0.1, until_trouble=True) is True  # synced again: trouble forgotten


def test_platform_awareness_gives_cached_and_freshly_read_pods_their_nodes_platform(
    cache: WatchCache,
) -> None:
    """PLATFORM_AWARE with the watched cache: a targeted pass found in memory still lists the
    Nodes' metadata once and gives each pod its node's os/arch; the fresh read before a
    deletion uses that same list (a pod on a node it does not name stays unknown)."""
    from autoroll.kube.cluster import KubeCluster
    from tests.support.kube_rest import NodesRest, bound

    fakes.informer("watch-statefulsets").listed()
    fakes.informer("watch-deployments").listed(
        fakes.deployment("web"), fakes.deployment("api", image=f"{fakes.HOST}/team/api:v2")
    )
    on_arm = {
        **fakes.pod("web-1", "web"),
        "spec": {**fakes.pod("web-1", "web")["spec"], "nodeName": "arm"},
    }
    fakes.informer("watch-pods-shop").listed(on_arm, fakes.pod("api-1", "api"))
    rest = NodesRest(
        pods=[bound("web-1", "amd"), bound("web-2", "elsewhere")],
        workloads={"deployments": [fakes.deployment("web")]},  # the fresh read's answer
    )
    cluster = KubeCluster(
        label_selector="x",
        rest=rest,
        platform_aware=True,
        cache=cache,
        kinds=[WorkloadKind.DEPLOYMENT, WorkloadKind.STATEFULSET],
    )
    [web] = cluster.snapshot(Scope.of([ImageTag.named(fakes.HOST, "team/app", "latest")]))
    assert web.workload.name == "web"
    assert [(p.name, p.platform) for p in web.pods] == [("web-1", "linux/arm64")]
    assert len(rest.node_requests) == 1
    assert rest.list_calls == []  # the work came from memory: only the Nodes were listed
    fresh = cluster.read_now(web.workload)
    assert fresh is not None
    assert [(p.name, p.platform) for p in fresh.pods] == [("web-1", "linux/amd64"), ("web-2", None)]
    assert len(rest.node_requests) == 1  # the pass's one list


def test_in_namespaced_mode_each_namespace_has_its_own_workload_informers(
    metrics: Metrics,
) -> None:
    """WATCH_NAMESPACES: one informer per kind and namespace, on the namespace's own path; a
    namespace listing again replaces only its own workloads; synced once every one listed."""
    fakes.MADE.clear()
    cache = WatchCache(
        label_selector="aethnet.se/autoroll=true",
        rest=LazyRest(lambda: None),
        kinds=[WorkloadKind.DEPLOYMENT],
        metrics=metrics,
        informer=fakes.FakeInformer,  # type: ignore[arg-type]
        namespaces=["shop", "news"],
        namespaced=True,
    )
    cache.start()
    try:
        paths = sorted(i.collection.path for i in fakes.MADE)
        assert paths == [
            "/apis/apps/v1/namespaces/news/deployments",
            "/apis/apps/v1/namespaces/shop/deployments",
        ]
        fakes.informer("watch-deployments-shop").listed(fakes.deployment("web"))
        assert not cache.synced  # news has not listed yet
        fakes.informer("watch-deployments-news").listed(fakes.deployment("blog", ns="news"))
        fakes.informer("watch-pods-shop").listed(fakes.pod("web-1", "web"))
        fakes.informer("watch-pods-news").listed(fakes.pod("blog-1", "blog", ns="news"))
        assert cache.synced
        fakes.informer("watch-deployments-news").listed()  # blog deleted: shop's web stays
        found = cache.snapshot(FULL)
        assert found is not None and [e.workload.key for e in found] == ["shop/deployment/web"]
    finally:
        cache.stop()


def test_cached_objects_read_as_their_plain_conversion_and_share_what_they_repeat(
    cache: WatchCache,
) -> None:
    """``Shared`` changes what is held, never what is read: each pod and workload equals
    the adapter's own conversion of its JSON, and the pods of one template hold one
    container spec, one status, one labels mapping and one controller reference."""
    fakes.synced(cache)
    fakes.informer("watch-pods-shop").listed(fakes.pod("web-1", "web"), fakes.pod("web-2", "web"))
    (web,) = [e for e in cache.snapshot(FULL) or () if e.workload.name == "web"]
    assert web.workload == workload_from_json(WorkloadKind.DEPLOYMENT, fakes.deployment("web"))[0]
    assert cache.selector(web.workload.key) == selector_from_json({"matchLabels": {"app": "web"}})
    one, two = web.pods
    assert one == pod_from_json(fakes.pod("web-1", "web")).view
    assert two == pod_from_json(fakes.pod("web-2", "web")).view
    assert one.containers is two.containers
    assert one.statuses is two.statuses
    assert one.namespace is two.namespace
    assert one.containers[0].image is web.workload.containers[0].image


def test_shared_pods_keep_their_labels_and_controller_read_only() -> None:
    shared = Shared()
    first = shared.pod(pod_from_json(fakes.pod("web-1", "web")))
    second = shared.pod(pod_from_json(fakes.pod("web-2", "web")))
    assert first.labels is second.labels
    assert first.controller is second.controller
    assert dict(first.labels) == {"app": "web", "pod-template-hash": "h1"}
    with pytest.raises(TypeError):
        first.labels["app"] = "other"  # type: ignore[index]
    other = shared.pod(pod_from_json(fakes.pod("api-1", "api")))
    assert other.labels is not first.labels
    assert other.controller != first.controller


def test_the_shared_table_is_bounded() -> None:
    shared = Shared()
    for k in range(5000):
        shared.pod(pod_from_json(fakes.pod(f"web-{k}", f"app-{k}")))
    assert len(shared) > 4096 + 16
    shared.trim(workloads=1)
    assert len(shared) == 0
