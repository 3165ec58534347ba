"""Fixtures for the e2e tier: one control plane and one real node per session, the simulated
kubelet for what a real runtime cannot show, a namespace, and the controller for a test
(``start_autoroll``).

Under pytest-xdist (``make pytest-e2e`` runs four workers) every worker is a session of its
own, with its own control plane, node, registry and Gitea; what a worker's node left
behind reaches the controlling process in ``workeroutput``, which also checks the machine
as a whole once every worker is gone (``leftovers.py``).

The binaries come from PATH (``scripts/tools.sh all`` then ``source .tools/env``). Missing ones
skip locally and fail in CI (``require_tool``). Set ``AUTOROLL_E2E_KEEP=1`` to keep the control
plane's and the node's directories (logs, kubeconfig) after the session.
"""

from __future__ import annotations

import contextlib
import re
import time
import uuid
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import IN_CI, require_tool
from tests.e2e.controller import Autoroll, StartAutoroll, running_autoroll
from tests.e2e.controlplane import (
    Binaries,
    ControlPlane,
    keep_workdir_requested,
    running_control_plane,
)
from tests.e2e.egress import ClusterEgressProxy
from tests.e2e.helpers import core_api, create_namespace
from tests.e2e.incluster import RegistryAccess, installed_autoroll
from tests.e2e.kubelet import SimulatedKubelet
from tests.e2e.kubelet_images import StaticResolver
from tests.e2e.leftovers import RunStart, WorkerReport, session_leftovers, whole_run_settled
from tests.e2e.node import (
    CNI_DIRS,
    Node,
    NodeBinaries,
    node_traces,
    processes_after_teardown,
)
from tests.e2e.node_binder import SIMULATED_LABEL, Binder
from tests.e2e.node_host import HostState
from tests.e2e.node_start import running_node_with_registry
from tests.e2e.scenario import label_selector
from tests.e2e.schedule import file_order
from tests.support.registry import RegistryServer
from tests.support.registry_fixtures import fresh_registry, pki, registry_for_tests, tls_registry

__all__ = ["fresh_registry", "pki", "tls_registry"]  # fixtures, re-exported for the e2e tests

_report = WorkerReport()  # this session's (a worker's, or the only one's)
_timings, _node_problems, _node_notes = _report.timings, _report.problems, _report.notes
_workers: dict[str, WorkerReport] = {}  # the controlling process's, from each worker
_run_start: list[RunStart] = []


@pytest.fixture(scope="session")
def control_plane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlane]:
    """etcd + kube-apiserver + kube-controller-manager on 127.0.0.1 for the whole session."""
    binaries = Binaries.located(require_tool)
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
    kubelet = SimulatedKubelet(
        control_plane.api_client(),
        StaticResolver(),
        only_namespaces_labelled=f"{SIMULATED_LABEL}=simulated",
    )
    kubelet.start()
    yield kubelet
    kubelet.stop()


def node_binaries() -> NodeBinaries:
    """The real node's binaries (``scripts/tools.sh node``); skip locally, fail in CI."""
    for tool in ("nsenter", "unshare", "ip", "openssl", "nft"):
        require_tool(tool)
    cni = next((d for d in CNI_DIRS if (Path(d) / "bridge").exists()), None)
    if cni is None:
        message = f"no CNI plugins in {' or '.join(CNI_DIRS)} (run `make tools`)"
        if IN_CI:
            pytest.fail(message)
        pytest.skip(message)
    return NodeBinaries(
        kubelet=require_tool("kubelet"),
        containerd=require_tool("containerd"),
        shim=require_tool("containerd-shim-runc-v2"),
        runc=require_tool("runc"),
        cni_dir=cni,
        kube_proxy=require_tool("kube-proxy"),
        coredns=require_tool("coredns"),
    )


@pytest.fixture(scope="session")
def node(
    control_plane: ControlPlane,
    docker_registry: RegistryServer,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Node]:
    """kubelet + containerd + runc for the whole session (``node.py``), and the binder that
    schedules every pod outside the simulated kubelet's namespaces onto it.

    If anything of it is left on the machine after its teardown (process, mount, cgroup,
    network namespace, host path), or the binder failed, the session fails (checked in
    ``pytest_sessionfinish``: a fixture's teardown error would be charged to whichever test
    ran last, and swallowed if that one is an expected failure).
    """
    binaries = node_binaries()
    before = HostState.now()
    workdir = tmp_path_factory.mktemp("node") if keep_workdir_requested() else None
    with (
        running_node_with_registry(
            binaries, control_plane, docker_registry, workdir=workdir
        ) as real_node,
        Binder(control_plane.api_client(), real_node.name) as binder,
        # The API server's calls to Services (webhooks) into the node's network (egress.py).
        contextlib.ExitStack() as egress,
    ):
        if control_plane.cluster_egress is not None:
            egress.enter_context(ClusterEgressProxy(control_plane.cluster_egress, real_node.netns))
        _timings.update({f"node: {k}": v for k, v in real_node.timings.items()})
        _node_notes.extend(f"reaped a dead runner's node: {r}" for r in real_node.reaped)
        yield real_node
    left = processes_after_teardown(real_node) + node_traces(real_node) + session_leftovers(before)
    _node_problems.extend(f"binder: {e}" for e in binder.errors[:3])
    _node_problems.extend(f"left behind: {item}" for item in left)


@pytest.fixture(scope="session")
def docker_registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RegistryServer]:
    """A real docker-registry (htpasswd auth) for the session; tests push to their own repos.

    ``fresh_registry`` is one of a test's own, for tests that stop it.
    """
    with registry_for_tests(tmp_path_factory.mktemp("registry")) as server:
        yield server


