"""Roll pace: a rolling workload is looked at again once its cached pods settle, never before,
and only once per pass; a pass that finds it done disarms it."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import timedelta

from prometheus_client import CollectorRegistry

from autoroll.controller.pacer import RollPacer
from autoroll.controller.reconciler import TickReport
from autoroll.core.model import DeleteOutcome, Enrolled, PodView
from autoroll.core.policy import Guardrails
from autoroll.core.scope import FULL, ImageTag, Scope
from autoroll.instruments.metrics import Metrics
from tests.support.reconciler_fakes import (
    NEW,
    REF,
    T0,
    FakeCluster,
    FakeRegistry,
    enrolled,
    make,
    pod,
)

APP = Scope.of([ImageTag.named("git.example.org", "team/app", "latest")])


class Watch:
    """The cache as the pacer sees it: what it holds per key, and its one listener."""

    def __init__(self) -> None:
        self.held: dict[str, Enrolled] = {}
        self.listener: Callable[[frozenset[str]], None] | None = None

    def subscribe(self, listener: Callable[[frozenset[str]], None]) -> None:
        self.listener = listener

    def cached(self, key: str) -> Enrolled | None:
        return self.held.get(key)

    def shows(self, item: Enrolled) -> None:
        """The cache sees ``item`` now, and tells its listener."""
        self.held[item.workload.key] = item
        assert self.listener is not None
        self.listener(frozenset({item.workload.key}))


def pacer_world(
    items: Sequence[Enrolled],
) -> tuple[RollPacer, Watch, list[Scope], FakeCluster, Metrics]:
    watch = Watch()
    nudged: list[Scope] = []
    metrics = Metrics(CollectorRegistry())
    pacer = RollPacer(watch=watch, nudge=nudged.append, metrics=metrics)
    cluster = FakeCluster(items)
    for item in items:
        watch.held[item.workload.key] = item
    return pacer, watch, nudged, cluster, metrics


def later_world(
    item: Enrolled,
) -> tuple[RollPacer, Watch, list[Scope], list[tuple[Scope, float]], FakeCluster]:
    """``item`` listed and cached, under a pacer whose clock stands at ``T0`` and that may
    ask for a pass later: each such request is in the fourth value."""
    watch = Watch()
    nudged: list[Scope] = []
    later: list[tuple[Scope, float]] = []
    pacer = RollPacer(
        watch=watch,
        nudge=nudged.append,
        metrics=Metrics(CollectorRegistry()),
        later=lambda scope, seconds: later.append((scope, seconds)),
        clock=lambda: T0,
    )
    watch.held[item.workload.key] = item
    return pacer, watch, nudged, later, FakeCluster([item])


def run(
    pacer: RollPacer, cluster: FakeCluster, scope: Scope = FULL, *, healthy: float = 0
) -> TickReport:
    guardrails = Guardrails(healthy=timedelta(seconds=healthy))
    reconciler, _ = make(cluster, FakeRegistry({REF: NEW}), guardrails=guardrails)
    return pacer.paced(reconciler.tick)(lambda: False, scope)


def web(*pods: PodView) -> Enrolled:
    return enrolled("web", list(pods))


def test_a_deletion_arms_the_workload_and_its_replacement_ready_nudges_its_tag() -> None:
    start = web(pod("web-1"), pod("web-2"))
    pacer, watch, nudged, cluster, metrics = pacer_world([start])
    run(pacer, cluster)
    assert cluster.deleted == [("shop", "web-1", "uid-web-1")]
    assert nudged == [], "the cache still shows web-1 live: not yet"
    armed = pacer.armed["shop/deployment/web"]
    assert (armed.tags, armed.deleted_uid) == (APP.tags, "uid-web-1")

    replacement = pod("web-3", NEW, created=T0 + timedelta(seconds=1), ready=False)
    watch.shows(web(pod("web-2"), replacement))
    assert nudged == [], "the replacement is not Ready: never faster than settledness"
    watch.shows(web(pod("web-2"), pod("web-3", NEW, created=T0 + timedelta(seconds=1))))
    assert nudged == [APP]
    assert "shop/deployment/web" not in pacer.armed
    assert metrics.registry.get_sample_value("autoroll_roll_pace_nudges_total") == 1
    watch.shows(web(pod("web-2"), pod("web-3", NEW, created=T0 + timedelta(seconds=1))))
    assert nudged == [APP], "one nudge per pass, however many events follow"


def test_a_deleted_pod_still_shown_terminating_does_not_count_as_gone() -> None:
    pacer, watch, nudged, cluster, _ = pacer_world([web(pod("web-1"), pod("web-2"))])
    run(pacer, cluster)
    watch.shows(web(replace(pod("web-1"), deleting=True), pod("web-2")))
    assert nudged == [], "terminating: not gone, and not settled either"


def test_a_pass_that_finds_the_workload_done_disarms_it() -> None:
    pacer, _watch, _nudged, cluster, _ = pacer_world([web(pod("web-1"))])
    run(pacer, cluster)
    assert "shop/deployment/web" in pacer.armed
    cluster.items = [web(pod("web-2", NEW, created=T0 + timedelta(seconds=1)))]
    run(pacer, cluster)
    assert "shop/deployment/web" not in pacer.armed


def test_a_workload_already_settled_in_the_cache_when_armed_is_nudged_at_once() -> None:
    """The cache may have seen the replacement Ready before the pass ended: no event
    will come, so arming checks at once."""
    pacer, watch, nudged, cluster, _ = pacer_world([web(pod("web-1"), pod("web-2"))])
    watch.held["shop/deployment/web"] = web(pod("web-2"), pod("web-3", NEW))
    run(pacer, cluster)
    assert nudged == [APP]


def test_waiting_for_settledness_arms_without_a_deleted_pod() -> None:
    unready = web(pod("web-1"), pod("web-2", NEW, ready=False))
    pacer, watch, nudged, cluster, _ = pacer_world([unready])
    run(pacer, cluster)
    assert cluster.deleted == []
    assert pacer.armed["shop/deployment/web"].deleted_uid == ""
    assert nudged == []
    watch.shows(web(pod("web-1"), pod("web-2", NEW)))
    assert nudged == [APP]


def test_a_follower_pass_disarms_everything() -> None:
    pacer, _watch, _nudged, cluster, _ = pacer_world([web(pod("web-1"))])
    run(pacer, cluster)
    pacer.passed(TickReport(T0, skipped=True))
    assert pacer.armed == {}


def test_a_workload_waiting_on_its_health_window_is_looked_at_when_the_window_ends() -> None:
    """Its pods will not change when the window ends: no arming (which would nudge at once,
    the cache showing it settled, and spin), but a pass asked for at the window's end."""
    fresh = replace(
        pod("web-3", NEW, created=T0 - timedelta(seconds=12)),
        ready_changed_at=T0 - timedelta(seconds=10),
    )
    pacer, _watch, nudged, later, cluster = later_world(web(pod("web-2"), fresh))
    report = run(pacer, cluster, healthy=30)
    assert cluster.deleted == []
    assert report.decisions[0].containers[0].reason.value == "health-window"
    assert "shop/deployment/web" not in pacer.armed
    assert nudged == []
    assert later == [(APP, 20.0)]


