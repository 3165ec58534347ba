"""A pass over StatefulSets and DaemonSets, with hand-written fakes: the Node reads, what is
counted by kind, and what the log lines and Events say."""

from __future__ import annotations

import logging
from dataclasses import replace

import pytest

from autoroll.controller.reconciler import Reconciler
from autoroll.core.model import (
    DaemonSetStatus,
    Enrolled,
    NodeView,
    PodView,
    StatefulSetStatus,
    UpdateStrategy,
    WorkloadKind,
)
from autoroll.core.records import RollEvent
from autoroll.edge.plan import render, rows
from autoroll.instruments.metrics import Metrics
from tests.support.reconciler_fakes import (
    AT_ONCE,
    FakeCluster,
    enrolled,
    pod,
    reconciler_with,
)

REV = "db-5f6d8"


class FakeNodes:
    """Node reads by name: Ready unless told otherwise; ``broken`` names raise."""

    def __init__(self, not_ready: set[str] | None = None, broken: set[str] | None = None) -> None:
        self.not_ready = not_ready or set()
        self.broken = broken or set()
        self.reads: list[str] = []

    def node(self, name: str) -> NodeView:
        self.reads.append(name)
        if name in self.broken:
            raise RuntimeError(
                f"get node {name}: 403 Forbidden; the ClusterRole must grant nodes: get"
            )
        ready = name not in self.not_ready
        return NodeView(name, ready, "" if ready else "Ready=False (KubeletNotReady)")


class FakeEvents:
    def __init__(self) -> None:
        self.emitted: list[RollEvent] = []

    def emit(self, event: RollEvent) -> None:
        self.emitted.append(event)


def on_node(p: PodView, node: str, revision: str = REV) -> PodView:
    return replace(p, node=node, revision=revision)


def statefulset(replicas: int = 3, **status: object) -> Enrolled:
    item = enrolled("db", [on_node(pod(f"db-{i}"), "n1") for i in range(replicas)])
    fields: dict[str, object] = {
        "ready_replicas": replicas,
        "available_replicas": replicas,
        "observed_generation": 1,
        "current_revision": REV,
        "update_revision": REV,
        **status,
    }
    view = replace(
        item.workload,
        kind=WorkloadKind.STATEFULSET,
        generation=1,
        uid="uid-db",
        status=StatefulSetStatus(**fields),  # type: ignore[arg-type]
    )
    return Enrolled(view, item.pods)


def daemonset(nodes: int = 3) -> Enrolled:
    pods = [on_node(pod(f"agent-{i}"), f"n{i}") for i in range(nodes)]
    item = enrolled("agent", pods)
    view = replace(
        item.workload,
        kind=WorkloadKind.DAEMONSET,
        generation=1,
        uid="uid-agent",
        status=DaemonSetStatus(
            desired_number_scheduled=nodes,
            number_ready=nodes,
            number_available=nodes,
            updated_number_scheduled=nodes,
            observed_generation=1,
        ),
    )
    return Enrolled(view, item.pods)


def make(
    items: list[Enrolled],
    *,
    nodes: FakeNodes | None = None,
    dry_run: bool = False,
    events: FakeEvents | None = None,
) -> tuple[Reconciler, FakeCluster, Metrics]:
    cluster = FakeCluster(items)
    reconciler, metrics = reconciler_with(
        cluster, dry_run=dry_run, nodes=nodes, events=events, guardrails=AT_ONCE
    )
    return reconciler, cluster, metrics


def sample(metrics: Metrics, name: str, **labels: str) -> float:
    return metrics.registry.get_sample_value(name, labels) or 0.0


def test_a_statefulset_pass_deletes_its_highest_ordinal_and_counts_it_by_kind() -> None:
    events = FakeEvents()
    reconciler, cluster, metrics = make(
        [statefulset(), enrolled("web", [pod("web-1")])], events=events
    )
    report = reconciler.tick()
    assert sorted(name for _, name, _ in cluster.deleted) == ["db-2", "web-1"]
    assert sample(metrics, "autoroll_pod_deletions_total", mode="real", kind="statefulset") == 1
    assert sample(metrics, "autoroll_pod_deletions_total", mode="real", kind="deployment") == 1
    assert sample(metrics, "autoroll_workloads", kind="statefulset") == 1
    assert sample(metrics, "autoroll_workloads", kind="daemonset") == 0
    assert sorted(d.key for d in report.decisions) == [
        "shop/deployment/web",
        "shop/statefulset/db",
    ]
    [event] = [e for e in events.emitted if e.kind is WorkloadKind.STATEFULSET]
    assert (event.workload, event.workload_uid) == ("db", "uid-db")
    assert "deleted pod db-2, the first of statefulset/db" in event.message


