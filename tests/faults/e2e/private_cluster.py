"""The world of the real-API fault rows: one private control plane per test module (etcd +
kube-apiserver + kube-controller-manager from ``tests/e2e``), so restarting its API server
disturbs no other test, a simulated kubelet that "pulls" from a real docker-registry with
htpasswd auth, the kube-apiserver's restarts, and the enrolled stale Deployments the rows
roll (with the checks they poll on its pods).

The ``cluster`` fixture is served to ``tests/faults/e2e`` by its ``conftest.py``; the test
modules there (``test_real_api_faults.py``, ``test_quarantine_faults.py``) import the rest.
"""

from __future__ import annotations

import os
import signal
import ssl
import subprocess
import time
import urllib.request
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from autoroll.kube import KubeCluster, connect
from tests.conftest import require_tool
from tests.e2e.controlplane import Binaries, ControlPlane, running_control_plane
from tests.e2e.helpers import apps_api, core_api, deployment, image_ids, is_ready
from tests.e2e.kubelet import SimulatedKubelet
from tests.e2e.kubelet_images import RegistryResolver
from tests.support.registry import ImagePusher, RegistryServer, running_registry
from tests.support.wait import eventually

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
    binaries = Binaries.located(require_tool)
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


def _replacements(cluster: Cluster, namespace: str, uids: set[str]) -> list[Any]:
    return [
        p
        for p in cluster.core.list_namespaced_pod(namespace).items
        if p.metadata.uid not in uids and p.metadata.deletion_timestamp is None
    ]


def kube_cluster(cluster: Cluster, namespace: str) -> KubeCluster:
    return KubeCluster(
        label_selector=selector(namespace),
        api_client_factory=lambda: connect({"KUBECONFIG": str(cluster.plane.kubeconfig)}),
        request_timeout=(2.0, 5.0),
    )
