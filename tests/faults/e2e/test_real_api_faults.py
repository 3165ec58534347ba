"""Fault matrix rows that need the real API: kube-apiserver restarting mid-pass, and a secrets
scan over a full run of ``autoroll serve`` against the local control plane.

One private control plane for this module (etcd + kube-apiserver + kube-controller-manager
from ``tests/e2e``), so restarting its API server disturbs no other test; a simulated
kubelet "pulls" from a real docker-registry with htpasswd auth.
"""

from __future__ import annotations

import base64
import os
import secrets
import signal
import ssl
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import requests
from flask import Flask
from prometheus_client import CollectorRegistry
from prometheus_client.parser import text_string_to_metric_families

from autoroll.controller.reconciler import Reconciler, TickReport
from autoroll.controller.worker import Nudge, Worker, WorkerStopTimeoutError
from autoroll.core.model import DeleteOutcome, Enrolled, WorkloadView
from autoroll.core.scope import FULL, Scope
from autoroll.edge.web import create_app
from autoroll.instruments.metrics import Metrics
from autoroll.kube import ClusterError, KubeCluster, connect
from autoroll.registry import RegistryClient
from tests.conftest import require_tool
from tests.e2e.controller import running_autoroll
from tests.e2e.controlplane import Binaries, ControlPlane, running_control_plane
from tests.e2e.helpers import apps_api, core_api, deployment, image_ids, is_ready
from tests.e2e.kubelet import Behaviour, RegistryResolver, SimulatedKubelet
from tests.support.registry import ImagePusher, RegistryServer, running_registry
from tests.support.wait import eventually

pytestmark = pytest.mark.e2e

#: Each test enrols its own Deployment only (earlier tests' Deployments stay stale).
TEST_LABEL = "faults.autoroll/test"


def enrolled(namespace: str) -> dict[str, str]:
    return {"aethnet.se/autoroll": "true", TEST_LABEL: namespace}


def selector(namespace: str) -> str:
    return f"aethnet.se/autoroll=true,{TEST_LABEL}={namespace}"


@dataclass
class Cluster:
    plane: ControlPlane
    registry: RegistryServer
    kubelet: SimulatedKubelet
    restarts: ApiServerRestarts
    core: Any
    apps: Any


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    binaries = Binaries(
        etcd=require_tool("etcd"),
        kube_apiserver=require_tool("kube-apiserver"),
        kube_controller_manager=require_tool("kube-controller-manager"),
    )
    registry_binary = require_tool("docker-registry")
    require_tool("htpasswd")
    root = tmp_path_factory.mktemp("faults-e2e")
    with (
        running_registry(registry_binary, root / "registry") as registry,
        running_control_plane(binaries) as plane,
        ApiServerRestarts(plane) as restarts,
    ):
        kubelet = SimulatedKubelet(plane.api_client(), RegistryResolver(auth=registry.auth))
        kubelet.start()
        try:
            api = plane.api_client()
            yield Cluster(plane, registry, kubelet, restarts, core_api(api), apps_api(api))
        finally:
            kubelet.stop()


#: How long a restarted kube-apiserver may take to report ready.
RESTART_READY_SECONDS = 180.0


