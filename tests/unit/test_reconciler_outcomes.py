"""What a reconcile pass does with its decisions: failed and already-gone deletions, a stop
mid-pass, one log line per decision, warnings every tick, cluster errors to the worker.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import pytest

from autoroll.core.model import ContainerView, DeleteOutcome, Enrolled
from autoroll.core.scope import FULL, Scope
from tests.support import reconciler_fakes as fakes
from tests.support.views import deployment_view


def test_a_failed_deletion_is_logged_and_the_pass_goes_on(caplog: pytest.LogCaptureFixture) -> None:
    cluster = fakes.FakeCluster(
        [
            fakes.enrolled("web", [fakes.pod("web-1")]),
            fakes.enrolled("api", [fakes.pod("api-1")], namespace="blog"),
        ]
    )
    cluster.fail_on = {"api-1"}
    reconciler, _ = fakes.make(cluster, guardrails=fakes.AT_ONCE)
    report = reconciler.tick()
    assert [name for _, name, _ in cluster.deleted] == ["web-1"]
    assert sorted(e.outcome for e in report.executed) == ["deleted", "error"]
    assert "API said no to api-1" in caplog.text


@pytest.mark.parametrize("outcome", [DeleteOutcome.ALREADY_GONE, DeleteOutcome.REPLACED])
def test_a_pod_already_gone_is_not_counted_as_a_deletion(outcome: DeleteOutcome) -> None:
    cluster = fakes.FakeCluster([fakes.enrolled("web", [fakes.pod("web-1")])], outcome=outcome)
    reconciler, metrics = fakes.make(cluster)
    reconciler.tick()
    assert fakes.sample(metrics, "autoroll_pod_deletions_total", mode="real") == 0
    assert fakes.sample(metrics, "autoroll_pod_deletions_not_done_total", reason=outcome.value) == 1


def test_stopping_while_deciding_abandons_the_pass_and_deletes_nothing() -> None:
    # The guardrails plan over the whole pass: a pass cut short is never acted on in part.
    cluster = fakes.FakeCluster(
        [fakes.enrolled("a", [fakes.pod("a-1")]), fakes.enrolled("b", [fakes.pod("b-1")])]
    )
    reconciler, _ = fakes.make(cluster)
    answers = iter([False, True])
    report = reconciler.tick(lambda: next(answers))
    assert report.abandoned
    assert [d.name for d in report.decisions] == ["a"]
    assert report.plan is None
    assert cluster.deleted == []


def test_stopping_between_deletions_leaves_the_rest_undone() -> None:
    cluster = fakes.FakeCluster(
        [fakes.enrolled("a", [fakes.pod("a-1")]), fakes.enrolled("b", [fakes.pod("b-1")])]
    )
    reconciler, _ = fakes.make(cluster, guardrails=fakes.AT_ONCE)
    answers = iter([False, False, False, True])  # two decisions, one deletion, then stop
    report = reconciler.tick(lambda: next(answers))
    assert report.abandoned
    assert report.plan is not None and len(report.plan.go) == 2
    first = report.plan.go[0]
    assert cluster.deleted == [("shop", first.name, first.uid)]


def test_one_log_line_per_decision_names_workload_kind_pod_image_and_both_digests(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO)
    cluster = fakes.FakeCluster(
        [
            fakes.enrolled("web", [fakes.pod("web-1")]),
            fakes.enrolled("api", [fakes.pod("api-1", fakes.NEW)]),
            fakes.enrolled("ext", [fakes.pod("ext-1")], image="docker.io/library/nginx:latest"),
        ]
    )
    reconciler, _ = fakes.make(cluster)
    reconciler.tick()
    decisions = [r for r in caplog.records if r.__dict__.get("event") == "decision"]
    lines = {r.__dict__["workload"]: r.__dict__ for r in decisions}
    assert set(lines) == {"shop/deployment/web", "shop/deployment/api", "shop/deployment/ext"}
    assert {r.__dict__["kind"] for r in decisions} == {"deployment"}
    web = lines["shop/deployment/web"]
    assert (web["pod"], web["image"], web["verdict"]) == ("web-1", fakes.IMAGE, "stale")
    assert (web["running_digest"], web["registry_digest"]) == (str(fakes.OLD), str(fakes.NEW))
    assert web["settled"] == "settled"
    assert any(r.getMessage().startswith("shop/deployment/web app: stale") for r in decisions)
    api = lines["shop/deployment/api"]
    assert api["verdict"] == "current"
    assert api["running_digest"] == api["registry_digest"] == str(fakes.NEW)
    assert lines["shop/deployment/ext"]["verdict"] == "skipped"
    assert lines["shop/deployment/ext"]["reason"] == "other-host"


def test_a_pull_policy_that_is_not_always_warns_every_tick(
    caplog: pytest.LogCaptureFixture,
) -> None:
    item = fakes.enrolled("web", [fakes.pod("web-1")])
    item = Enrolled(
        deployment_view("shop", "web", 1, (ContainerView("app", fakes.IMAGE, "IfNotPresent"),)),
        item.pods,
    )
    cluster = fakes.FakeCluster([item])
    reconciler, metrics = fakes.make(cluster)
    reconciler.tick()
    reconciler.tick()
    warnings = [
        r
        for r in caplog.records
        if r.levelno == logging.WARNING and "imagePullPolicy" in r.getMessage()
    ]
    assert len(warnings) == 2
    assert cluster.deleted == []
    assert (
        fakes.sample(metrics, "autoroll_containers_skipped_total", reason="pull-policy-not-always")
        == 2
    )


def test_a_cluster_error_propagates_to_the_worker() -> None:
    class Down(fakes.FakeCluster):
        def snapshot(self, scope: Scope = FULL) -> Sequence[Enrolled]:
            raise ConnectionError("refused")

    reconciler, _ = fakes.make(Down([]), fakes.FakeRegistry({}))
    with pytest.raises(ConnectionError):
        reconciler.tick()
