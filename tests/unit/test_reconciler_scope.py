"""Finding work is not deciding on it: the fresh read before every deletion (property 8),
and targeted passes (only the named tags asked about, the loop guard kept for the rest)."""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from autoroll.controller.reconciler import Reconciler
from autoroll.core.decide import HealthWindow, Reason, Verdict, decide
from autoroll.core.images import TagRef
from autoroll.core.model import ContainerView, Digest, Enrolled, ImageContent, PodView, WorkloadView
from autoroll.core.policy import Guardrails
from autoroll.core.scope import ImageTag, Scope
from autoroll.instruments.metrics import Metrics
from tests.support import reconciler_fakes as fakes
from tests.support.views import deployment_view

OTHER_IMAGE = f"{fakes.HOST}/team/api:v2"


def plain(metrics: Metrics, name: str, **labels: str) -> float:
    """A sample of a counter that has no kind label (pass scopes, fresh reads)."""
    return metrics.registry.get_sample_value(name, labels) or 0.0


OTHER = TagRef(fakes.HOST, "team/api", "v2")
APP = Scope.of([ImageTag.named(fakes.HOST, "team/app", "latest")])


# -- the fresh read -------------------------------------------------------------------------


def test_a_deletion_is_decided_on_a_fresh_read_made_right_before_it() -> None:
    cluster = fakes.FakeCluster([fakes.enrolled("web", [fakes.pod("web-1"), fakes.pod("web-2")])])
    reconciler, metrics = fakes.make(cluster)
    report = reconciler.tick()
    assert cluster.calls == ["snapshot", "read shop/deployment/web", "delete web-1"]
    assert report.fresh_reads == 1
    assert plain(metrics, "autoroll_fresh_reads_total") == 1


def test_a_stale_cache_that_misses_an_unready_replacement_deletes_nothing() -> None:
    """The snapshot (a lagging cache) shows the workload settled with a stale pod; the API
    already has the first replacement, not Ready yet. Deciding on the snapshot would
    delete a second pod while the first replacement is unready."""
    found = fakes.enrolled("web", [fakes.pod("web-2"), fakes.pod("web-3")])
    cluster = fakes.FakeCluster([found])
    replacement = fakes.pod(
        "web-4", fakes.NEW, created=fakes.T0 - timedelta(seconds=5), ready=False
    )
    cluster.fresh["shop/deployment/web"] = [fakes.pod("web-2"), fakes.pod("web-3"), replacement]
    reconciler, _ = fakes.make(cluster)
    report = reconciler.tick()
    assert cluster.deleted == []
    [decision] = report.decisions
    assert decision.containers[0].verdict is Verdict.WAITING
    assert decision.containers[0].reason is Reason.NOT_SETTLED
    assert report.enrolled == (found,)  # what was found is still reported as found


def test_a_pod_the_snapshot_calls_stale_but_the_api_has_replaced_is_not_deleted() -> None:
    cluster = fakes.FakeCluster([fakes.enrolled("web", [fakes.pod("web-1")])])
    cluster.fresh["shop/deployment/web"] = [
        fakes.pod("web-9", fakes.NEW, created=fakes.T0 - timedelta(seconds=30))
    ]
    reconciler, _ = fakes.make(cluster)
    report = reconciler.tick()
    assert cluster.deleted == []
    assert report.decisions[0].containers[0].verdict is Verdict.CURRENT


def test_the_pod_deleted_is_the_one_the_fresh_read_calls_stale() -> None:
    """The snapshot would pick web-1 (oldest); the API says web-1 is gone and web-2 is the
    oldest stale pod now: web-2 goes, with the UID from the fresh read."""
    cluster = fakes.FakeCluster([fakes.enrolled("web", [fakes.pod("web-1"), fakes.pod("web-2")])])
    fresh_two = fakes.pod("web-2", created=fakes.T0 - timedelta(hours=2))
    cluster.fresh["shop/deployment/web"] = [
        fresh_two,
        fakes.pod("web-5", fakes.NEW, created=fakes.T0 - timedelta(hours=1)),
    ]
    reconciler, _ = fakes.make(cluster)
    reconciler.tick()
    assert cluster.deleted == [("shop", "web-2", fresh_two.uid)]