class ApiServerRestarts:
    """Stop and start this control plane's kube-apiserver (same argv, same port, same etcd).

    The API server is found among this process's children by its ``--secure-port``; the
    replacement is started here and stopped on exit.
    """

    def __init__(self, plane: ControlPlane) -> None:
        self.plane = plane
        self.port = plane.server.rpartition(":")[2]
        self.started: list[subprocess.Popen[bytes]] = []

    def __enter__(self) -> ApiServerRestarts:
        return self

    def __exit__(self, *exc: object) -> None:
        for process in self.started:
            if process.poll() is None:
                process.kill()  # its etcd data is thrown away next: no drain to wait for
                process.wait(10)

    def _find(self) -> tuple[int, list[str]]:
        me = str(os.getpid())
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                stat = (entry / "stat").read_text()
                argv = (entry / "cmdline").read_bytes().decode().split("\0")[:-1]
            except OSError:
                continue
            fields = stat.rpartition(")")[2].split()
            state, ppid = fields[0], fields[1]
            if (
                ppid == me
                and state != "Z"
                and argv
                and argv[0].endswith("kube-apiserver")
                and f"--secure-port={self.port}" in argv
            ):
                return int(entry.name), argv
        raise AssertionError("kube-apiserver of this control plane is not running")

    def stop(self) -> list[str]:
        """Kill the API server (SIGKILL: a crash, and no graceful drain to wait out) and wait
        until it is gone; returns its argv."""
        pid, argv = self._find()
        os.kill(pid, signal.SIGKILL)
        eventually(lambda: self._assert_gone(pid), timeout=30, what="kube-apiserver to exit")
        return argv

    def start(self, argv: Sequence[str], attempts: int = 3) -> None:
        """Start the API server again and wait until it is ready; a process that exits
        before it is ready (say, its port was briefly taken) is launched again."""
        for attempt in range(1, attempts + 1):
            with self.plane.logs["kube-apiserver"].open("ab") as log:
                process = subprocess.Popen(
                    list(argv), stdout=log, stderr=subprocess.STDOUT, start_new_session=True
                )
            self.started.append(process)
            started = time.monotonic()
            # Generous: on a loaded 2-core machine a cold start re-lists every etcd key.
            while time.monotonic() - started < RESTART_READY_SECONDS:
                if self._ready(timeout=2):
                    print(f"\nkube-apiserver restarted in {time.monotonic() - started:.1f}s")
                    return
                if process.poll() is not None:
                    break
                time.sleep(0.2)
            tail = self.plane.logs["kube-apiserver"].read_text(errors="replace").splitlines()
            problem = (
                f"restarted kube-apiserver (attempt {attempt}) not ready after "
                f"{time.monotonic() - started:.0f}s, exit code {process.poll()}; log tail:\n"
                + "\n".join(tail[-30:])
            )
            if process.poll() is None or attempt == attempts:
                raise AssertionError(problem)
            print(f"\n{problem}\nlaunching it again")
        raise AssertionError("unreachable")

    @staticmethod
    def _assert_gone(pid: int) -> None:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
        except OSError:
            return
        assert state == "Z", f"state {state}"

    def _assert_ready(self) -> None:
        assert self._ready(timeout=2), "not ready"

    def _ready(self, timeout: float) -> bool:
        tls = ssl.create_default_context(cafile=str(self.plane.ca_file))
        request = urllib.request.Request(
            f"{self.plane.server}/readyz", headers={"Authorization": f"Bearer {self.plane.token}"}
        )
        try:
            with urllib.request.urlopen(request, timeout=timeout, context=tls) as answer:
                return bool(answer.status == 200)
        except OSError:
            return False


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


def deploy_stale(cluster: Cluster, namespace: str, replicas: int = 2) -> tuple[str, str, set[str]]:
    """An enrolled Deployment whose Ready pods run v1 while ``:latest`` already names v2.

    Returns (v1 digest, v2 digest, the original pods' UIDs).
    """
    repository = f"faults/{namespace}"
    image = f"{cluster.registry.host}/{repository}:latest"
    pusher = ImagePusher(cluster.registry)
    old = pusher.push_image(repository, "latest", content=f"v1 {namespace}".encode()).digest
    cluster.core.create_namespace({"metadata": {"name": namespace}})
    eventually(
        lambda: _has_default_sa(cluster, namespace), timeout=30, what="the default ServiceAccount"
    )
    cluster.apps.create_namespaced_deployment(
        namespace, deployment("web", image, replicas=replicas, labels=enrolled(namespace))
    )
    eventually(
        lambda: _all_ready(cluster, namespace, replicas, old), timeout=60, what="pods Ready on v1"
    )
    uids = {p.metadata.uid for p in cluster.core.list_namespaced_pod(namespace).items}
    # No pause: pods stamped in the same second as the first sighting of v2 are still
    # stale, because the pass that first sees v2 remembers the pods it listed (ADR 001).
    new = pusher.push_image(repository, "latest", content=f"v2 {namespace}".encode()).digest
    return old, new, uids


def _has_default_sa(cluster: Cluster, namespace: str) -> None:
    names = [s.metadata.name for s in cluster.core.list_namespaced_service_account(namespace).items]
    assert "default" in names


def _all_ready(cluster: Cluster, namespace: str, replicas: int, digest: str) -> None:
    pods = [
        p
        for p in cluster.core.list_namespaced_pod(namespace).items
        if p.metadata.deletion_timestamp is None
    ]
    assert len(pods) == replicas, len(pods)
    for item in pods:
        assert is_ready(item), item.metadata.name
        assert all(i.endswith(digest) for i in image_ids(item)), image_ids(item)


def _gone(cluster: Cluster, namespace: str, uids: set[str]) -> set[str]:
    """Which of ``uids`` are deleted or being deleted."""
    live = {
        p.metadata.uid
        for p in cluster.core.list_namespaced_pod(namespace).items
        if p.metadata.deletion_timestamp is None
    }
    return uids - live


