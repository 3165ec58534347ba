"""The reconciler's side of HA: the leadership check before each deletion, Events once per
roll, and eviction refusals that wait for the next pass instead of storming."""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import Any

import pytest

from autoroll.controller.reconciler import NOT_LEADER, Reconciler
from autoroll.core.model import DeleteOutcome, Enrolled
from autoroll.core.records import RollEvent
from autoroll.instruments.metrics import Metrics
from tests.support.reconciler_fakes import (
    AT_ONCE,
    NEW,
    OLD,
    T0,
    FakeCluster,
    enrolled,
    pod,
    reconciler_with,
)


class FakeEvents:
    def __init__(self, fail: bool = False) -> None:
        self.emitted: list[RollEvent] = []
        self.fail = fail

    def emit(self, event: RollEvent) -> None:
        if self.fail:
            raise ConnectionError("events API unreachable")
        self.emitted.append(event)


def build(cluster: FakeCluster, **arguments: Any) -> tuple[Reconciler, Metrics]:
    """The pass with no health window; ``arguments`` are the ``Reconciler``'s (``may_act``,
    ``events``, ``dry_run``, ``evicting``)."""
    return reconciler_with(cluster, guardrails=AT_ONCE, **arguments)


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


def test_a_roll_s_start_is_one_event_naming_the_tag_both_digests_and_the_trigger() -> None:
    cluster = two_stale_deployments()
    events = FakeEvents()
    reconciler, metrics = build(cluster, events=events)
    reconciler.tick()
    assert sorted((e.workload, e.reason) for e in events.emitted) == [
        ("api", "RollStarted"),
        ("web", "RollStarted"),
    ]
    event = next(e for e in events.emitted if e.workload == "api")
    for part in ("api-1", "team/app:latest", OLD.short, NEW.short, "a full pass"):
        assert part in event.message
    facts = dict(event.annotations)
    assert (facts["autoroll.aethnet.se/from"], facts["autoroll.aethnet.se/to"]) == (
        str(OLD),
        str(NEW),
    )
    assert (
        metrics.registry.get_sample_value(
            "autoroll_kubernetes_events_total", {"outcome": "created"}
        )
        == 2
    )


def test_a_roll_is_told_when_it_starts_and_when_it_is_done_never_per_deletion() -> None:
    """web has two old pods: two deletions, two Events (started, completed), not one per
    deletion or per pass."""
    events = FakeEvents()
    cluster = FakeCluster([enrolled("web", [pod("web-1"), pod("web-2")])])
    reconciler, _ = build(cluster, events=events)
    replacement = pod("web-3", NEW, created=T0 - timedelta(minutes=5))
    reconciler.tick()  # web-1 goes
    cluster.items = [enrolled("web", [pod("web-2"), replacement])]
    reconciler.tick()  # web-2 goes: the roll is under way, no second "started"
    cluster.items = [enrolled("web", [replacement, pod("web-4", NEW)])]
    for _ in range(3):
        reconciler.tick()
    assert [e.reason for e in events.emitted] == ["RollStarted", "RollCompleted"]
    assert len(cluster.deleted) == 2


def test_a_restarted_controller_does_not_announce_a_roll_already_under_way() -> None:
    """The start is read from the pods: one already runs the target."""
    events = FakeEvents()
    under_way = enrolled("web", [pod("web-2"), pod("web-3", NEW)])
    reconciler, _ = build(FakeCluster([under_way]), events=events)
    reconciler.tick()
    assert events.emitted == []


@pytest.mark.parametrize(
    ("dry_run", "evicting", "reason", "verb"),
    [(True, False, "WouldRoll", "would delete"), (False, True, "RollStarted", "evicted")],
)
def test_event_reason_follows_the_mode(
    dry_run: bool, evicting: bool, reason: str, verb: str
) -> None:
    events = FakeEvents()
    reconciler, _ = build(
        FakeCluster([enrolled("web", [pod("web-1")])]),
        events=events,
        dry_run=dry_run,
        evicting=evicting,
    )
    for _ in range(3):  # dry-run finds the same roll every pass: told once
        reconciler.tick()
    assert [e.reason for e in events.emitted] == [reason]
    assert f"{verb} pod web-1" in events.emitted[0].message


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


def test_a_halted_rollout_warns_every_pass_and_quarantines_its_digest_in_one_warning_event(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO)
    events = FakeEvents()
    reconciler, metrics = build(FakeCluster([halted_app()]), events=events)
    for _ in range(3):
        reconciler.tick()
    halted = [r for r in caplog.records if r.__dict__.get("event") == "rollout-halted"]
    assert len(halted) == 3
    message = "rollout of shop/deployment/web is halted: pod web-3"
    assert all(message in r.getMessage() for r in halted)
    assert halted_gauge(metrics) == 1
    assert [(e.reason, e.type) for e in events.emitted] == [("DigestQuarantined", "Warning")]
    assert "2 stale pod(s) wait" in events.emitted[0].message
    assert "quarantined for git.example.org/team/app:latest" in events.emitted[0].message
    assert metrics.registry.get_sample_value("autoroll_digests_quarantined") == 1


def test_a_halt_on_old_content_is_a_rollout_halted_warning_and_quarantines_nothing() -> None:
    """A pod still on the old digest not Ready says nothing against the target."""
    stuck = pod("web-3", OLD, created=T0 - timedelta(hours=1), ready=False)
    events = FakeEvents()
    reconciler, metrics = build(
        FakeCluster([enrolled("web", [pod("web-1"), pod("web-2"), stuck])]), events=events
    )
    reconciler.tick()
    assert [(e.reason, e.type) for e in events.emitted] == [("RolloutHalted", "Warning")]
    assert metrics.registry.get_sample_value("autoroll_digests_quarantined") == 0


def test_a_halt_that_ended_clears_the_gauge_and_may_be_announced_again() -> None:
    events = FakeEvents()
    stuck = pod("web-3", OLD, created=T0 - timedelta(hours=1), ready=False)
    cluster = FakeCluster([enrolled("web", [pod("web-1"), pod("web-2"), stuck])])
    reconciler, metrics = build(cluster, events=events)
    reconciler.tick()
    cluster.items = [enrolled("web", [pod("web-1"), pod("web-2"), pod("web-3", NEW)])]
    reconciler.tick()  # web-3 became Ready: the roll goes on (web-1 is deleted)
    assert halted_gauge(metrics) == 0
    cluster.items = [enrolled("web", [pod("web-1"), pod("web-2"), stuck])]
    reconciler.tick()
    assert [e.reason for e in events.emitted] == ["RolloutHalted", "RolloutHalted"]


def test_a_rollout_within_the_bound_is_not_halted(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING)
    slow = pod("web-3", NEW, created=T0 - timedelta(minutes=2), ready=False)
    reconciler, metrics = build(FakeCluster([enrolled("web", [pod("web-1"), slow])]))
    reconciler.tick()
    assert caplog.records == []
    assert halted_gauge(metrics) == 0
