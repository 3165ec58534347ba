"""The controller, wired as ``autoroll serve`` wires it, against faults it cannot see coming.

``Rig`` runs the real reconcile ``Worker`` thread, the real ``Reconciler``, the real
``KubeCluster`` (Kubernetes client) against ``FaultyKubeApi`` and the real
``RegistryClient`` against a real ``docker-registry`` behind ``FaultProxy``, plus the Flask
app for ``/healthz``. Timeouts are short so every fault row finishes in seconds; the
production values are pinned by their own tests.

The world: ``shop/web`` runs ``old``; the tag now names ``new``. With no fault, one pass
deletes ``web-1`` (UID-preconditioned) and then waits for its replacement to be Ready.
Every row asserts the same three things: no wrong deletion while the fault lasts, the
worker and ``/healthz`` survive, and the expected deletion happens once the fault clears.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import requests
from flask import Flask
from prometheus_client import CollectorRegistry

from autoroll.controller.reconciler import Reconciler, TickReport
from autoroll.controller.worker import Nudge, Worker
from autoroll.core.scope import FULL, Scope
from autoroll.edge.web import create_app
from autoroll.instruments.metrics import Metrics
from autoroll.kube import ClusterError, KubeCluster, connect
from autoroll.registry import Limits, RegistryClient, RegistryObserver
from tests.support.fake_kube import SELECTOR, FaultyKubeApi, KubeApiServer
from tests.support.fault_proxy import FaultProxy
from tests.support.wait import wait_until

WEBHOOK_SECRET = "fault-matrix-webhook-secret-0123456789"
#: Short limits so that a timeout row costs about a second, not the production 5-30 s.
REGISTRY_LIMITS = Limits(connect_seconds=1.0, read_seconds=1.0, budget_seconds=4.0)
KUBE_TIMEOUT = (1.0, 1.5)


@dataclass
class Rig:
    api: FaultyKubeApi
    kube: KubeApiServer
    proxy: FaultProxy
    cluster: KubeCluster
    registry_client: RegistryClient
    old: str
    new: str
    metrics: Metrics
    nudge: Nudge = field(init=False)
    reconciler: Reconciler = field(init=False)
    worker: Worker = field(init=False)
    app: Flask = field(init=False)
    reports: list[TickReport] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        self.nudge = Nudge(self.metrics)
        self.reconciler = Reconciler(
            cluster=self.cluster,
            registry=self.registry_client,
            metrics=self.metrics,
            registries={self.proxy.host},
            dry_run=False,
        )
        self.worker = Worker(
            self._tick,
            nudge=self.nudge,
            interval_seconds=3600,  # only nudges run passes: each test decides when
            metrics=self.metrics,
            expected_errors=(ClusterError,),  # as autoroll.edge.server wires it
        )
        self.app = create_app(
            webhook_secret=WEBHOOK_SECRET,
            nudge=self.nudge.nudge,
            metrics=self.metrics,
            live=self.worker.liveness,
            ready=self.worker.readiness,
            forgejo_host=self.proxy.host,
        )

    def _tick(self, stopping: Callable[[], bool], scope: Scope = FULL) -> TickReport:
        report = self.reconciler.tick(stopping, scope)
        with self._lock:
            self.reports.append(report)
        return report

    # -- driving ---------------------------------------------------------------------------------

    def start(self, timeout: float = 30) -> None:
        """Start the worker; its first pass runs at once. Waits for it to finish."""
        self.worker.start()
        self._wait_passes(1, timeout)

    def run_pass(self, timeout: float = 30) -> float:
        """Nudge one pass and wait for it; returns how long it took (seconds)."""
        before = self.worker.passes
        started = time.monotonic()
        self.nudge.nudge()
        self._wait_passes(before + 1, timeout)
        return time.monotonic() - started

    def _wait_passes(self, count: int, timeout: float) -> None:
        wait_until(lambda: self.worker.passes >= count, timeout, f"pass {count} to finish")

    def stop(self) -> None:
        self.worker.stop(timeout=15)

    # -- observing ---------------------------------------------------------------------------------

    def ticks(self, outcome: str) -> float:
        value = self.metrics.registry.get_sample_value("autoroll_ticks_total", {"outcome": outcome})
        return value or 0.0

    def sample(self, name: str, **labels: str) -> float:
        return self.metrics.registry.get_sample_value(name, labels) or 0.0

    @property
    def repository(self) -> str:
        """The repository of the Deployment's image (on the proxy's host)."""
        return self.api.image.split("/", 1)[1].rpartition(":")[0]

    @property
    def last(self) -> TickReport:
        with self._lock:
            return self.reports[-1]

    def assert_survived(self) -> None:
        """No crash: the worker thread lives and ``/healthz`` answers 200."""
        assert self.worker.alive, "the reconcile worker died"
        response = self.app.test_client().get("/healthz")
        assert response.status_code == 200

    def assert_recovers(self, *, pod: str = "web-1") -> None:
        """With the faults gone, the next pass deletes exactly ``pod``, once."""
        self.api.clear()
        self.proxy.fault = None
        already = len(self.api.deleted)
        self.run_pass()
        assert self.api.deleted[already:] == [pod], self.api.deleted
        self.assert_survived()


def proxied_client(
    proxy: FaultProxy,
    user: str,
    token: str,
    *,
    limits: Limits = REGISTRY_LIMITS,
    observer: RegistryObserver | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> RegistryClient:
    """A registry client of its own session that reaches the registry through ``proxy``."""
    return RegistryClient(
        session=requests.Session(),
        base_url=proxy.url,
        user=user,
        token=token,
        observer=observer,
        limits=limits,
        clock=clock,
    )


def build_rig(
    api: FaultyKubeApi,
    kube: KubeApiServer,
    proxy: FaultProxy,
    kubeconfig: str,
    *,
    old: str,
    new: str,
    user: str,
    token: str,
    evict: bool = False,
) -> Rig:
    cluster = KubeCluster(
        label_selector=SELECTOR,
        api_client_factory=lambda: connect({"KUBECONFIG": kubeconfig}),
        request_timeout=KUBE_TIMEOUT,
        evict=evict,
    )
    metrics = Metrics(CollectorRegistry())
    registry_client = proxied_client(proxy, user, token, observer=metrics)
    return Rig(api, kube, proxy, cluster, registry_client, old, new, metrics)