def test_a_failed_fresh_read_deletes_nothing_and_ends_the_pass() -> None:
    class Failing(fakes.FakeCluster):
        def read_now(self, workload: WorkloadView) -> Enrolled:
            super().read_now(workload)
            raise ConnectionError("API unreachable")

    cluster = Failing(
        [fakes.enrolled("api", [fakes.pod("api-1")]), fakes.enrolled("web", [fakes.pod("web-1")])]
    )
    reconciler, metrics = fakes.make(cluster)
    report = reconciler.tick()
    assert cluster.deleted == []
    # one failed read ends the pass: no read per workload (the plan says which goes first)
    [read] = cluster.reads
    assert report.abandoned
    [failed] = report.executed
    assert (failed.action.workload_key, failed.outcome.value) == (read, "read-failed")
    assert next(d for d in report.decisions if d.key == read).actions == ()
    assert fakes.sample(metrics, "autoroll_pod_deletions_not_done_total", reason="read-failed") == 1


def test_nothing_to_act_on_reads_nothing_again() -> None:
    cluster = fakes.FakeCluster(
        [
            fakes.enrolled("web", [fakes.pod("web-1", fakes.NEW)]),
            fakes.enrolled("api", [fakes.pod("a", fakes.NEW)]),
        ]
    )
    reconciler, _ = fakes.make(cluster)
    report = reconciler.tick()
    assert cluster.reads == []
    assert report.fresh_reads == 0


def test_dry_run_reads_fresh_too_so_the_plan_shows_what_would_really_be_done() -> None:
    cluster = fakes.FakeCluster([fakes.enrolled("web", [fakes.pod("web-1")])])
    cluster.fresh["shop/deployment/web"] = [
        fakes.pod("web-1"),
        fakes.pod("web-2", fakes.NEW, ready=False),
    ]
    reconciler, _ = fakes.make(cluster, dry_run=True)
    report = reconciler.tick()
    assert cluster.reads == ["shop/deployment/web"]
    assert report.executed == ()


def _pods(prefix: str) -> st.SearchStrategy[list[PodView]]:
    one = st.builds(
        lambda n, digest, ready, age, deleting: PodView(
            "shop",
            f"{prefix}-{n}",
            f"uid-{prefix}-{n}",
            fakes.T0 - timedelta(seconds=age),
            ready=ready,
            deleting=deleting,
            containers=(ContainerView("app", fakes.IMAGE),),
            statuses=(fakes.pod("x", digest).statuses[0],),
        ),
        st.integers(0, 4),
        st.sampled_from([fakes.OLD, fakes.NEW]),
        st.booleans(),
        st.integers(1, 100),
        st.sampled_from([False, False, False, True]),
    )
    return st.lists(one, max_size=4, unique_by=lambda p: p.name)


@settings(max_examples=300, deadline=None)
@given(cached=_pods("p"), fresh=_pods("p"), replicas=st.integers(1, 3))
def test_every_deletion_is_the_one_decide_makes_on_the_fresh_read_alone(
    cached: list[PodView], fresh: list[PodView], replicas: int
) -> None:
    """Property 8 over generated snapshots: whatever the snapshot said, a deletion happens
    only if ``decide`` on the fresh read alone makes it, and it is that very deletion."""
    view = deployment_view("shop", "web", replicas, (ContainerView("app", fakes.IMAGE, "Always"),))
    cluster = fakes.FakeCluster([Enrolled(view, tuple(cached))])
    cluster.fresh["shop/deployment/web"] = fresh
    registry = fakes.FakeRegistry({fakes.REF: fakes.NEW})
    reconciler, _ = fakes.make(cluster, registry)
    reconciler.tick()

    def alone(pods: list[PodView]) -> list[tuple[str, str, str]]:
        decision = decide(
            workload=view,
            pods=pods,
            registries={fakes.HOST},
            resolved={fakes.REF: fakes.NEW},
            sightings=reconciler.sightings,
            children={fakes.NEW: frozenset()},
            contents={d: ImageContent(frozenset({d})) for d in (fakes.OLD, fakes.NEW)},
            now=fakes.T0,
            health=HealthWindow(),  # the reconciler's default window, as it judges
        )
        return [(a.namespace, a.name, a.uid) for a in decision.actions]

    if cluster.deleted:
        assert cluster.deleted == alone(fresh)
        assert cluster.calls[-2:] == ["read shop/deployment/web", f"delete {cluster.deleted[0][1]}"]
    # Work found on the snapshot is always looked at again; what it missed waits (safe).
    assert cluster.deleted == (alone(fresh) if alone(cached) else [])


# -- targeted passes ------------------------------------------------------------------------


def two_tags() -> fakes.FakeCluster:
    return fakes.FakeCluster(
        [
            fakes.enrolled("web", [fakes.pod("web-1")]),
            fakes.enrolled("api", [fakes.pod("api-1")], image=OTHER_IMAGE),
        ]
    )


