"""A real Kubernetes control plane on 127.0.0.1: etcd, kube-apiserver, kube-controller-manager.

Why real binaries rather than a fake API: Deployments must create ReplicaSets and pods, Jobs must
create pods, RBAC must really deny, and admission must really reject what a cluster rejects. Only
the node side is simulated (see ``kubelet.py``); there is no kube-scheduler, the simulated kubelet
binds pods itself.

Everything lives in one temporary directory: certificates (generated with the ``openssl`` CLI, so
no extra Python dependency), a static token file, kubeconfigs, etcd's data and one log file per
component. Ports are picked free on 127.0.0.1. What the servers are given (flags, kubeconfigs,
token lines) is plain data in ``controlplane_config.py``; one server process, its log and its
stop, is ``controlplane_process.Component``.

Errors::

    ControlPlaneError        a component could not start, died, or did not become ready in time;
                             the message names it and carries the last lines of its log
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import ssl
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from tests.e2e.controlplane_config import (
    ADMIN_USER,
    SERVICE_IP,
    apiserver_args,
    controller_manager_args,
    egress_selector_config,
    etcd_args,
    kubeconfig_document,
    token_file_line,
)
from tests.e2e.controlplane_process import Component, http_ok, terminate_all
from tests.support.ports import free_port
from tests.support.wait import wait_until


class ControlPlaneError(RuntimeError):
    """A component failed to start, died, or was not ready in time (message has its log tail)."""


@dataclass(frozen=True)
class Binaries:
    """Paths of the three server binaries (from ``scripts/tools.sh kube``)."""

    etcd: str
    kube_apiserver: str
    kube_controller_manager: str

    @classmethod
    def located(cls, find: Callable[[str], str]) -> Binaries:
        """Each binary's path as ``find`` gives it for the binary's name (the fixtures pass
        ``require_tool``, which skips locally and fails in CI when one is missing)."""
        return cls(
            etcd=find("etcd"),
            kube_apiserver=find("kube-apiserver"),
            kube_controller_manager=find("kube-controller-manager"),
        )


@dataclass(frozen=True)
class ControlPlane:
    """A running control plane: where it listens and how to talk to it as cluster admin."""

    workdir: Path
    server: str
    ca_file: Path
    token: str
    kubeconfig: Path
    etcd_url: str
    logs: dict[str, Path]
    timings: dict[str, float] = field(default_factory=dict)
    #: where the API server's ``cluster`` egress goes (HTTP CONNECT; ``egress.py``)
    cluster_egress: Path | None = None

    def api_client(self) -> Any:
        """A fresh ``kubernetes.client.ApiClient`` authenticated as cluster admin.

        The admin token never expires, so the client does without the kubeconfig loader's
        refresh hook. That hook copies the kubeconfig into the client before every request,
        and setting ``host`` reads the proxy variables by iterating ``os.environ``; from a
        background thread (the simulated kubelet, the watchers) that races with pytest
        setting and removing ``PYTEST_CURRENT_TEST`` in the main thread, and a request
        fails with ``KeyError: 'PYTEST_CURRENT_TEST'`` (seen once in CI).
        """
        from kubernetes import config

        new_client: Any = config.new_client_from_config
        api = new_client(config_file=str(self.kubeconfig))
        api.configuration.refresh_api_key_hook = None
        return api


# --- certificates -------------------------------------------------------------


def _openssl(*args: str, cwd: Path) -> None:
    done = subprocess.run(["openssl", *args], cwd=cwd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise ControlPlaneError(f"openssl {args[0]} failed: {done.stderr.strip()}")


def generate_pki(pki: Path) -> None:
    """Write a CA, the apiserver serving cert and the service-account key pair into ``pki``.

    EC P-256 for TLS (fast to generate); RSA for the service-account signing key, the key type
    every Kubernetes version and client accepts for ServiceAccount tokens.
    """
    pki.mkdir(parents=True, exist_ok=True)
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    _openssl(
        "req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca.crt", "-days", "2",
        "-subj", "/CN=autoroll-e2e-ca",
        "-addext", "basicConstraints=critical,CA:TRUE",
        "-addext", "keyUsage=critical,keyCertSign,cRLSign,digitalSignature",
        cwd=pki,
    )  # fmt: skip
    sans = ",".join(
        [
            "IP:127.0.0.1",
            f"IP:{SERVICE_IP}",
            "DNS:localhost",
            "DNS:kubernetes",
            "DNS:kubernetes.default",
            "DNS:kubernetes.default.svc",
            "DNS:kubernetes.default.svc.cluster.local",
        ]
    )
    _openssl(
        "req", "-x509", *ec, "-keyout", "apiserver.key", "-out", "apiserver.crt", "-days", "2",
        "-CA", "ca.crt", "-CAkey", "ca.key",
        "-subj", "/CN=kube-apiserver",
        "-addext", f"subjectAltName={sans}",
        "-addext", "basicConstraints=critical,CA:FALSE",
        "-addext", "keyUsage=critical,digitalSignature,keyEncipherment",
        "-addext", "extendedKeyUsage=serverAuth",
        cwd=pki,
    )  # fmt: skip
    _openssl(
        "genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", "sa.key",
        cwd=pki,
    )  # fmt: skip
    _openssl("pkey", "-in", "sa.key", "-pubout", "-out", "sa.pub", cwd=pki)


def _died(component: Component) -> ControlPlaneError:
    return ControlPlaneError(
        f"{component.name} exited with code {component.exit_code()} while starting; "
        f"last lines of {component.log}:\n{component.tail()}"
    )


def _wait_until(
    what: str,
    ready: Callable[[], bool],
    *,
    watch: Sequence[Component],
    deadline: float,
) -> None:
    """Poll ``ready`` until true; fail fast (with its log) if a watched component dies."""

    def alive() -> None:
        for component in watch:
            if component.exit_code() is not None:
                raise _died(component)

    try:
        wait_until(ready, deadline - time.monotonic(), what, interval=0.1, check=alive)
    except AssertionError:
        tails = "\n".join(f"--- {c.name} ({c.log}):\n{c.tail()}" for c in watch)
        raise ControlPlaneError(f"timed out waiting for {what}\n{tails}") from None


@contextlib.contextmanager
def running_control_plane(
    binaries: Binaries,
    *,
    workdir: Path | None = None,
    timeout: float = 180.0,
    keep_workdir: bool = False,
) -> Iterator[ControlPlane]:
    """Start etcd, kube-apiserver and kube-controller-manager; yield once usable; tear down.

    "Usable" means ``/readyz`` answers 200 and the ``default`` ServiceAccount exists in the
    ``default`` namespace (so the ServiceAccount admission plugin accepts pods and the
    controller manager is demonstrably working).
    """
    started = time.monotonic()
    made_tmp = workdir is None
    root = Path(tempfile.mkdtemp(prefix="autoroll-e2e-")) if workdir is None else workdir
    root.mkdir(parents=True, exist_ok=True)
    pki = root / "pki"
    components: list[Component] = []
    timings: dict[str, float] = {}
    try:
        generate_pki(pki)
        admin_token = secrets.token_hex(16)
        kcm_token = secrets.token_hex(16)
        # Both users are in system:masters: the admin because tests act as cluster admin, the
        # controller manager because it runs every controller under its own identity.
        (pki / "tokens.csv").write_text(
            token_file_line(token=admin_token, user=ADMIN_USER, uid="1", groups=["system:masters"])
            + token_file_line(
                token=kcm_token,
                user="system:kube-controller-manager",
                uid="2",
                groups=["system:masters"],
            )
        )
        timings["pki"] = time.monotonic() - started

        etcd_port, peer_port, api_port = free_port(), free_port(), free_port()
        etcd_url = f"http://127.0.0.1:{etcd_port}"
        server = f"https://127.0.0.1:{api_port}"
        ca_pem = (pki / "ca.crt").read_bytes()
        admin_kubeconfig = root / "admin.kubeconfig"
        kcm_kubeconfig = root / "kube-controller-manager.kubeconfig"
        admin_kubeconfig.write_text(
            yaml.safe_dump(
                kubeconfig_document(server=server, ca_pem=ca_pem, user="admin", token=admin_token)
            )
        )
        kcm_kubeconfig.write_text(
            yaml.safe_dump(
                kubeconfig_document(
                    server=server, ca_pem=ca_pem, user="kube-controller-manager", token=kcm_token
                )
            )
        )
        logs = {
            name: root / f"{name}.log"
            for name in ("etcd", "kube-apiserver", "kube-controller-manager")
        }
        deadline = started + timeout

        etcd = Component(
            "etcd",
            [
                binaries.etcd,
                *etcd_args(data_dir=root / "etcd", client_port=etcd_port, peer_port=peer_port),
            ],
            logs["etcd"],
        )
        components.append(etcd)
        etcd.start()
        _wait_until(
            "etcd /health", lambda: http_ok(f"{etcd_url}/health"), watch=[etcd], deadline=deadline
        )
        timings["etcd"] = time.monotonic() - started

        egress_socket = root / "egress.sock"
        egress_file = root / "egress-selector.yaml"
        egress_file.write_text(yaml.safe_dump(egress_selector_config(socket_path=egress_socket)))
        apiserver = Component(
            "kube-apiserver",
            [
                binaries.kube_apiserver,
                *apiserver_args(pki=pki, etcd_url=etcd_url, port=api_port, egress=egress_file),
            ],
            logs["kube-apiserver"],
        )
        components.append(apiserver)
        apiserver.start()
        tls = ssl.create_default_context(cafile=str(pki / "ca.crt"))
        _wait_until(
            "kube-apiserver /readyz",
            lambda: http_ok(f"{server}/readyz", context=tls, token=admin_token),
            watch=components,
            deadline=deadline,
        )
        timings["kube-apiserver"] = time.monotonic() - started

        kcm = Component(
            "kube-controller-manager",
            [
                binaries.kube_controller_manager,
                *controller_manager_args(pki=pki, kubeconfig=kcm_kubeconfig),
            ],
            logs["kube-controller-manager"],
        )
        components.append(kcm)
        kcm.start()
        _wait_until(
            "the default ServiceAccount (created by kube-controller-manager)",
            lambda: http_ok(
                f"{server}/api/v1/namespaces/default/serviceaccounts/default",
                context=tls,
                token=admin_token,
            ),
            watch=components,
            deadline=deadline,
        )
        timings["kube-controller-manager"] = time.monotonic() - started
        timings["total"] = time.monotonic() - started

        yield ControlPlane(
            workdir=root,
            server=server,
            ca_file=pki / "ca.crt",
            token=admin_token,
            kubeconfig=admin_kubeconfig,
            etcd_url=etcd_url,
            logs=logs,
            timings=timings,
            cluster_egress=egress_socket,
        )
    finally:
        terminate_all(components)
        # etcd preallocates 64 MB WAL segments: never leave them behind, keep only the logs.
        shutil.rmtree(root / "etcd", ignore_errors=True)
        if made_tmp and not keep_workdir:
            shutil.rmtree(root, ignore_errors=True)


def binaries_from_path() -> Binaries | None:
    """The three binaries from PATH (``source .tools/env``), or None if any is missing."""
    found = [shutil.which(n) for n in ("etcd", "kube-apiserver", "kube-controller-manager")]
    if any(p is None for p in found):
        return None
    etcd, apiserver, kcm = (str(p) for p in found)
    return Binaries(etcd=etcd, kube_apiserver=apiserver, kube_controller_manager=kcm)


def keep_workdir_requested() -> bool:
    """``AUTOROLL_E2E_KEEP=1`` keeps the tmp dir (logs, kubeconfig) for a post-mortem."""
    return os.environ.get("AUTOROLL_E2E_KEEP", "") in {"1", "true", "yes"}