def test_a_daemonset_pass_reads_the_first_candidates_nodes_then_deletes_on_a_ready_one() -> None:
    nodes = FakeNodes(not_ready={"n0"})
    reconciler, cluster, _ = make([daemonset()], nodes=nodes)
    reconciler.tick()
    # One round, bounded, in name order; then again for the read right before the DELETE.
    assert nodes.reads == ["n0", "n1", "n2"] * 2
    assert [name for _, name, _ in cluster.deleted] == ["agent-1"]


def test_node_readiness_is_read_again_every_pass_never_remembered() -> None:
    nodes = FakeNodes()
    item = daemonset(1)
    reconciler, cluster, _ = make([item], nodes=nodes)
    reconciler.tick()
    reconciler.tick()  # the fake cluster still lists the old pod
    assert nodes.reads == ["n0"] * 4  # each pass: its decision, then its fresh read
    assert len(cluster.deleted) == 2


def test_a_node_that_cannot_be_read_deletes_nothing_and_warns_what_to_fix(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO)
    nodes = FakeNodes(broken={"n0"})
    reconciler, cluster, _ = make([daemonset(1)], nodes=nodes)
    report = reconciler.tick()
    assert cluster.deleted == []
    [verdict] = report.decisions[0].containers
    assert verdict.reason.value == "node-unknown"
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert any("nodes: get" in r.getMessage() for r in warnings)


def test_without_a_node_reader_no_daemonset_pod_is_ever_deleted() -> None:
    reconciler, cluster, _ = make([daemonset(), enrolled("web", [pod("web-1")])])
    reconciler.tick()
    assert [name for _, name, _ in cluster.deleted] == ["web-1"]


def test_log_lines_name_the_kind_and_the_failed_clause(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    held = statefulset(update_revision="db-next", partition=2)
    reconciler, cluster, _ = make([held])
    reconciler.tick()
    assert cluster.deleted == []
    [line] = [r for r in caplog.records if r.__dict__.get("event") == "decision"]
    fields = line.__dict__
    assert (fields["workload"], fields["kind"], fields["settled"]) == (
        "shop/statefulset/db",
        "statefulset",
        "rollout-in-progress",
    )
    assert line.getMessage().startswith("shop/statefulset/db app: waiting (not-settled)")


def test_a_deletion_line_names_the_pod_and_its_workload(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    reconciler, _, metrics = make([statefulset()], dry_run=True)
    reconciler.tick()
    [line] = [r for r in caplog.records if r.__dict__.get("event") == "delete"]
    assert "would delete stale pod shop/db-2 of statefulset/db" in line.getMessage()
    assert (line.__dict__["workload"], line.__dict__["kind"]) == (
        "shop/statefulset/db",
        "statefulset",
    )
    assert sample(metrics, "autoroll_pod_deletions_total", mode="dry", kind="statefulset") == 1


def test_plan_says_why_an_on_delete_or_partitioned_statefulset_is_not_touched() -> None:
    on_delete = statefulset(update_revision="db-next")
    assert isinstance(on_delete.workload.status, StatefulSetStatus)
    on_delete = Enrolled(
        replace(
            on_delete.workload,
            name="ondelete",
            status=replace(on_delete.workload.status, update_strategy=UpdateStrategy.ON_DELETE),
        ),
        tuple(replace(p, name=p.name.replace("db", "ondelete")) for p in on_delete.pods),
    )
    partitioned = statefulset(update_revision="db-next", partition=1)
    reconciler, cluster, _ = make([on_delete, partitioned], dry_run=True)
    report = reconciler.tick()
    assert cluster.deleted == []
    table = {row[0]: row[5] for row in rows(report.decisions)}
    assert table["shop/statefulset/ondelete"].startswith(
        "waiting: ondelete-2 is stale; revision-behind (ondelete-2 is at revision db-5f6d8,"
        " updateRevision is db-next: with updateStrategy OnDelete, deleting it would also"
        " release a template change"
    )
    assert table["shop/statefulset/db"].startswith(
        "waiting: db-2 is stale; not-settled: rollout-in-progress (currentRevision db-5f6d8"
        " != updateRevision db-next: a template rollout is in progress; partition 1 holds"
    )
    assert "2 workload(s); 0 pod(s) would be deleted now." in render(report)
