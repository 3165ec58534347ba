"""The guardrails in a full pass: the budget's memory across passes, what a dry run counts,
and what the pass says about every held deletion, pause and unreadable annotation."""

from __future__ import annotations

import logging
from dataclasses import replace
from datetime import timedelta

import pytest

from autoroll.controller.reconciler import Reconciler
from autoroll.core.model import Enrolled, WorkloadKind, WorkloadView
from autoroll.core.policy import PAUSED as PAUSED_KEY
from autoroll.core.policy import Guardrails
from autoroll.core.windows import parse_windows
from autoroll.instruments.metrics import Metrics
from tests.support.reconciler_fakes import (
    NEW,
    T0,
    Clock,
    FakeCluster,
    enrolled,
    make,
    pod,
    reconciler_with,
    sample,
)


def build(
    cluster: FakeCluster, guardrails: Guardrails, *, clock: Clock, dry_run: bool = False
) -> tuple[Reconciler, Metrics]:
    return make(cluster, dry_run=dry_run, clock=clock, guardrails=guardrails)


def gauge(metrics: Metrics, name: str) -> float:
    """A cluster-wide guardrail gauge (no kind label)."""
    return metrics.registry.get_sample_value(name) or 0.0


def with_annotations(item: Enrolled, **annotations: str) -> Enrolled:
    pairs = tuple(
        sorted((f"autoroll.aethnet.se/{k.replace('_', '-')}", v) for k, v in annotations.items())
    )
    return replace(item, workload=replace(item.workload, annotations=pairs))


def stale(*names: str) -> FakeCluster:
    return FakeCluster([enrolled(n, [pod(f"{n}-1")]) for n in names])


@pytest.mark.parametrize("dry_run", [False, True])
def test_the_budget_remembers_this_process_s_deletions_across_passes(dry_run: bool) -> None:
    # A dry run counts its would-be deletions too: it shows what the budget would allow.
    clock = Clock()
    cluster = stale("a", "b", "c")
    one_a_minute = Guardrails(
        deletions_per_period=1, period=timedelta(minutes=1), in_flight=0, healthy=timedelta(0)
    )
    reconciler, metrics = build(cluster, one_a_minute, clock=clock, dry_run=dry_run)
    done = []
    for seconds in (0, 10, 59, 61, 62):
        clock.now = T0 + timedelta(seconds=seconds)
        report = reconciler.tick()
        done.append(len(report.executed))
    assert done == [1, 0, 0, 1, 0]
    assert gauge(metrics, "autoroll_roll_budget_used") == 1
    # The fake cluster keeps its pods: three stale every pass, one let go in the first and fourth.
    assert sample(metrics, "autoroll_deletions_held_total", reason="budget") == 2 + 3 + 3 + 2 + 3


def test_a_restarted_controller_forgets_its_deletions_but_the_listing_does_not() -> None:
    clock = Clock()
    replaced = enrolled("r", [pod("r-1", NEW, created=T0)])  # the replacement of a deletion
    cluster = FakeCluster([replaced, enrolled("a", [pod("a-1")])])
    reconciler, _ = build(cluster, Guardrails(deletions_per_period=1), clock=clock)
    clock.now = T0 + timedelta(seconds=30)
    assert reconciler.tick().executed == ()


def test_held_deletions_are_logged_with_their_reason_and_counted(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO)
    cluster = FakeCluster(
        [
            with_annotations(enrolled("p", [pod("p-1")]), paused="true"),
            with_annotations(enrolled("w", [pod("w-1")]), window="Sat 02:00-04:00 UTC"),
            enrolled("a", [pod("a-1")]),
        ]
    )
    reconciler, metrics = build(cluster, Guardrails(), clock=Clock())
    reconciler.tick()
    holds = [r for r in caplog.records if getattr(r, "event", "") == "hold"]
    by_pod = {r.pod: r for r in holds}  # type: ignore[attr-defined]
    assert set(by_pod) == {"p-1", "w-1"}
    assert by_pod["p-1"].levelno == logging.WARNING  # a pause is loud
    assert by_pod["w-1"].levelno == logging.INFO  # a window is the guardrail working
    assert by_pod["w-1"].until == "2026-12-05T02:00:00+00:00"  # type: ignore[attr-defined]
    assert "held (outside-window)" in by_pod["w-1"].getMessage()
    assert [name for _, name, _ in cluster.deleted] == ["a-1"]
    assert sample(metrics, "autoroll_deletions_held_total", reason="paused") == 1
    assert sample(metrics, "autoroll_deletions_held_total", reason="outside-window") == 1
    assert gauge(metrics, "autoroll_workloads_paused") == 1


def test_a_global_pause_is_said_every_pass_even_with_nothing_to_roll(
    caplog: pytest.LogCaptureFixture,
) -> None:
    cluster = FakeCluster([enrolled("a", [pod("a-1", NEW)])])
    reconciler, metrics = build(cluster, Guardrails(paused=True), clock=Clock())
    reconciler.tick()
    reconciler.tick()
    lines = [r for r in caplog.records if "paused cluster-wide" in r.getMessage()]
    assert len(lines) == 2 and all(r.levelno == logging.WARNING for r in lines)
    assert gauge(metrics, "autoroll_paused") == 1