# -- secrets over a full run ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("log_format", "leader"), [("text", False), ("json", False), ("json", True)]
)
def test_no_secret_in_any_output_of_a_full_e2e_roll(
    cluster: Cluster, log_format: str, leader: bool
) -> None:
    """``autoroll serve`` at debug level rolls a Deployment on the real API; its whole output
    (stdout and stderr: autoroll, gunicorn, urllib3) never shows a credential. The third
    run also elects itself leader on a Lease and emits Events."""
    namespace = f"secrets-{log_format}-{(leader and 'ha') or 'one'}-{secrets.token_hex(3)}"
    _, new, _ = deploy_stale(cluster, namespace)
    extra = {"LOG_LEVEL": "debug", "LOG_FORMAT": log_format, "LABEL_SELECTOR": selector(namespace)}
    if leader:
        extra |= {
            "LEADER_ELECTION": "true",
            "LEADER_ELECTION_NAMESPACE": namespace,
            "POD_NAME": "autoroll-0",
            "EMIT_EVENTS": "true",
        }
    with running_autoroll(
        plane=cluster.plane, registry=cluster.registry, poll_seconds=3600, extra_env=extra
    ) as autoroll:
        assert autoroll.webhook(sign=False) == 403
        assert autoroll.webhook(b"forged", sign=False) == 403

        def rolled() -> None:
            autoroll.webhook()  # each valid webhook nudges a pass
            _all_ready(cluster, namespace, 2, new)

        eventually(rolled, timeout=90, what="the roll to v2", interval=0.5)
        secret = autoroll.secret
    assert autoroll.process is not None  # a local process
    code = autoroll.process.wait(5)
    assert code == 0
    output = "\n".join(autoroll.output)
    user, token = cluster.registry.auth
    forbidden = {
        "FORGEJO_TOKEN": token,
        "WEBHOOK_SECRET": secret,
        "registry Basic credentials": base64.b64encode(f"{user}:{token}".encode()).decode(),
        "Kubernetes bearer token": cluster.plane.token,
    }
    assert "deleted stale pod" in output  # the scan read a real roll
    assert ("became leader" in output) is leader
    for what, value in forbidden.items():
        assert value not in output, f"{what} leaked into the output"


# -- kube-apiserver restarts mid-pass ------------------------------------------------------------


def test_the_api_server_is_down_between_snapshot_and_delete(cluster: Cluster) -> None:
    """Stopped after the snapshot; the DELETE finds nobody; back up, the next pass rolls."""
    namespace = f"restart-down-{secrets.token_hex(3)}"
    _, _, uids = deploy_stale(cluster, namespace)
    argv: list[str] = []

    def stop_api_server() -> None:
        argv.extend(cluster.restarts.stop())

    ctl = controller(
        BeforeFirstDelete(kube_cluster(cluster, namespace), stop_api_server), cluster.registry
    )
    try:
        ctl.worker.start()
        eventually(lambda: _at_least(ctl.worker.passes, 1), timeout=60, what="the first pass")
        report = ctl.reports[-1]
        assert [e.outcome for e in report.executed] == ["error"]
        assert "cannot reach the Kubernetes API" in report.executed[0].detail
        ctl.assert_survived()

        # Still down: the next pass fails at the snapshot, and survives.
        ctl.run_pass()
        errors = ctl.metrics.registry.get_sample_value("autoroll_ticks_total", {"outcome": "error"})
        assert errors == 1
        ctl.assert_survived()
    finally:
        if argv:
            cluster.restarts.start(argv)
    assert _gone(cluster, namespace, uids) == set()  # nothing was deleted while it was down

    try:
        report = ctl.run_pass()
        assert [e.outcome for e in report.executed] == ["deleted"]
        assert len(_gone(cluster, namespace, uids)) == 1
        ctl.assert_survived()
    finally:
        ctl.stop()


