"""The executor: one DeletePod in, a typed Outcome out; the leader gate and dry-run first."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from prometheus_client import CollectorRegistry

from autoroll.controller.executor import Executor, Outcome
from autoroll.controller.reconciler import Reconciler
from autoroll.core.decide import DeletePod
from autoroll.core.model import DeleteOutcome, Digest, Enrolled
from autoroll.core.scope import FULL, Scope
from autoroll.instruments.metrics import Metrics
from tests.support.empty_cluster import EmptyCluster
from tests.support.reconciler_fakes import FakeRegistry

ACTION = DeletePod(
    namespace="shop",
    name="web-1",
    uid="uid-web-1",
    reason="stale-pod",
    image="git.example.org/team/app:latest",
    from_digest=Digest("sha256:" + "0" * 64),
    to_digest=Digest("sha256:" + "1" * 64),
    workload="web",
    container="app",
)


class Cluster(EmptyCluster):
    def __init__(self, answer: DeleteOutcome | Exception) -> None:
        self.answer = answer
        self.calls: list[tuple[str, str, str]] = []

    def delete_pod(
        self, namespace: str, name: str, uid: str, *, within: float | None = None
    ) -> DeleteOutcome:
        self.calls.append((namespace, name, uid))
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer


@pytest.mark.parametrize("found", list(DeleteOutcome))
def test_every_delete_outcome_has_its_typed_outcome(found: DeleteOutcome) -> None:
    cluster = Cluster(found)
    done = Executor(cluster=cluster, dry_run=False).execute(ACTION)
    assert done.outcome is Outcome.of(found)
    assert done.outcome == found.value  # the same stable label
    assert cluster.calls == [("shop", "web-1", "uid-web-1")]


def test_dry_run_sends_nothing() -> None:
    cluster = Cluster(DeleteOutcome.DELETED)
    assert Executor(cluster=cluster, dry_run=True).execute(ACTION).outcome is Outcome.DRY_RUN
    assert cluster.calls == []


def test_a_replica_that_may_not_act_sends_nothing_and_ends_the_pass() -> None:
    cluster = Cluster(DeleteOutcome.DELETED)
    done = Executor(cluster=cluster, dry_run=True, may_act=lambda: False).execute(ACTION)
    assert done.outcome is Outcome.NOT_LEADER and done.outcome.ends_pass
    assert cluster.calls == []


def test_a_failed_call_is_an_error_with_its_text() -> None:
    done = Executor(cluster=Cluster(ConnectionError("API down")), dry_run=False).execute(ACTION)
    assert (done.outcome, done.detail) == (Outcome.ERROR, "API down")
    assert not done.outcome.ends_pass


def test_a_follower_skips_the_whole_pass_without_reading_anything() -> None:
    cluster, registry = Cluster(DeleteOutcome.DELETED), FakeRegistry({})
    read: list[str] = []

    def snapshot(scope: Scope = FULL) -> tuple[Enrolled, ...]:
        read.append("snapshot")
        return ()

    cluster.snapshot = snapshot  # type: ignore[method-assign]
    reconciler = Reconciler(
        cluster=cluster,
        registry=registry,
        metrics=Metrics(CollectorRegistry()),
        registries={"git.example.org"},
        dry_run=False,
        leading=lambda: False,
        clock=lambda: datetime(2026, 12, 1, tzinfo=UTC),
    )
    report = reconciler.tick()
    assert report.skipped and report.decisions == ()
    assert read == [] and registry.resolve_calls == []