def test_an_unreadable_annotation_is_warned_about_every_pass_and_names_it(
    caplog: pytest.LogCaptureFixture,
) -> None:
    bad = with_annotations(enrolled("x", [pod("x-1", NEW)]), min_age="soon")
    reconciler, metrics = build(FakeCluster([bad]), Guardrails(), clock=Clock())
    reconciler.tick()
    reconciler.tick()
    lines = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(lines) == 2
    assert "shop/deployment/x" in lines[0] and "autoroll.aethnet.se/min-age='soon'" in lines[0]
    assert gauge(metrics, "autoroll_workloads_invalid_policy") == 1


def test_the_min_age_counts_from_the_controllers_own_sighting() -> None:
    clock = Clock()
    cluster = stale("a")
    reconciler, _ = build(cluster, Guardrails(min_age=timedelta(minutes=5)), clock=clock)
    reconciler.tick()  # first sighting of NEW: now
    clock.now = T0 + timedelta(minutes=4, seconds=59)
    assert reconciler.tick().executed == ()
    clock.now = T0 + timedelta(minutes=5)
    assert len(reconciler.tick().executed) == 1


def test_pods_started_during_the_term_by_others_do_not_spend_the_budget() -> None:
    # Evidence is taken as the term begins; later starts (a scale-up, a user's rollout)
    # are not autoroll's deletions, and this process knows its own.
    clock = Clock()
    cluster = stale("a", "b")
    at_once = Guardrails(deletions_per_period=1, healthy=timedelta(0))
    reconciler, _ = build(cluster, at_once, clock=clock)
    cluster.items = [*cluster.items[:1]]  # a first pass over "a" alone starts the term
    assert len(reconciler.tick().executed) == 1
    clock.now = T0 + timedelta(seconds=61)
    scaled = enrolled("s", [pod("s-1", NEW, created=T0 + timedelta(seconds=60))])
    cluster.items = [scaled, *stale("b").items]
    assert len(reconciler.tick().executed) == 1


def test_a_replica_that_leads_again_takes_the_evidence_again() -> None:
    clock = Clock()
    leading = iter([True, False, True])
    cluster = FakeCluster([enrolled("a", [pod("a-1")])])
    reconciler, _ = reconciler_with(
        cluster,
        clock=clock,
        leading=lambda: next(leading),
        guardrails=Guardrails(deletions_per_period=1),
    )
    assert len(reconciler.tick().executed) == 1
    clock.now = T0 + timedelta(seconds=61)
    assert reconciler.tick().skipped
    # Meanwhile the other leader rolled a pod: its replacement was created 5 s ago.
    cluster.items = [
        enrolled("x", [pod("x-1", NEW, created=clock.now - timedelta(seconds=5))]),
        enrolled("a", [pod("a-1")]),
    ]
    assert reconciler.tick().executed == ()


def test_a_paused_statefulset_holds_only_itself_not_the_deployment_of_the_same_name() -> None:
    # Workloads are told apart by their view (namespace, kind, name), never by name alone.
    from tests.unit.test_reconciler_kinds import statefulset

    db = statefulset()
    paused = replace(db, workload=replace(db.workload, annotations=((PAUSED_KEY, "true"),)))
    cluster = FakeCluster([paused, enrolled("db", [pod("web-db-1")])])
    reconciler, metrics = build(cluster, Guardrails(in_flight=0), clock=Clock())
    report = reconciler.tick()
    assert [(e.action.kind, e.action.name) for e in report.executed] == [
        (WorkloadKind.DEPLOYMENT, "web-db-1")
    ]
    assert report.plan is not None
    assert [(h.workload, h.reason.value) for h in report.plan.holds] == [
        ("shop/statefulset/db", "paused")
    ]
    assert report.plan.paused == ("shop/statefulset/db",)
    assert sample(metrics, "autoroll_deletions_held_total", "statefulset", reason="paused") == 1


def test_the_guardrails_are_asked_again_on_the_fresh_read_right_before_each_delete() -> None:
    """The plan, made inside the window, lets a's and b's deletions go; each fresh read
    takes the pass past the window's end, and each deletion is planned again after its
    read, at that time: neither goes, and both are said as holds."""
    clock = Clock(T0.replace(hour=9, minute=59, second=59))
    window = Guardrails(
        windows=parse_windows("* 09:00-10:00 UTC"), in_flight=0, healthy=timedelta(0)
    )

    class SlowRead(FakeCluster):
        def read_now(self, workload: WorkloadView) -> Enrolled:
            clock.now += timedelta(seconds=2)  # the window closes while the pass reads
            return super().read_now(workload)

    cluster = SlowRead([enrolled(n, [pod(f"{n}-1")]) for n in ("a", "b")])
    reconciler, metrics = build(cluster, window, clock=clock)
    report = reconciler.tick()
    assert cluster.deleted == []
    assert sorted(cluster.reads) == ["shop/deployment/a", "shop/deployment/b"]
    assert report.plan is not None
    assert [h.reason.value for h in report.plan.holds] == ["outside-window"] * 2
    assert sample(metrics, "autoroll_deletions_held_total", reason="outside-window") == 2


def test_a_held_deletion_is_not_read_again() -> None:
    clock = Clock()
    cluster = stale("a", "b", "c")
    one = Guardrails(deletions_per_period=1, period=timedelta(minutes=1), in_flight=0)
    reconciler, _ = build(cluster, one, clock=clock)
    report = reconciler.tick()
    assert len(cluster.reads) == 1 == len(cluster.deleted) == report.fresh_reads
