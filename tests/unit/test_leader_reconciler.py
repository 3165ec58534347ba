"""The reconciler's side of HA: the leadership check before each deletion, Events, and
eviction refusals that wait for the next pass instead of storming."""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import timedelta

import pytest
from prometheus_client import CollectorRegistry

from autoroll.controller.reconciler import NOT_LEADER, Reconciler
from autoroll.core.model import DeleteOutcome, Enrolled, RollEvent
from autoroll.instruments.metrics import Metrics
from tests.unit.test_reconciler import (
    NEW,
    OLD,
    REF,
    T0,
    Clock,
    FakeCluster,
    FakeRegistry,
    enrolled,
    pod,
)


class FakeEvents:
    def __init__(self, fail: bool = False) -> None:
        self.emitted: list[RollEvent] = []
        self.fail = fail

    def emit(self, event: RollEvent) -> None:
        if self.fail:
            raise ConnectionError("events API unreachable")
        self.emitted.append(event)


def build(
    cluster: FakeCluster,
    *,
    may_act: Callable[[], bool] = lambda: True,
    events: FakeEvents | None = None,
    dry_run: bool = False,
    evicting: bool = False,
) -> tuple[Reconciler, Metrics]:
    metrics = Metrics(CollectorRegistry())
    reconciler = Reconciler(
        cluster=cluster,
        registry=FakeRegistry({REF: NEW}),
        metrics=metrics,
        registries={"git.example.org"},
        dry_run=dry_run,
        clock=Clock(),
        may_act=may_act,
        events=events,
        evicting=evicting,
    )
    return reconciler, metrics


def two_stale_deployments() -> FakeCluster:
    return FakeCluster(
        [
            enrolled("api", [pod("api-1"), pod("api-2")]),
            enrolled("web", [pod("web-1"), pod("web-2")]),
        ]
    )


def test_no_deletion_once_leadership_lapsed_and_the_pass_ends() -> None:
    cluster = two_stale_deployments()
    answers = iter([True, False])  # leader for the first deletion, not for the second
    reconciler, metrics = build(cluster, may_act=lambda: next(answers))
    report = reconciler.tick()
    # The guardrails order the deletions (oldest sighting, then a hash): whichever is first.
    assert report.plan is not None
    first = report.plan.go[0]
    assert cluster.deleted == [("shop", first.name, first.uid)]
    assert [e.outcome for e in report.executed] == ["deleted", NOT_LEADER]
    assert report.abandoned
    assert (
        metrics.registry.get_sample_value(
            "autoroll_pod_deletions_not_done_total", {"reason": NOT_LEADER, "kind": "deployment"}
        )
        == 1
    )


def test_a_replica_that_never_led_deletes_nothing() -> None:
    cluster = two_stale_deployments()
    reconciler, _ = build(cluster, may_act=lambda: False)
    reconciler.tick()
    assert cluster.deleted == []


def test_each_roll_is_recorded_as_an_event_naming_pod_image_and_digests() -> None:
    cluster = two_stale_deployments()
    events = FakeEvents()
    reconciler, metrics = build(cluster, events=events)
    reconciler.tick()
    assert sorted((e.workload, e.reason) for e in events.emitted) == [
        ("api", "StalePodDeleted"),
        ("web", "StalePodDeleted"),
    ]
    message = next(e.message for e in events.emitted if e.workload == "api")
    for part in ("api-1", "git.example.org/team/app:latest", str(OLD), str(NEW)):
        assert part in message
    assert (
        metrics.registry.get_sample_value(
            "autoroll_kubernetes_events_total", {"outcome": "created"}
        )
        == 2
    )


@pytest.mark.parametrize(
    ("dry_run", "evicting", "reason"),
    [(True, False, "WouldDeletePod"), (False, True, "StalePodEvicted")],
)
def test_event_reason_follows_the_mode(dry_run: bool, evicting: bool, reason: str) -> None:
    events = FakeEvents()
    reconciler, _ = build(
        FakeCluster([enrolled("web", [pod("web-1")])]),
        events=events,
        dry_run=dry_run,
        evicting=evicting,
    )
    reconciler.tick()
    assert [e.reason for e in events.emitted] == [reason]