@pytest.fixture(scope="session")
def controller_image(docker_registry: RegistryServer) -> str:
    """The controller image built from the Dockerfile (``tests/support/image.py``: podman,
    cached by its build context), pushed to the session's registry as
    ``<registry>/forgejo/autoroll:latest``, where the node pulls it from."""
    from tests.support.image import build_controller_image, push_image

    for tool in ("podman", "skopeo"):
        require_tool(tool)
    started = time.monotonic()
    image = build_controller_image()
    pushed = push_image(
        image,
        docker_registry.url,
        "forgejo/autoroll",
        "latest",
        user=docker_registry.user,
        password=docker_registry.password,
    )
    _timings["controller image (build or cache, push)"] = time.monotonic() - started
    return pushed.reference


@pytest.fixture
def registry() -> StaticResolver:
    """The kubelet's default "registry" for a test: image string → digest, set by the test."""
    return StaticResolver()


@pytest.fixture
def kubelet(
    _session_kubelet: SimulatedKubelet, registry: StaticResolver, kube: Any, namespace: str
) -> Iterator[SimulatedKubelet]:
    """The session's simulated kubelet, reset to no knobs and the test's ``registry``; the
    test's ``namespace`` is labelled as the simulated kubelet's (the real node's binder
    leaves its pods alone).

    Fails the test if the kubelet recorded an error during it.
    """
    core_api(kube).patch_namespace(
        namespace, {"metadata": {"labels": {SIMULATED_LABEL: "simulated"}}}
    )
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
    create_namespace(kube, name)
    yield name
    # Not awaited: the namespace controller and the kubelet clean up in the background.
    core.delete_namespace(name, _preload_content=False)


#: The controller's poll interval unless a test asks for another: its minimum.
DEFAULT_POLL = 5


@pytest.fixture
def start_autoroll(
    request: pytest.FixtureRequest,
    control_plane: ControlPlane,
    docker_registry: RegistryServer,
    namespace: str,
    tmp_path: Path,
) -> Iterator[StartAutoroll]:
    """Start the controller for this test, seeing only the workloads of its ``namespace``
    (``LABEL_SELECTOR``); stopped afterwards, and its output printed, so a failing test
    shows it.

    On the real node it is the user's install: ``helm install`` of the chart with the
    controller image built from the Dockerfile, the controller a pod on the node
    (``incluster.py``). A test on the simulated kubelet (it asks for ``kubelet``) gets a
    local ``autoroll serve`` instead: no container runs there.

    ``start(poll=5, registry=docker_registry, values=None, **env)``: ``registry`` is what the
    controller is configured for (docker-registry, or an owner's token on Gitea), ``env`` the
    controller's variables (each maps to a chart value, ``incluster.ENV_TO_VALUES``),
    ``values`` chart values merged over the install's (on the real node only).
    """
    started: list[Autoroll] = []
    with contextlib.ExitStack() as stack:

        def start(
            *,
            poll: int = DEFAULT_POLL,
            registry: RegistryAccess = docker_registry,
            values: Mapping[str, Any] | None = None,
            **env: str,
        ) -> Autoroll:
            env = {"LABEL_SELECTOR": label_selector(namespace), **env}
            if "kubelet" in request.fixturenames:
                if not isinstance(registry, RegistryServer):
                    raise TypeError("a local controller runs against a docker-registry only")
                autoroll = stack.enter_context(
                    running_autoroll(
                        plane=control_plane, registry=registry, poll_seconds=poll, extra_env=env
                    )
                )
            else:
                autoroll = stack.enter_context(
                    installed_autoroll(
                        helm=require_tool("helm"),
                        kubeconfig=control_plane.kubeconfig,
                        kube=request.getfixturevalue("kube"),
                        plane=control_plane,
                        node=request.getfixturevalue("node"),
                        registry=registry,
                        image=request.getfixturevalue("controller_image"),
                        namespace=namespace,
                        workdir=tmp_path,
                        poll_seconds=poll,
                        env=env,
                        values=values,
                    )
                )
            started.append(autoroll)
            return autoroll

        yield start
    for autoroll in started:
        print("--- autoroll output ---", *autoroll.output, sep="\n")


def _is_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if _is_worker(config):  # one process keeps the collection's order
        here = Path(__file__).parent
        ours = [item for item in items if here in item.path.parents]
        items[:] = file_order(ours) + [item for item in items if here not in item.path.parents]


def pytest_sessionstart(session: pytest.Session) -> None:
    if not _is_worker(session.config):
        _run_start.append(RunStart.now())


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: object) -> None:
    """(pytest-xdist, controlling process) A worker is done: keep what its session found."""
    output = getattr(node, "workeroutput", {}).get("autoroll_e2e")
    if output is not None:
        _workers[str(node.gateway.id)] = WorkerReport.from_output(output)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if _is_worker(session.config):
        session.config.workeroutput["autoroll_e2e"] = _report.as_output()  # type: ignore[attr-defined]
    else:
        for worker, report in _workers.items():
            _node_problems.extend(f"{worker}: {p}" for p in report.problems)
            _node_notes.extend(f"{worker}: {n}" for n in report.notes)
            _timings.update({f"{worker} {k}": v for k, v in report.timings.items()})
        if _run_start:
            ours = {r.pid for r in _workers.values()}
            _node_problems.extend(
                f"the whole run left: {p}" for p in whole_run_settled(_run_start[0], ours=ours)
            )
    if _node_problems and exitstatus == 0:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    for problem in _node_problems:
        terminalreporter.write_line(f"e2e node teardown: {problem}", red=True)
    for note in _node_notes:
        terminalreporter.write_line(f"e2e node: {note}", yellow=True)
    if _timings:
        parts = ", ".join(f"{k} {v:.1f}s" for k, v in _timings.items())
        terminalreporter.write_line(f"e2e control plane (seconds since launch): {parts}")
