"""The watched cache's bookkeeping, driven through its informers' sinks (no threads, no API).

``FakeInformer`` stands in for ``autoroll.kube.informer.Informer``: the test plays its list
and its events; the cache under test is the real ``WatchCache``. The informer itself, and
the cache against a real API server, are tested in ``test_kube_informer.py`` and
``tests/e2e/test_watch_cache.py``. The fakes and fixtures are in
``tests.support.watch_cache_fakes``; kinds, modes and shared objects in
``test_kube_cache_kinds.py``.
"""

from __future__ import annotations

from autoroll.core.scope import FULL, ImageTag, Scope
from autoroll.instruments.metrics import Metrics
from autoroll.kube.cache import WatchCache
from tests.support import watch_cache_fakes as fakes


def test_the_cache_is_not_synced_until_the_workloads_and_every_namespace_are_listed(
    cache: WatchCache, metrics: Metrics
) -> None:
    assert cache.snapshot(FULL) is None
    fakes.informer("watch-deployments").listed(fakes.deployment("web"))
    assert not [i for i in fakes.MADE if i.name == "watch-pods-shop"], "StatefulSets not listed"
    fakes.informer("watch-statefulsets").listed()
    assert cache.snapshot(FULL) is None, "shop's pods are not listed yet"
    pods = fakes.informer("watch-pods-shop")
    assert pods.started
    assert pods.collection.label_selector == "app in (web)"  # the pass's narrowing
    # No phase field selector, as the pass's lists: a deleted pod whose containers exited
    # shows Succeeded or Failed while it still terminates (docs/adr/005).
    assert pods.collection.field_selector == ""
    pods.listed(fakes.pod("web-1", "web"))
    assert fakes.keys(cache) == {"deployment/web": ["web-1"]}
    assert cache.synced
    assert metrics.registry.get_sample_value("autoroll_cache_synced") == 1
    assert metrics.registry.get_sample_value("autoroll_cache_objects", {"kind": "pods"}) == 1


def test_pods_are_filed_under_the_workloads_whose_selector_matches_them(
    cache: WatchCache,
) -> None:
    fakes.synced(cache)
    assert fakes.keys(cache) == {"deployment/api": ["api-1"], "deployment/web": ["web-1"]}
    assert cache.counts() == (2, 3)  # the unmatched pod is kept: a workload may adopt it


def test_a_targeted_snapshot_holds_the_workloads_of_the_named_repositories_only(
    cache: WatchCache,
) -> None:
    fakes.synced(cache)
    scope = Scope.of([ImageTag.named(fakes.HOST, "team/api", "v2")])
    assert fakes.keys(cache, scope) == {"deployment/api": ["api-1"]}
    assert fakes.keys(cache, Scope.of([ImageTag.named(fakes.HOST, "team/none", "x")])) == {}


def test_watch_events_add_change_and_remove_pods_and_listeners_hear_whose(
    cache: WatchCache,
) -> None:
    heard: list[frozenset[str]] = []
    cache.subscribe(heard.append)
    fakes.synced(cache)
    heard.clear()
    pods = fakes.informer("watch-pods-shop")
    pods.event("ADDED", fakes.pod("web-2", "web", ready=False))
    assert fakes.keys(cache)["deployment/web"] == ["web-1", "web-2"]
    entry = cache.cached("shop/deployment/web")
    assert entry is not None and [p.ready for p in entry.pods] == [True, False]
    pods.event("MODIFIED", fakes.pod("web-2", "api"))  # relabelled: now the api's
    assert fakes.keys(cache) == {
        "deployment/api": ["api-1", "web-2"],
        "deployment/web": ["web-1"],
    }
    pods.event("DELETED", fakes.pod("web-1", "web"))
    assert fakes.keys(cache)["deployment/web"] == []
    assert heard == [
        frozenset({"shop/deployment/web"}),
        frozenset({"shop/deployment/web", "shop/deployment/api"}),
        frozenset({"shop/deployment/web"}),
    ]


def test_a_broken_watch_makes_the_cache_unsynced_until_it_has_listed_again(
    cache: WatchCache, metrics: Metrics
) -> None:
    fakes.synced(cache)
    pods = fakes.informer("watch-pods-shop")
    pods.broke()
    assert cache.snapshot(FULL) is None and cache.cached("shop/deployment/web") is None
    assert metrics.registry.get_sample_value("autoroll_cache_synced") == 0
    pods.listed(fakes.pod("web-9", "web"))
    assert fakes.keys(cache) == {"deployment/api": [], "deployment/web": ["web-9"]}, (
        "the relist replaces all"
    )
    fakes.informer("watch-deployments").broke()
    assert cache.snapshot(FULL) is None


def test_a_new_workload_that_changes_the_narrowing_relists_its_namespace(
    cache: WatchCache,
) -> None:
    fakes.synced(cache)
    pods = fakes.informer("watch-pods-shop")
    fakes.informer("watch-deployments").event("ADDED", fakes.deployment("blog"))
    assert pods.restarts == ["app in (api,blog,web)"]
    assert cache.snapshot(FULL) is None, "blog's pods were left out by the old narrowing"
    pods.listed(fakes.pod("web-1", "web"), fakes.pod("blog-1", "blog"))
    assert fakes.keys(cache) == {
        "deployment/api": [],
        "deployment/blog": ["blog-1"],
        "deployment/web": ["web-1"],
    }