def held_world(
    guardrails: Guardrails,
) -> tuple[RollPacer, Watch, list[Scope], list[tuple[Scope, float]], FakeCluster]:
    pacer, watch, nudged, later, cluster = later_world(web(pod("web-1"), pod("web-2")))
    reconciler, _ = make(cluster, FakeRegistry({REF: NEW}), guardrails=guardrails)
    pacer.paced(reconciler.tick)(lambda: False, FULL)
    return pacer, watch, nudged, later, cluster


def test_a_deletion_held_by_the_min_age_is_not_armed_and_is_looked_at_when_it_may_go() -> None:
    """Held by a guardrail, nothing was deleted: the cache shows the workload settled, so
    arming it would nudge a pass at once, which the guardrail holds again, and every pod
    event of the workload would nudge another. The hold's ``until`` says when to look."""
    min_age = Guardrails(min_age=timedelta(minutes=5), healthy=timedelta(0))
    pacer, watch, nudged, later, cluster = held_world(min_age)
    assert cluster.deleted == []
    assert "shop/deployment/web" not in pacer.armed
    assert nudged == []
    watch.shows(web(pod("web-1"), pod("web-2")))  # any pod event of the workload
    assert nudged == []
    assert later == [(APP, 300.0)]


def test_a_deletion_held_by_the_budget_is_not_armed() -> None:
    none_left = Guardrails(deletions_per_period=1, healthy=timedelta(0))
    pacer, watch, nudged, _later, cluster = held_world(none_left)
    assert len(cluster.deleted) == 1  # the budget's one deletion
    other = enrolled("api", [pod("api-1")])
    watch.held[other.workload.key] = other
    cluster.items = [*cluster.items, other]
    reconciler, _ = make(cluster, FakeRegistry({REF: NEW}), guardrails=none_left)
    report = pacer.paced(reconciler.tick)(lambda: False, FULL)
    assert report.plan is not None and [h.reason.value for h in report.plan.holds] == ["budget"]
    assert "shop/deployment/api" not in pacer.armed
    watch.shows(other)
    assert nudged == []


