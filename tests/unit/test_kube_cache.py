"""The watched cache's bookkeeping, driven through its informers' sinks (no threads, no API).

``FakeInformer`` stands in for ``autoroll.kube.informer.Informer``: the test plays its list
and its events; the cache under test is the real ``WatchCache``. The informer itself, and
the cache against a real API server, are tested in ``test_kube_informer.py`` and
``tests/e2e/test_watch_cache.py``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from autoroll.core.model import WorkloadKind
from autoroll.core.scope import FULL, ImageTag, Scope
from autoroll.instruments.metrics import Metrics
from autoroll.kube.cache import WatchCache
from autoroll.kube.cache_objects import Shared
from autoroll.kube.informer import Collection, Sink
from autoroll.kube.pods import pod_from_json
from autoroll.kube.selectors import selector_from_json
from autoroll.kube.transport import LazyRest
from autoroll.kube.workloads import workload_from_json

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


def test_the_cache_is_not_synced_until_the_workloads_and_every_namespace_are_listed(
    cache: WatchCache, metrics: Metrics
) -> None:
    assert cache.snapshot(FULL) is None
    informer("watch-deployments").listed(deployment("web"))
    assert not [i for i in MADE if i.name == "watch-pods-shop"], "StatefulSets not listed"
    informer("watch-statefulsets").listed()
    assert cache.snapshot(FULL) is None, "shop's pods are not listed yet"
    pods = informer("watch-pods-shop")
    assert pods.started
    assert pods.collection.label_selector == "app in (web)"  # the pass's narrowing
    # No phase field selector, as the pass's lists: a deleted pod whose containers exited
    # shows Succeeded or Failed while it still terminates (docs/adr/005).
    assert pods.collection.field_selector == ""
    pods.listed(pod("web-1", "web"))
    assert keys(cache) == {"deployment/web": ["web-1"]}
    assert cache.synced
    assert metrics.registry.get_sample_value("autoroll_cache_synced") == 1
    assert metrics.registry.get_sample_value("autoroll_cache_objects", {"kind": "pods"}) == 1


def test_pods_are_filed_under_the_workloads_whose_selector_matches_them(
    cache: WatchCache,
) -> None:
    synced(cache)
    assert keys(cache) == {"deployment/api": ["api-1"], "deployment/web": ["web-1"]}
    assert cache.counts() == (2, 3)  # the unmatched pod is kept: a workload may adopt it


def test_a_targeted_snapshot_holds_the_workloads_of_the_named_repositories_only(
    cache: WatchCache,
) -> None:
    synced(cache)
    scope = Scope.of([ImageTag.named(HOST, "team/api", "v2")])
    assert keys(cache, scope) == {"deployment/api": ["api-1"]}
    assert keys(cache, Scope.of([ImageTag.named(HOST, "team/none", "x")])) == {}


def test_watch_events_add_change_and_remove_pods_and_listeners_hear_whose(
    cache: WatchCache,
) -> None:
    heard: list[frozenset[str]] = []
    cache.subscribe(heard.append)
    synced(cache)
    heard.clear()
    pods = informer("watch-pods-shop")
    pods.event("ADDED", pod("web-2", "web", ready=False))
    assert keys(cache)["deployment/web"] == ["web-1", "web-2"]
    entry = cache.cached("shop/deployment/web")
    assert entry is not None and [p.ready for p in entry.pods] == [True, False]
    pods.event("MODIFIED", pod("web-2", "api"))  # relabelled: now the api's
    assert keys(cache) == {
        "deployment/api": ["api-1", "web-2"],
        "deployment/web": ["web-1"],
    }
    pods.event("DELETED", pod("web-1", "web"))
    assert keys(cache)["deployment/web"] == []
    assert heard == [
        frozenset({"shop/deployment/web"}),
        frozenset({"shop/deployment/web", "shop/deployment/api"}),
        frozenset({"shop/deployment/web"}),
    ]


def test_a_broken_watch_makes_the_cache_unsynced_until_it_has_listed_again(
    cache: WatchCache, metrics: Metrics
) -> None:
    synced(cache)
    pods = informer("watch-pods-shop")
    pods.broke()
    assert cache.snapshot(FULL) is None and cache.cached("shop/deployment/web") is None
    assert metrics.registry.get_sample_value("autoroll_cache_synced") == 0
    pods.listed(pod("web-9", "web"))
    assert keys(cache) == {"deployment/api": [], "deployment/web": ["web-9"]}, (
        "the relist replaces all"
    )
    informer("watch-deployments").broke()
    assert cache.snapshot(FULL) is None


def test_a_new_workload_that_changes_the_narrowing_relists_its_namespace(
    cache: WatchCache,
) -> None:
    synced(cache)
    pods = informer("watch-pods-shop")
    informer("watch-deployments").event("ADDED", deployment("blog"))
    assert pods.restarts == ["app in (api,blog,web)"]
    assert cache.snapshot(FULL) is None, "blog's pods were left out by the old narrowing"
    pods.listed(pod("web-1", "web"), pod("blog-1", "blog"))
    assert keys(cache) == {
        "deployment/api": [],
        "deployment/blog": ["blog-1"],
        "deployment/web": ["web-1"],
    }


def test_a_list_made_with_the_old_narrowing_does_not_count_as_synced(cache: WatchCache) -> None:
    synced(cache)
    pods = informer("watch-pods-shop")
    informer("watch-deployments").event("ADDED", deployment("blog"))
    pods.restarts.clear()  # the informer is still listing with the old selector
    pods.listed(pod("web-1", "web"))
    assert cache.snapshot(FULL) is None


def test_a_workload_whose_selector_changes_relists_when_the_narrowing_changes(
    cache: WatchCache,
) -> None:
    informer("watch-statefulsets").listed()
    informer("watch-deployments").listed(deployment("web"), deployment("api", app="web"))
    informer("watch-pods-shop").listed(pod("web-1", "web"))
    assert matched(cache) == {
        "deployment/api": ["web-1"],
        "deployment/web": ["web-1"],
    }  # overlapping selectors: both match the pod; only web controls it
    assert keys(cache) == {"deployment/api": [], "deployment/web": ["web-1"]}
    informer("watch-deployments").event("MODIFIED", deployment("api", app="api"))
    pods = informer("watch-pods-shop")
    assert pods.restarts == ["app in (api,web)"]
    pods.listed(pod("web-1", "web"), pod("api-1", "api"))
    assert keys(cache) == {"deployment/api": ["api-1"], "deployment/web": ["web-1"]}


def test_a_workload_whose_selector_changes_is_refiled_at_once_when_the_narrowing_stays(
    cache: WatchCache,
) -> None:
    narrow = deployment("api", app="web")
    narrow["spec"]["selector"]["matchLabels"]["tier"] = "db"
    informer("watch-statefulsets").listed()
    informer("watch-deployments").listed(deployment("web"), narrow)
    plain, tiered = pod("web-1", "web"), pod("web-2", "web")
    tiered["metadata"]["labels"]["tier"] = "db"
    informer("watch-pods-shop").listed(plain, tiered)
    assert matched(cache) == {
        "deployment/api": ["web-2"],
        "deployment/web": ["web-1", "web-2"],
    }
    informer("watch-deployments").event("MODIFIED", deployment("api", app="web"))
    assert informer("watch-pods-shop").restarts == []  # still "app in (web)"
    assert matched(cache) == {
        "deployment/api": ["web-1", "web-2"],
        "deployment/web": ["web-1", "web-2"],
    }
    # Whatever api's selector matches, the pods are web's: they count for web alone.
    assert keys(cache) == {"deployment/api": [], "deployment/web": ["web-1", "web-2"]}
    assert {f.controlled_by for e in cache.snapshot(FULL) or () for f in e.foreign} == {
        "Deployment/web"
    }


def test_a_namespace_left_without_workloads_is_dropped_and_its_late_events_ignored(
    cache: WatchCache,
) -> None:
    informer("watch-statefulsets").listed()
    informer("watch-deployments").listed(deployment("web"), deployment("blog", ns="news"))
    informer("watch-pods-shop").listed(pod("web-1", "web"))
    news = informer("watch-pods-news")
    news.listed(pod("blog-1", "blog", ns="news"))
    informer("watch-deployments").event("DELETED", deployment("blog", ns="news"))
    assert news.stopped
    news.event("ADDED", pod("blog-2", "blog", ns="news"))  # still stopping: ignored
    assert keys(cache) == {"deployment/web": ["web-1"]}
    assert cache.counts() == (1, 1)


def test_a_deployment_that_cannot_be_read_is_left_out(cache: WatchCache) -> None:
    bad = deployment("bad")
    bad["spec"]["selector"] = {"matchExpressions": [{"key": "a", "operator": "Near"}]}
    informer("watch-statefulsets").listed()
    informer("watch-deployments").listed(deployment("web"), bad)
    informer("watch-pods-shop").listed(pod("web-1", "web"))
    assert keys(cache) == {"deployment/web": ["web-1"]}


def test_a_fresh_read_gets_the_workloads_selector_from_the_cache(cache: WatchCache) -> None:
    synced(cache)
    selector = cache.selector("shop/deployment/web")
    assert selector is not None and selector.match_labels == (("app", "web"),)
    assert cache.selector("shop/deployment/none") is None


def test_container_specs_are_shared_between_the_pods_of_a_template(cache: WatchCache) -> None:
    synced(cache)
    informer("watch-pods-shop").event("ADDED", pod("web-2", "web"))
    entry = cache.cached("shop/deployment/web")
    assert entry is not None
    one, two = entry.pods
    assert one.containers[0] is two.containers[0]


def statefulset(name: str) -> dict[str, Any]:
    document = deployment(name)
    document["metadata"]["uid"] = f"s-{name}"
    document["metadata"]["generation"] = 1
    document["status"] = {"observedGeneration": 1, "readyReplicas": 2}
    return document


def owned(name: str, app: str, owner: str) -> dict[str, Any]:
    document = pod(name, app)
    document["metadata"]["ownerReferences"] = [{"uid": owner, "controller": True}]
    return document


def test_a_statefulset_claims_only_the_pods_it_controls_and_kinds_never_collide(
    cache: WatchCache,
) -> None:
    """A Deployment and a StatefulSet both named db, both selecting app=db: the key tells
    them apart, the StatefulSet takes only pods whose controller is its own UID, and the
    Deployment only those of its own ReplicaSets."""
    informer("watch-deployments").listed(deployment("db"))
    informer("watch-statefulsets").listed(statefulset("db"))
    informer("watch-pods-shop").listed(
        owned("db-0", "db", "s-db"), owned("db-x", "db", "rs-123"), pod("loose", "db")
    )
    assert keys(cache) == {
        "deployment/db": ["loose"],  # its ReplicaSet db-h1's
        "statefulset/db": ["db-0"],
    }
    assert matched(cache) == {
        "deployment/db": ["db-0", "db-x", "loose"],
        "statefulset/db": ["db-0", "db-x", "loose"],
    }
    entry = cache.cached("shop/statefulset/db")
    assert entry is not None and entry.workload.kind is WorkloadKind.STATEFULSET


def test_a_kind_whose_watch_broke_unsyncs_the_cache(cache: WatchCache) -> None:
    synced(cache)
    informer("watch-statefulsets").broke()
    assert cache.snapshot(FULL) is None
    informer("watch-statefulsets").listed()
    assert cache.synced


def test_wait_synced_returns_false_when_stopped(cache: WatchCache) -> None:
    cache.request_stop()
    assert cache.wait_synced(5) is False


def test_waiting_for_the_first_sync_ends_at_the_first_failure_when_asked(
    cache: WatchCache,
) -> None:
    """A pass waits for the first sync, but not past a failed list: with the API down it
    lists (and reports the error) itself instead of waiting out the whole bound."""
    informer("watch-deployments").broke()  # the first list failed
    assert cache.wait_synced(30, until_trouble=True) is False
    synced(cache)
    assert cache.wait_synced(0.1, until_trouble=True) is True  # synced again: trouble forgotten


def test_platform_awareness_gives_cached_and_freshly_read_pods_their_nodes_platform(
    cache: WatchCache,
) -> None:
    """PLATFORM_AWARE with the watched cache: a targeted pass found in memory still lists the
    Nodes' metadata once and gives each pod its node's os/arch; the fresh read before a
    deletion uses that same list (a pod on a node it does not name stays unknown)."""
    from autoroll.kube.cluster import KubeCluster
    from tests.support.kube_rest import NodesRest, bound

    informer("watch-statefulsets").listed()
    informer("watch-deployments").listed(
        deployment("web"), deployment("api", image=f"{HOST}/team/api:v2")
    )
    on_arm = {**pod("web-1", "web"), "spec": {**pod("web-1", "web")["spec"], "nodeName": "arm"}}
    informer("watch-pods-shop").listed(on_arm, pod("api-1", "api"))
    rest = NodesRest(
        pods=[bound("web-1", "amd"), bound("web-2", "elsewhere")],
        workloads={"deployments": [deployment("web")]},  # the fresh read's answer
    )
    cluster = KubeCluster(
        label_selector="x",
        rest=rest,
        platform_aware=True,
        cache=cache,
        kinds=[WorkloadKind.DEPLOYMENT, WorkloadKind.STATEFULSET],
    )
    [web] = cluster.snapshot(Scope.of([ImageTag.named(HOST, "team/app", "latest")]))
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
    MADE.clear()
    cache = WatchCache(
        label_selector="aethnet.se/autoroll=true",
        rest=LazyRest(lambda: None),
        kinds=[WorkloadKind.DEPLOYMENT],
        metrics=metrics,
        informer=FakeInformer,  # type: ignore[arg-type]
        namespaces=["shop", "news"],
        namespaced=True,
    )
    cache.start()
    try:
        paths = sorted(i.collection.path for i in MADE)
        assert paths == [
            "/apis/apps/v1/namespaces/news/deployments",
            "/apis/apps/v1/namespaces/shop/deployments",
        ]
        informer("watch-deployments-shop").listed(deployment("web"))
        assert not cache.synced  # news has not listed yet
        informer("watch-deployments-news").listed(deployment("blog", ns="news"))
        informer("watch-pods-shop").listed(pod("web-1", "web"))
        informer("watch-pods-news").listed(pod("blog-1", "blog", ns="news"))
        assert cache.synced
        informer("watch-deployments-news").listed()  # blog deleted: shop's web stays
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
    synced(cache)
    informer("watch-pods-shop").listed(pod("web-1", "web"), pod("web-2", "web"))
    (web,) = [e for e in cache.snapshot(FULL) or () if e.workload.name == "web"]
    assert web.workload == workload_from_json(WorkloadKind.DEPLOYMENT, deployment("web"))[0]
    assert cache.selector(web.workload.key) == selector_from_json({"matchLabels": {"app": "web"}})
    one, two = web.pods
    assert one == pod_from_json(pod("web-1", "web")).view
    assert two == pod_from_json(pod("web-2", "web")).view
    assert one.containers is two.containers
    assert one.statuses is two.statuses
    assert one.namespace is two.namespace
    assert one.containers[0].image is web.workload.containers[0].image


def test_shared_pods_keep_their_labels_and_controller_read_only() -> None:
    shared = Shared()
    first = shared.pod(pod_from_json(pod("web-1", "web")))
    second = shared.pod(pod_from_json(pod("web-2", "web")))
    assert first.labels is second.labels
    assert first.controller is second.controller
    assert dict(first.labels) == {"app": "web", "pod-template-hash": "h1"}
    with pytest.raises(TypeError):
        first.labels["app"] = "other"  # type: ignore[index]
    other = shared.pod(pod_from_json(pod("api-1", "api")))
    assert other.labels is not first.labels
    assert other.controller != first.controller


def test_the_shared_table_is_bounded() -> None:
    shared = Shared()
    for k in range(5000):
        shared.pod(pod_from_json(pod(f"web-{k}", f"app-{k}")))
    assert len(shared) > 4096 + 16
    shared.trim(workloads=1)
    assert len(shared) == 0