def test_a_list_made_with_the_old_narrowing_does_not_count_as_synced(cache: WatchCache) -> None:
    fakes.synced(cache)
    pods = fakes.informer("watch-pods-shop")
    fakes.informer("watch-deployments").event("ADDED", fakes.deployment("blog"))
    pods.restarts.clear()  # the informer is still listing with the old selector
    pods.listed(fakes.pod("web-1", "web"))
    assert cache.snapshot(FULL) is None


def test_a_workload_whose_selector_changes_relists_when_the_narrowing_changes(
    cache: WatchCache,
) -> None:
    fakes.informer("watch-statefulsets").listed()
    fakes.informer("watch-deployments").listed(
        fakes.deployment("web"), fakes.deployment("api", app="web")
    )
    fakes.informer("watch-pods-shop").listed(fakes.pod("web-1", "web"))
    assert fakes.matched(cache) == {
        "deployment/api": ["web-1"],
        "deployment/web": ["web-1"],
    }  # overlapping selectors: both match the pod; only web controls it
    assert fakes.keys(cache) == {"deployment/api": [], "deployment/web": ["web-1"]}
    fakes.informer("watch-deployments").event("MODIFIED", fakes.deployment("api", app="api"))
    pods = fakes.informer("watch-pods-shop")
    assert pods.restarts == ["app in (api,web)"]
    pods.listed(fakes.pod("web-1", "web"), fakes.pod("api-1", "api"))
    assert fakes.keys(cache) == {"deployment/api": ["api-1"], "deployment/web": ["web-1"]}


def test_a_workload_whose_selector_changes_is_refiled_at_once_when_the_narrowing_stays(
    cache: WatchCache,
) -> None:
    narrow = fakes.deployment("api", app="web")
    narrow["spec"]["selector"]["matchLabels"]["tier"] = "db"
    fakes.informer("watch-statefulsets").listed()
    fakes.informer("watch-deployments").listed(fakes.deployment("web"), narrow)
    plain, tiered = fakes.pod("web-1", "web"), fakes.pod("web-2", "web")
    tiered["metadata"]["labels"]["tier"] = "db"
    fakes.informer("watch-pods-shop").listed(plain, tiered)
    assert fakes.matched(cache) == {
        "deployment/api": ["web-2"],
        "deployment/web": ["web-1", "web-2"],
    }
    fakes.informer("watch-deployments").event("MODIFIED", fakes.deployment("api", app="web"))
    assert fakes.informer("watch-pods-shop").restarts == []  # still "app in (web)"
    assert fakes.matched(cache) == {
        "deployment/api": ["web-1", "web-2"],
        "deployment/web": ["web-1", "web-2"],
    }
    # Whatever api's selector matches, the pods are web's: they count for web alone.
    assert fakes.keys(cache) == {"deployment/api": [], "deployment/web": ["web-1", "web-2"]}
    assert {f.controlled_by for e in cache.snapshot(FULL) or () for f in e.foreign} == {
        "Deployment/web"
    }


def test_a_namespace_left_without_workloads_is_dropped_and_its_late_events_ignored(
    cache: WatchCache,
) -> None:
    fakes.informer("watch-statefulsets").listed()
    fakes.informer("watch-deployments").listed(
        fakes.deployment("web"), fakes.deployment("blog", ns="news")
    )
    fakes.informer("watch-pods-shop").listed(fakes.pod("web-1", "web"))
    news = fakes.informer("watch-pods-news")
    news.listed(fakes.pod("blog-1", "blog", ns="news"))
    fakes.informer("watch-deployments").event("DELETED", fakes.deployment("blog", ns="news"))
    assert news.stopped
    news.event("ADDED", fakes.pod("blog-2", "blog", ns="news"))  # still stopping: ignored
    assert fakes.keys(cache) == {"deployment/web": ["web-1"]}
    assert cache.counts() == (1, 1)


def test_a_deployment_that_cannot_be_read_is_left_out(cache: WatchCache) -> None:
    bad = fakes.deployment("bad")
    bad["spec"]["selector"] = {"matchExpressions": [{"key": "a", "operator": "Near"}]}
    fakes.informer("watch-statefulsets").listed()
    fakes.informer("watch-deployments").listed(fakes.deployment("web"), bad)
    fakes.informer("watch-pods-shop").listed(fakes.pod("web-1", "web"))
    assert fakes.keys(cache) == {"deployment/web": ["web-1"]}


def test_a_fresh_read_gets_the_workloads_selector_from_the_cache(cache: WatchCache) -> None:
    fakes.synced(cache)
    selector = cache.selector("shop/deployment/web")
    assert selector is not None and selector.match_labels == (("app", "web"),)
    assert cache.selector("shop/deployment/none") is None


def test_container_specs_are_shared_between_the_pods_of_a_template(cache: WatchCache) -> None:
    fakes.synced(cache)
    fakes.informer("watch-pods-shop").event("ADDED", fakes.pod("web-2", "web"))
    entry = cache.cached("shop/deployment/web")
    assert entry is not None
    one, two = entry.pods
    assert one.containers[0] is two.containers[0]