def test_no_event_when_nothing_was_rolled() -> None:
    events = FakeEvents()
    reconciler, _ = build(
        FakeCluster([enrolled("web", [pod("web-1")])], outcome=DeleteOutcome.ALREADY_GONE),
        events=events,
    )
    reconciler.tick()
    assert events.emitted == []


def test_a_failing_event_never_breaks_the_pass() -> None:
    cluster = two_stale_deployments()
    reconciler, metrics = build(cluster, events=FakeEvents(fail=True))
    report = reconciler.tick()
    assert len(cluster.deleted) == 2  # both Deployments still rolled
    assert not report.abandoned
    assert (
        metrics.registry.get_sample_value("autoroll_kubernetes_events_total", {"outcome": "error"})
        == 2
    )


def test_an_eviction_refused_by_a_budget_is_one_warning_per_deployment_per_pass(
    caplog: pytest.LogCaptureFixture,
) -> None:
    cluster = FakeCluster(
        [enrolled("api", [pod("api-1"), pod("api-2")]), enrolled("web", [pod("web-1")])],
        outcome=DeleteOutcome.BLOCKED,
    )
    reconciler, metrics = build(cluster, evicting=True, events=FakeEvents())
    caplog.set_level(logging.INFO)
    for expected_attempts in (2, 4, 6):
        caplog.clear()
        reconciler.tick()
        # Tried again every pass: the refusal is "not now", not remembered as done.
        assert len(cluster.deleted) == expected_attempts
        warnings = [r for r in caplog.records if r.levelno >= logging.WARNING]
        assert len(warnings) == 2, [r.getMessage() for r in warnings]
        assert all("trying again next pass" in r.getMessage() for r in warnings)
        assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert (
        metrics.registry.get_sample_value(
            "autoroll_pod_deletions_not_done_total",
            {"reason": "blocked-by-disruption-budget", "kind": "deployment"},
        )
        == 6
    )


def halted_gauge(metrics: Metrics) -> float | None:
    return metrics.registry.get_sample_value("autoroll_rollouts_halted", {"kind": "deployment"})


def halted_app() -> Enrolled:
    """Two old pods wait behind a replacement that has not been Ready for an hour."""
    crashing = pod("web-3", NEW, created=T0 - timedelta(hours=1), ready=False)
    return enrolled("web", [pod("web-1"), pod("web-2"), crashing])


def test_a_halted_rollout_warns_every_pass_counts_and_records_one_warning_event(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO)
    events = FakeEvents()
    reconciler, metrics = build(FakeCluster([halted_app()]), events=events)
    for _ in range(3):
        reconciler.tick()
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 3
    message = "rollout of shop/deployment/web is halted: pod web-3"
    assert all(message in r.getMessage() for r in warnings)
    assert warnings[0].__dict__["event"] == "rollout-halted"
    assert halted_gauge(metrics) == 1
    assert [(e.reason, e.type) for e in events.emitted] == [("RolloutHalted", "Warning")]
    assert "2 stale pod(s) wait" in events.emitted[0].message


def test_a_halt_that_ended_clears_the_gauge_and_may_be_announced_again() -> None:
    events = FakeEvents()
    cluster = FakeCluster([halted_app()])
    reconciler, metrics = build(cluster, events=events)
    reconciler.tick()
    cluster.items = [enrolled("web", [pod("web-1"), pod("web-2"), pod("web-3", NEW)])]
    reconciler.tick()  # web-3 became Ready: the roll goes on (web-1 is deleted)
    assert halted_gauge(metrics) == 0
    cluster.items = [halted_app()]
    reconciler.tick()
    assert len(events.emitted) == 3  # halted, the roll's own StalePodDeleted, halted again


def test_a_rollout_within_the_bound_is_not_halted(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING)
    slow = pod("web-3", NEW, created=T0 - timedelta(minutes=2), ready=False)
    reconciler, metrics = build(FakeCluster([enrolled("web", [pod("web-1"), slow])]))
    reconciler.tick()
    assert caplog.records == []
    assert halted_gauge(metrics) == 0
