"""etcd + kube-apiserver on 127.0.0.1, without kube-controller-manager, for the benchmarks.

Why no controller manager: the benchmark populates thousands of pods directly (owner-free,
labelled to match their Deployment, status written through ``pods/status``). A running
Deployment controller would create ReplicaSets and 3 more pods per Deployment that no node
ever runs, and the garbage collector would spend the two shared cores watching them. The
certificates, tokens and flags are the e2e tier's (``tests/e2e/controlplane.py``,
``tests/e2e/controlplane_config.py``), so the API server measured here is configured exactly
like the one the end-to-end tests use.

Without the controller manager nobody creates the ``default`` ServiceAccount of a new
namespace; ``bench.populate`` creates it, so ServiceAccount admission works as usual.
"""

from __future__ import annotations

import contextlib
import secrets
import shutil
import ssl
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from tests.e2e.controlplane import generate_pki
from tests.e2e.controlplane_config import (
    ADMIN_USER,
    apiserver_args,
    etcd_args,
    kubeconfig_document,
    token_file_line,
)
from tests.e2e.controlplane_process import Component, http_ok, terminate_all
from tests.support.ports import free_port

START_TIMEOUT_SECONDS = 120.0


class BenchClusterError(RuntimeError):
    """etcd or kube-apiserver did not start; the message carries the end of its log."""


@dataclass(frozen=True)
class ApiServer:
    """A running API server: its URL, admin bearer token, CA file and admin kubeconfig."""

    server: str
    token: str
    ca_file: Path
    kubeconfig: Path
    logs: dict[str, Path]
    start_seconds: float
    pids: dict[str, int] = field(default_factory=dict)

    def peak_rss_kib(self) -> dict[str, int]:
        """etcd's and kube-apiserver's peak RSS (VmHWM, KiB): does a size fit the machine?"""
        found = {}
        for name, pid in self.pids.items():
            with contextlib.suppress(OSError):
                for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                    if line.startswith("VmHWM:"):
                        found[name] = int(line.split()[1])
        return found


@contextlib.contextmanager
def running_apiserver(*, etcd: str, kube_apiserver: str) -> Iterator[ApiServer]:
    """Start etcd and kube-apiserver in a temporary directory; always stop and remove them."""
    started = time.monotonic()
    root = Path(tempfile.mkdtemp(prefix="autoroll-bench-"))
    pki = root / "pki"
    components: list[Component] = []
    try:
        generate_pki(pki)
        token = secrets.token_hex(16)
        (pki / "tokens.csv").write_text(
            token_file_line(token=token, user=ADMIN_USER, uid="1", groups=["system:masters"])
        )
        etcd_port, peer_port, api_port = free_port(), free_port(), free_port()
        etcd_url = f"http://127.0.0.1:{etcd_port}"
        server = f"https://127.0.0.1:{api_port}"
        kubeconfig = root / "admin.kubeconfig"
        kubeconfig.write_text(
            yaml.safe_dump(
                kubeconfig_document(
                    server=server, ca_pem=(pki / "ca.crt").read_bytes(), user="admin", token=token
                )
            )
        )
        logs = {"etcd": root / "etcd.log", "kube-apiserver": root / "kube-apiserver.log"}
        argvs = {
            "etcd": [
                etcd,
                *etcd_args(data_dir=root / "etcd", client_port=etcd_port, peer_port=peer_port),
            ],
            "kube-apiserver": [
                kube_apiserver,
                *apiserver_args(pki=pki, etcd_url=etcd_url, port=api_port),
            ],
        }
        tls = ssl.create_default_context(cafile=str(pki / "ca.crt"))
        probes = {
            "etcd": lambda: http_ok(f"{etcd_url}/health"),
            "kube-apiserver": lambda: http_ok(f"{server}/readyz", context=tls, token=token),
        }
        deadline = started + START_TIMEOUT_SECONDS
        for name, argv in argvs.items():
            component = Component(name, argv, logs[name])
            components.append(component)
            component.start()
            while not probes[name]():
                if component.exit_code() is not None:
                    raise BenchClusterError(f"{name} exited:\n{component.tail()}")
                if time.monotonic() > deadline:
                    raise BenchClusterError(f"{name} not ready in time:\n{component.tail()}")
                time.sleep(0.1)
        yield ApiServer(
            server=server,
            token=token,
            ca_file=pki / "ca.crt",
            kubeconfig=kubeconfig,
            logs=logs,
            start_seconds=time.monotonic() - started,
            pids={c.name: c.proc.pid for c in components if c.proc is not None},
        )
    finally:
        terminate_all(components)
        shutil.rmtree(root, ignore_errors=True)
