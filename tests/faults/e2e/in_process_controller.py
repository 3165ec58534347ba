"""The controller the real-API fault rows drive in this process: the reconcile worker and the
Flask app wired as ``autoroll serve`` wires them, a ``ClusterPort`` that runs a hook between a
pass's snapshot and its delete, and the checks the rows poll (a pass count, a value, one
sample of a running ``autoroll serve``'s /metrics).

Kept apart from ``test_real_api_faults.py`` so that module reads as its rows.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import requests
from flask import Flask
from prometheus_client import CollectorRegistry
from prometheus_client.parser import text_string_to_metric_families

from autoroll.controller.reconciler import Reconciler, TickReport
from autoroll.controller.worker import Nudge, Worker, WorkerStopTimeoutError
from autoroll.core.model import DeleteOutcome, Enrolled, WorkloadView
from autoroll.core.policy import Guardrails
from autoroll.core.scope import FULL, Scope
from autoroll.edge.web import create_app
from autoroll.instruments.metrics import Metrics
from autoroll.kube import ClusterError, KubeCluster
from autoroll.registry import RegistryClient
from tests.support.registry import RegistryServer
from tests.support.wait import eventually


class BeforeFirstDelete:
    """A ``ClusterPort`` that runs ``hook`` once, between a pass's snapshot and its delete."""

    def __init__(self, inner: KubeCluster, hook: Callable[[], None]) -> None:
        self.inner = inner
        self.hook: Callable[[], None] | None = hook

    def snapshot(self, scope: Scope = FULL) -> Sequence[Enrolled]:
        return self.inner.snapshot(scope)

    def read_now(self, workload: WorkloadView) -> Enrolled | None:
        return self.inner.read_now(workload)

    def delete_pod(
        self, namespace: str, name: str, uid: str, *, within: float | None = None
    ) -> DeleteOutcome:
        hook, self.hook = self.hook, None
        if hook is not None:
            hook()
        return self.inner.delete_pod(namespace, name, uid, within=within)


@dataclass
class Controller:
    """The reconcile worker and the Flask app, wired as ``autoroll serve`` wires them."""

    worker: Worker
    nudge: Nudge
    metrics: Metrics
    app: Flask
    reports: list[TickReport]

    def run_pass(self, timeout: float = 60) -> TickReport:
        before = self.worker.passes
        self.nudge.nudge()
        eventually(
            lambda: _at_least(self.worker.passes, before + 1), timeout=timeout, what="a pass"
        )
        return self.reports[-1]

    def stop(self) -> None:
        """Stop the worker; if the test is already failing, a slow stop must not hide why."""
        failing = sys.exc_info()[1] is not None
        try:
            self.worker.stop(15)
        except WorkerStopTimeoutError:
            if not failing:
                raise
            print("\nthe reconcile worker was still busy when the failing test stopped it")

    def assert_survived(self) -> None:
        assert self.worker.alive
        assert self.app.test_client().get("/healthz").status_code == 200


def _at_least(value: int, wanted: int) -> None:
    assert value >= wanted, f"{value} < {wanted}"


def controller(cluster_port: Any, registry: RegistryServer) -> Controller:
    metrics = Metrics(CollectorRegistry())
    nudge = Nudge(metrics)
    reconciler = Reconciler(
        cluster=cluster_port,
        registry=RegistryClient(
            session=requests.Session(),
            base_url=registry.url,
            user=registry.auth[0],
            token=registry.auth[1],
            observer=metrics,
        ),
        metrics=metrics,
        registries={registry.host},
        dry_run=False,
        # Not about the health window: the stale pods were made Ready seconds before, and
        # each row expects its deletion in the first pass.
        guardrails=Guardrails(healthy=timedelta(0)),
    )
    reports: list[TickReport] = []

    def tick(stopping: Callable[[], bool], scope: Scope = FULL) -> TickReport:
        report = reconciler.tick(stopping, scope)
        reports.append(report)
        return report

    worker = Worker(
        tick,
        nudge=nudge,
        interval_seconds=3600,
        metrics=metrics,
        expected_errors=(ClusterError,),
    )
    app = create_app(
        webhook_secret="x" * 32,
        nudge=nudge.nudge,
        metrics=metrics,
        live=worker.liveness,
        ready=worker.readiness,
        forgejo_host="forgejo.example",
    )
    return Controller(worker, nudge, metrics, app, reports)


def _metric(autoroll: Any, name: str, labels: dict[str, str] | None = None) -> float:
    """One sample of ``autoroll serve``'s /metrics (summed over the labels not given)."""
    text = requests.get(f"{autoroll.url}/metrics", timeout=5).text
    total = 0.0
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == name and all(
                sample.labels.get(k) == v for k, v in (labels or {}).items()
            ):
                total += sample.value
    return total


def _exactly(value: float, wanted: float) -> None:
    assert value == wanted, f"{value} != {wanted}"
