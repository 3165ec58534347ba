"""Fixtures for the e2e tier: one control plane per session, a simulated kubelet, a namespace.

The binaries come from PATH (``scripts/tools.sh kube`` then ``source .tools/env``). Missing ones
skip locally and fail in CI (``require_tool``). Set ``AUTOROLL_E2E_KEEP=1`` to keep the control
plane's directory (logs, kubeconfig) after the session.
"""

from __future__ import annotations

import re
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import require_tool
from tests.e2e.controlplane import (
    Binaries,
    ControlPlane,
    keep_workdir_requested,
    running_control_plane,
)
from tests.e2e.helpers import core_api
from tests.e2e.kubelet import SimulatedKubelet, StaticResolver
from tests.support.registry import RegistryServer
from tests.support.registry_fixtures import fresh_registry, registry_for_tests
from tests.support.wait import eventually

__all__ = ["fresh_registry"]  # a fixture, re-exported for the e2e tests

_timings: dict[str, float] = {}


@pytest.fixture(scope="session")
def control_plane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlane]:
    """etcd + kube-apiserver + kube-controller-manager on 127.0.0.1 for the whole session."""
    binaries = Binaries(
        etcd=require_tool("etcd"),
        kube_apiserver=require_tool("kube-apiserver"),
        kube_controller_manager=require_tool("kube-controller-manager"),
    )
    workdir = tmp_path_factory.mktemp("controlplane") if keep_workdir_requested() else None
    with running_control_plane(binaries, workdir=workdir) as plane:
        _timings.update({f"start: {k}": v for k, v in plane.timings.items()})
        yield plane
        stop = time.monotonic()
    _timings["stop"] = time.monotonic() - stop


@pytest.fixture(scope="session")
def kubeconfig(control_plane: ControlPlane) -> Path:
    """The admin kubeconfig (token user in ``system:masters``)."""
    return control_plane.kubeconfig


@pytest.fixture(scope="session")
def kube(control_plane: ControlPlane) -> Any:
    """A ``kubernetes.client.ApiClient`` acting as cluster admin."""
    return control_plane.api_client()


@pytest.fixture(scope="session")
def _session_kubelet(control_plane: ControlPlane) -> Iterator[SimulatedKubelet]:
    kubelet = SimulatedKubelet(control_plane.api_client(), StaticResolver())
    kubelet.start()
    yield kubelet
    kubelet.stop()


@pytest.fixture(scope="session")
def docker_registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RegistryServer]:
    """A real docker-registry (htpasswd auth) for the session; tests push to their own repos.

    ``fresh_registry`` is one of a test's own, for tests that stop it.
    """
    with registry_for_tests(tmp_path_factory.mktemp("registry")) as server:
        yield server


@pytest.fixture
def registry() -> StaticResolver:
    """The kubelet's default "registry" for a test: image string → digest, set by the test."""
    return StaticResolver()


@pytest.fixture
def kubelet(
    _session_kubelet: SimulatedKubelet, registry: StaticResolver
) -> Iterator[SimulatedKubelet]:
    """The session's simulated kubelet, reset to no knobs and the test's ``registry``.

    Fails the test if the kubelet recorded an error during it.
    """
    _session_kubelet.reset(registry)
    yield _session_kubelet
    errors = list(_session_kubelet.errors)
    _session_kubelet.reset(StaticResolver())
    assert not errors, f"the simulated kubelet failed during the test: {errors}"


@pytest.fixture
def namespace(kube: Any, request: pytest.FixtureRequest) -> Iterator[str]:
    """A fresh namespace named after the test, usable for pods once its ServiceAccount exists."""
    core = core_api(kube)
    slug = re.sub(r"[^a-z0-9]+", "-", request.node.name.lower()).strip("-")[:40].strip("-")
    name = f"{slug}-{uuid.uuid4().hex[:5]}"
    core.create_namespace({"metadata": {"name": name}})

    def has_default_sa() -> None:
        names = [sa.metadata.name for sa in core.list_namespaced_service_account(name).items]
        assert "default" in names, f"service accounts: {names}"

    eventually(has_default_sa, timeout=30, what=f"ServiceAccount default in {name}")
    yield name
    # Not awaited: the namespace controller and the kubelet clean up in the background.
    core.delete_namespace(name, _preload_content=False)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if _timings:
        parts = ", ".join(f"{k} {v:.1f}s" for k, v in _timings.items())
        terminalreporter.write_line(f"e2e control plane (seconds since launch): {parts}")