def begin_term(
    reconciler: Reconciler, cluster: fakes.FakeCluster, registry: fakes.FakeRegistry
) -> None:
    """A term begins with a full pass (the guardrails count cluster-wide): run one that finds
    nothing to roll, then forget what it asked."""
    answers = dict(registry.answers)
    registry.answers = dict.fromkeys(answers, fakes.OLD)
    reconciler.tick()
    registry.answers = answers
    registry.resolve_calls.clear()
    cluster.scopes.clear()
    cluster.calls.clear()


def test_the_first_pass_of_a_term_is_full_even_when_a_targeted_one_was_asked_for() -> None:
    cluster = two_tags()
    registry = fakes.FakeRegistry({fakes.REF: fakes.NEW, OTHER: fakes.NEW})
    reconciler, metrics = fakes.make(cluster, registry)
    report = reconciler.tick(scope=APP)
    assert report.scope.is_full
    assert registry.resolve_calls == [[OTHER, fakes.REF]]
    assert plain(metrics, "autoroll_pass_scopes_total", scope="full") == 1
    assert reconciler.tick(scope=APP).scope == APP  # the term has begun


def test_a_targeted_pass_counts_in_flight_slots_held_by_workloads_outside_it() -> None:
    """api is mid-roll (one of two pods replaced, the other stale): with one slot in flight,
    a pass targeted at web's tag, which does not see api, must not start web's roll."""

    def api_pod(name: str, digest: Digest, **kwargs: Any) -> PodView:
        return fakes.pod(name, f"{fakes.HOST}/team/api@{digest}", image=OTHER_IMAGE, **kwargs)

    cluster = fakes.FakeCluster(
        [
            fakes.enrolled("web", [fakes.pod("web-1")]),
            fakes.enrolled(
                "api", [api_pod("api-1", fakes.OLD), api_pod("api-2", fakes.OLD)], image=OTHER_IMAGE
            ),
        ]
    )
    registry = fakes.FakeRegistry({fakes.REF: fakes.OLD, OTHER: fakes.NEW})
    reconciler, _ = fakes.make(cluster, registry, guardrails=Guardrails(in_flight=1))
    reconciler.tick()  # deletes an api pod: api now holds the one slot
    assert [d[1] for d in cluster.deleted] == ["api-1"]
    cluster.items[1] = fakes.enrolled(
        "api",
        [api_pod("api-2", fakes.OLD), api_pod("api-3", fakes.NEW, created=fakes.T0, ready=False)],
        image=OTHER_IMAGE,
    )
    registry.answers[fakes.REF] = fakes.NEW
    report = reconciler.tick(scope=APP)
    assert [d[1] for d in cluster.deleted] == ["api-1"]
    assert report.plan is not None
    [hold] = report.plan.holds
    assert (hold.workload, hold.reason.value) == ("shop/deployment/web", "budget")
    assert "shop/deployment/api" in hold.detail


def test_a_targeted_pass_asks_the_registry_about_its_tag_only_and_decides_its_workloads() -> None:
    cluster = two_tags()
    registry = fakes.FakeRegistry({fakes.REF: fakes.NEW, OTHER: fakes.NEW})
    reconciler, metrics = fakes.make(cluster, registry)
    begin_term(reconciler, cluster, registry)
    report = reconciler.tick(scope=APP)
    assert registry.resolve_calls == [[fakes.REF]]
    assert [d.key for d in report.decisions] == ["shop/deployment/web"]
    assert cluster.deleted == [("shop", "web-1", "uid-web-1")]
    assert cluster.scopes == [APP]
    assert report.scope == APP
    assert plain(metrics, "autoroll_pass_scopes_total", scope="targeted") == 1


def test_a_full_pass_asks_about_every_tag() -> None:
    cluster = two_tags()
    registry = fakes.FakeRegistry({fakes.REF: fakes.NEW, OTHER: fakes.NEW})
    reconciler, metrics = fakes.make(cluster, registry)
    reconciler.tick()
    assert registry.resolve_calls == [[OTHER, fakes.REF]]
    assert plain(metrics, "autoroll_pass_scopes_total", scope="full") == 1