def test_the_api_server_restarts_between_snapshot_and_delete(cluster: Cluster) -> None:
    """Stopped and started again after the snapshot: the pooled connection is dead, the
    DELETE (with its UID precondition) goes to the new process and removes one pod."""
    namespace = f"restart-up-{secrets.token_hex(3)}"
    _, _, uids = deploy_stale(cluster, namespace)

    def restart_api_server() -> None:
        cluster.restarts.start(cluster.restarts.stop())

    ctl = controller(
        BeforeFirstDelete(kube_cluster(cluster, namespace), restart_api_server), cluster.registry
    )
    try:
        ctl.worker.start()
        # The first pass restarts the API server in its delete step and waits until it is up.
        eventually(
            lambda: _at_least(ctl.worker.passes, 1),
            timeout=RESTART_READY_SECONDS * 3 + 30,
            what="the first pass",
        )
        report = ctl.reports[-1]
        outcomes = [e.outcome for e in report.executed]
        print(f"\nDELETE right after an API server restart: {outcomes}")
        # The dead connection may be noticed too late (an error), or the fresh API server may
        # not serve lists yet (no action). Either way nothing is deleted, and a following pass
        # against the restarted server does the one deletion.
        deadline = time.monotonic() + 90
        while outcomes != ["deleted"] and time.monotonic() < deadline:
            assert outcomes in ([], ["error"]), report.executed
            assert _gone(cluster, namespace, uids) == set()
            report = ctl.run_pass()
            outcomes = [e.outcome for e in report.executed]
        assert outcomes == ["deleted"], [
            (v.verdict, v.reason, v.detail) for d in report.decisions for v in d.containers
        ]
        assert len(_gone(cluster, namespace, uids)) == 1
        ctl.assert_survived()
    finally:
        ctl.stop()


def kube_cluster(cluster: Cluster, namespace: str) -> KubeCluster:
    return KubeCluster(
        label_selector=selector(namespace),
        api_client_factory=lambda: connect({"KUBECONFIG": str(cluster.plane.kubeconfig)}),
        request_timeout=(2.0, 5.0),
    )


# -- the watch breaks mid-rollout ------------------------------------------------------------


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


def _replacements(cluster: Cluster, namespace: str, uids: set[str]) -> list[Any]:
    return [
        p
        for p in cluster.core.list_namespaced_pod(namespace).items
        if p.metadata.uid not in uids and p.metadata.deletion_timestamp is None
    ]


def test_the_watch_breaks_mid_rollout_and_no_second_pod_goes_while_the_replacement_is_unready(
    cluster: Cluster,
) -> None:
    """``autoroll serve`` with its watched cache (the default) deletes the first of three stale
    pods; the replacement (simulated kubelet: held unready) is not Ready. The API server is
    killed and started again, so every watch breaks and the cache relists. Over many passes
    before and after the break, no second pod is deleted; once the replacement is Ready the
    roll goes on to the end (the row is not vacuous)."""
    namespace = f"watch-break-{secrets.token_hex(3)}"
    _, new, uids = deploy_stale(cluster, namespace, replicas=3)
    cluster.kubelet.behave(new, Behaviour(ready_after=24 * 3600))  # v2 pods stay unready
    try:
        extra = {"LABEL_SELECTOR": selector(namespace), "WATCH_CACHE": "true"}
        with running_autoroll(
            plane=cluster.plane, registry=cluster.registry, poll_seconds=5, extra_env=extra
        ) as autoroll:
            eventually(
                lambda: _exactly(len(_gone(cluster, namespace, uids)), 1),
                timeout=120,
                what="the first deletion",
            )
            eventually(
                lambda: _exactly(len(_replacements(cluster, namespace, uids)), 1),
                timeout=60,
                what="the replacement pod",
            )
            relists = _metric(autoroll, "autoroll_cache_relists_total")
            cluster.restarts.start(cluster.restarts.stop())  # every watch breaks
            eventually(
                lambda: _at_least(
                    int(_metric(autoroll, "autoroll_cache_relists_total")), int(relists) + 1
                ),
                timeout=120,
                what="the cache to relist after the break",
            )
            eventually(
                lambda: _exactly(_metric(autoroll, "autoroll_cache_synced"), 1.0),
                timeout=120,
                what="the cache to be synced again",
            )

            def ok_passes() -> int:
                return int(_metric(autoroll, "autoroll_ticks_total", {"outcome": "ok"}))

            passes = ok_passes()
            # Passes on the relisted cache (poll every 5 s, and webhooks): still one gone.
            for n in range(1, 6):
                assert autoroll.webhook() == 202
                eventually(
                    lambda n=n: _at_least(ok_passes(), passes + n),  # type: ignore[misc]
                    timeout=60,
                    what="another pass",
                )
                assert len(_gone(cluster, namespace, uids)) == 1
                replacement = _replacements(cluster, namespace, uids)
                assert len(replacement) == 1 and not is_ready(replacement[0])
            assert len(autoroll.lines("deleted stale pod")) == 1

            cluster.kubelet.behave(new, Behaviour())  # the replacement becomes Ready
            eventually(
                lambda: _all_ready(cluster, namespace, 3, new),
                timeout=180,
                what="the roll to finish after the replacement is Ready",
            )
            assert len(autoroll.lines("deleted stale pod")) == 3
    finally:
        cluster.kubelet.behave(new, Behaviour())


def _exactly(value: float, wanted: float) -> None:
    assert value == wanted, f"{value} != {wanted}"