def test_a_dry_run_pass_nudges_nothing_so_passes_do_not_loop() -> None:
    """DRY_RUN deletes nothing: the cache shows the workload settled as it was, and a nudge
    would run the same pass again at once, forever (found on the real node: a targeted
    pass every 60 ms, each with a registry HEAD and a pod list)."""
    pacer, watch, nudged, cluster, _ = pacer_world([web(pod("web-1"), pod("web-2"))])
    reconciler, _ = make(cluster, FakeRegistry({REF: NEW}), dry_run=True)
    report = pacer.paced(reconciler.tick)(lambda: False, FULL)
    assert [e.outcome.value for e in report.executed] == ["dry-run"]
    assert nudged == []
    assert "shop/deployment/web" not in pacer.armed
    watch.shows(web(pod("web-1"), pod("web-2")))
    assert nudged == [], "a later event about the same pods nudges nothing either"


def test_an_eviction_the_disruption_budget_refused_nudges_nothing() -> None:
    pacer, _watch, nudged, cluster, _ = pacer_world([web(pod("web-1"), pod("web-2"))])
    cluster.outcome = DeleteOutcome.BLOCKED
    report = run(pacer, cluster)
    assert [e.outcome.value for e in report.executed] == ["blocked-by-disruption-budget"]
    assert nudged == [] and pacer.armed == {}


def test_nothing_deleted_while_the_cache_still_shows_a_change_nudges_once_it_settles() -> None:
    """A pod already gone (404): the cache shows its replacement coming; when that is
    Ready the roll goes on at readiness's pace, once."""
    pacer, watch, nudged, cluster, _ = pacer_world([web(pod("web-1"), pod("web-2"))])
    cluster.outcome = DeleteOutcome.ALREADY_GONE
    coming = pod("web-3", NEW, created=T0 + timedelta(seconds=1), ready=False)
    watch.held["shop/deployment/web"] = web(pod("web-2"), coming)
    run(pacer, cluster)
    assert nudged == [] and "shop/deployment/web" in pacer.armed
    watch.shows(web(pod("web-2"), pod("web-3", NEW, created=T0 + timedelta(seconds=1))))
    assert nudged == [APP]


def test_stale_pods_waiting_on_a_workload_the_cache_already_shows_settled_nudge_at_once() -> None:
    """The pass saw it unsettled; the cache saw it settle before the pass ended: that is a
    change, so the pass that may delete goes now."""
    unready = web(pod("web-1"), pod("web-2", NEW, ready=False))
    pacer, watch, nudged, cluster, _ = pacer_world([unready])
    watch.held["shop/deployment/web"] = web(pod("web-1"), pod("web-2", NEW))
    run(pacer, cluster)
    assert cluster.deleted == []
    assert nudged == [APP]


def test_a_pass_and_a_cache_that_keep_disagreeing_cost_one_extra_pass_not_a_loop() -> None:
    """The pass keeps deciding "waiting" on what the cache keeps calling settled (on the
    real node: a partitioned StatefulSet, 224 passes in 4 s). The first after-pass check
    nudges; the pass it bought, deciding the same, nudges nothing; a deletion ends that."""
    unready = web(pod("web-1"), pod("web-2", NEW, ready=False))
    pacer, watch, nudged, cluster, _ = pacer_world([unready])
    watch.held["shop/deployment/web"] = web(pod("web-1"), pod("web-2", NEW))
    run(pacer, cluster, APP)
    assert nudged == [APP]
    run(pacer, cluster, APP)
    run(pacer, cluster, APP)
    assert nudged == [APP], "the same disagreement again: left to the poll"
    assert "shop/deployment/web" not in pacer.armed

    cluster.items = [web(pod("web-1"), pod("web-2", NEW))]  # settled: web-1 is deleted
    run(pacer, cluster)
    assert cluster.deleted == [("shop", "web-1", "uid-web-1")]
    watch.shows(web(pod("web-2", NEW), pod("web-3", NEW, created=T0 + timedelta(seconds=1))))
    assert nudged == [APP, APP], "after a deletion the roll is paced again"