def test_a_targeted_pass_leaves_other_tags_sightings_as_they_were() -> None:
    cluster = two_tags()
    clock = fakes.Clock()
    registry = fakes.FakeRegistry({fakes.REF: fakes.OLD, OTHER: fakes.OLD})
    reconciler, _ = fakes.make(cluster, registry, clock=clock)
    reconciler.tick()
    before = reconciler.sightings[OTHER]
    clock.now += timedelta(minutes=5)
    registry.answers[fakes.REF] = fakes.NEW
    reconciler.tick(scope=APP)
    assert reconciler.sightings[OTHER] == before
    assert reconciler.sightings[fakes.REF].digest == fakes.NEW
    assert reconciler.sightings[fakes.REF].first_seen_at == clock.now


def test_a_full_pass_forgets_tags_no_longer_enrolled_a_targeted_one_does_not() -> None:
    cluster = two_tags()
    reconciler, _ = fakes.make(
        cluster, fakes.FakeRegistry({fakes.REF: fakes.OLD, OTHER: fakes.OLD})
    )
    reconciler.tick()
    cluster.items = cluster.items[:1]  # the api workload was removed
    reconciler.tick(scope=APP)
    assert OTHER in reconciler.sightings
    reconciler.tick()
    assert OTHER not in reconciler.sightings


def test_a_second_container_on_another_tag_is_not_in_scope_and_the_first_still_rolls() -> None:
    view = deployment_view(
        "shop",
        "both",
        1,
        (ContainerView("app", fakes.IMAGE, "Always"), ContainerView("api", OTHER_IMAGE, "Always")),
    )
    both = PodView(
        "shop",
        "both-1",
        "uid-both-1",
        fakes.T0 - timedelta(days=1),
        containers=view.containers,
        statuses=(fakes.pod("x", fakes.OLD).statuses[0],),
        ready_changed_at=fakes.T0 - timedelta(days=1),
    )
    cluster = fakes.FakeCluster([Enrolled(view, (both,))])
    registry = fakes.FakeRegistry({fakes.REF: fakes.NEW, OTHER: fakes.NEW})
    reconciler, metrics = fakes.make(cluster, registry)
    begin_term(reconciler, cluster, registry)
    report = reconciler.tick(scope=APP)
    assert registry.resolve_calls == [[fakes.REF]]
    app, api = report.decisions[0].containers
    assert (app.verdict, api.verdict, api.reason) == (
        Verdict.STALE,
        Verdict.SKIPPED,
        Reason.NOT_IN_SCOPE,
    )
    assert cluster.deleted == [("shop", "both-1", "uid-both-1")]
    assert fakes.sample(metrics, "autoroll_containers_skipped_total", reason="not-in-scope") == 1


def test_a_snapshot_superset_is_narrowed_to_the_scopes_tags() -> None:
    """The port may answer with every workload of the repository (any tag, any host)."""
    other_tag = fakes.enrolled("old", [fakes.pod("old-1")], image=f"{fakes.HOST}/team/app:v1")
    other_host = fakes.enrolled("ext", [fakes.pod("ext-1")], image="mirror.example/team/app:latest")
    cluster = fakes.FakeCluster(
        [fakes.enrolled("web", [fakes.pod("web-1")]), other_tag, other_host]
    )
    registry = fakes.FakeRegistry({fakes.REF: fakes.NEW})
    reconciler, _ = fakes.make(cluster, registry)
    begin_term(reconciler, cluster, registry)
    report = reconciler.tick(scope=APP)
    assert [d.key for d in report.decisions] == ["shop/deployment/web"]
    assert registry.resolve_calls == [[fakes.REF]]


def test_a_targeted_pass_forgets_no_warned_pod(caplog: pytest.LogCaptureFixture) -> None:
    """Once-per-pod warnings are pruned to the pods a pass listed; a targeted pass lists
    only some, so it prunes nothing and the next full pass does not warn again."""
    caplog.set_level(logging.WARNING)
    foreign = fakes.pod(
        "web-1", f"docker.io/team/app@{fakes.OLD}"
    )  # another host: cannot be resolved
    cluster = fakes.FakeCluster(
        [fakes.enrolled("web", [foreign]), fakes.enrolled("api", [fakes.pod("api-1", fakes.NEW)])]
    )
    cluster.items[1] = fakes.enrolled("api", [fakes.pod("api-1", fakes.NEW)], image=OTHER_IMAGE)
    reconciler, _ = fakes.make(
        cluster, fakes.FakeRegistry({fakes.REF: fakes.NEW, OTHER: fakes.NEW})
    )
    reconciler.tick()
    reconciler.tick(scope=Scope.of([ImageTag.named(fakes.HOST, "team/api", "v2")]))
    reconciler.tick()
    warned = [r for r in caplog.records if "cannot tell what pod" in r.getMessage()]
    assert len(warned) == 1
