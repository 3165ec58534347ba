"""The real node (kubelet + containerd + runc): it runs real containers, reports what a user's
cluster reports, stays sealed off from the machine, and leaves nothing behind.

These use the session's node, except the teardown test, which starts and stops a node of its
own; the pure parts (configs, cgroup mount parsing, the leftovers diff) are
``test_node_parts.py``.
"""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.controlplane import ControlPlane
from tests.e2e.helpers import apps_api, core_api, deployment
from tests.e2e.images import APP_PORT, push_app, push_index
from tests.e2e.node import (
    Node,
    node_processes,
    node_traces,
    processes_after_teardown,
)
from tests.e2e.node_host import HostState, leftovers, reap_orphans
from tests.e2e.node_start import running_node_with_registry
from tests.e2e.service_ask import ASK
from tests.support.registry import ImagePusher, RegistryServer
from tests.support.wait import eventually

pytestmark = pytest.mark.e2e


# --- the session's node -------------------------------------------------------------------


def _pods(kube: Any, namespace: str, selector: str) -> list[dict[str, Any]]:
    listed = core_api(kube).list_namespaced_pod(
        namespace, label_selector=selector, _preload_content=False
    )
    items: list[dict[str, Any]] = json.loads(listed.data)["items"]
    return items


def _ready_pods(kube: Any, namespace: str, app: str, count: int) -> list[dict[str, Any]]:
    def ready() -> list[dict[str, Any]]:
        pods = [
            p
            for p in _pods(kube, namespace, f"app={app}")
            if "deletionTimestamp" not in p["metadata"]
        ]
        states = [(p["metadata"]["name"], p["status"].get("phase")) for p in pods]
        assert len(pods) == count, states
        for p in pods:
            conditions = {c["type"]: c["status"] for c in p["status"].get("conditions", [])}
            assert conditions.get("Ready") == "True", states
        return pods

    return eventually(ready, timeout=90, interval=0.5, what=f"{count} Ready pods of {app}")


def _serving(
    kube: Any, namespace: str, app: str, reference: str, count: int
) -> list[dict[str, Any]]:
    """Deployment ``app`` of ``count`` pods serving HTTP from ``reference``; its pods, once
    every one is Ready."""
    apps_api(kube).create_namespaced_deployment(
        namespace, deployment(app, reference, replicas=count, http_port=APP_PORT)
    )
    return _ready_pods(kube, namespace, app, count)


def test_a_deployment_runs_real_containers_that_report_the_pulled_manifest_digest(
    node: Node, kube: Any, namespace: str, docker_registry: RegistryServer
) -> None:
    image = push_app(ImagePusher(docker_registry), f"e2e/{namespace}", build="one")
    pods = _serving(kube, namespace, "web", image.reference, 2)
    for pod in pods:
        assert pod["spec"]["nodeName"] == node.name
        status = pod["status"]["containerStatuses"][0]
        assert status["imageID"] == image.pinned, "containerd reports host/repo@manifest digest"
        assert status["containerID"].startswith("containerd://")
        assert pod["status"]["podIP"].startswith("198.18.0.")


def test_a_multi_arch_index_reports_the_index_digest(
    node: Node, kube: Any, namespace: str, docker_registry: RegistryServer
) -> None:
    index = push_index(ImagePusher(docker_registry), f"e2e/{namespace}", build="multi")
    (pod,) = _serving(kube, namespace, "multi", index.reference, 1)
    assert pod["status"]["containerStatuses"][0]["imageID"] == index.pinned


def test_the_node_has_no_route_out_of_its_network_namespace(node: Node) -> None:
    routes = node.run("ip", "-4", "route", "show", "table", "all")
    assert routes.returncode == 0, routes.stderr
    lines = [line for line in routes.stdout.splitlines() if line.strip()]
    assert not [line for line in lines if line.startswith("default")], lines
    links = node.run("ip", "-o", "link", "show").stdout
    names = {line.split(":")[1].strip().split("@")[0] for line in links.splitlines()}
    assert names <= {"lo", "node0", "node0-peer", "cni0"} | {
        n for n in names if n.startswith("veth")
    }
    # Every veth's peer is in this namespace or a pod's: none is in the host's.
    host_links = Path("/sys/class/net")
    assert not {"node0", "node0-peer", "cni0"} & {p.name for p in host_links.iterdir()}


def test_nothing_on_the_node_has_a_nameserver_to_ask(node: Node) -> None:
    resolv = node.run("cat", "/etc/resolv.conf")
    lines = resolv.stdout.splitlines()
    assert resolv.returncode == 0 and not [n for n in lines if n.startswith("nameserver")], lines


def _run_to_completion(
    kube: Any, node: Node, namespace: str, name: str, *, image: str, argv: list[str]
) -> tuple[str, str]:
    """Run ``argv`` in a pod of ``image`` (``command`` replaces the image's entrypoint) until
    it ends; its phase and what it printed (the kubelet's log file, read on the node)."""
    body = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {
            "restartPolicy": "Never",
            "containers": [{"name": "c", "image": image, "command": argv}],
        },
    }
    core_api(kube).create_namespaced_pod(namespace, body)

    def ended() -> str:
        read = core_api(kube).read_namespaced_pod(name, namespace, _preload_content=False)
        phase = str(json.loads(read.data)["status"].get("phase"))
        assert phase in {"Succeeded", "Failed"}, phase
        return phase

    phase = eventually(ended, timeout=90, interval=0.5, what=f"pod {name} to end")
    printed = "".join(f.read_text() for f in node.pod_logs.glob(f"{namespace}_{name}_*/c/*.log"))
    return phase, printed


def test_a_pod_reaches_a_service_by_its_name_through_coredns_and_kube_proxy(
    node: Node, kube: Any, namespace: str, docker_registry: RegistryServer, controller_image: str
) -> None:
    image = push_app(ImagePusher(docker_registry), f"e2e/{namespace}", build="served")
    apps_api(kube).create_namespaced_deployment(
        namespace, deployment("web", image.reference, replicas=1, http_port=APP_PORT)
    )
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "web"},
        "spec": {"selector": {"app": "web"}, "ports": [{"port": 80, "targetPort": APP_PORT}]},
    }
    core_api(kube).create_namespaced_service(namespace, service)
    _ready_pods(kube, namespace, "web", 1)
    # By the Service's name (the kubelet's search path completes it) and its ClusterIP port,
    # which only kube-proxy's rules turn into the pod's 8080.
    asked = ["python3", "-c", ASK, f"http://web.{namespace}.svc/"]
    phase, printed = _run_to_completion(
        kube, node, namespace, "asks-web", image=controller_image, argv=asked
    )
    assert phase == "Succeeded", printed
    # A name outside the cluster has no answer: CoreDNS forwards nothing off the node.
    outside = ["python3", "-c", ASK, "http://example.com/"]
    phase, printed = _run_to_completion(
        kube, node, namespace, "asks-out", image=controller_image, argv=outside
    )
    # (CoreDNS refuses a zone it does not serve: glibc's "Temporary failure in name resolution")
    assert phase == "Failed" and "in name resolution" in printed, printed


def test_host_paths_of_the_node_exist_only_inside_its_mount_namespace(node: Node) -> None:
    assert node.run("test", "-d", "/var/lib/kubelet/pods").returncode == 0
    assert node.run("test", "-S", "/run/containerd/containerd.sock").returncode == 0
    for path in ("/var/lib/kubelet", "/run/containerd", "/var/lib/containerd"):
        assert not Path(path).exists(), f"{path} exists on the machine"


# --- a node of its own: teardown ----------------------------------------------------------


def test_a_node_with_running_pods_leaves_nothing_behind(
    control_plane: ControlPlane,
    kube: Any,
    namespace: str,
    tmp_path: Path,
    docker_registry: RegistryServer,
) -> None:
    from tests.e2e.conftest import node_binaries

    binaries = node_binaries()
    image = push_app(ImagePusher(docker_registry), f"e2e/{namespace}", build="teardown")
    name = "autoroll-node-teardown"
    before = HostState.now()
    with running_node_with_registry(binaries, control_plane, docker_registry, name=name) as own:
        manifest = deployment("t", image.reference, replicas=2, http_port=APP_PORT)
        manifest["spec"]["template"]["spec"]["nodeName"] = own.name  # not the binder's node
        apps_api(kube).create_namespaced_deployment(namespace, manifest)
        _ready_pods(kube, namespace, "t", 2)
        during = HostState.now()
        assert during.cgroups - before.cgroups, "the node's cgroups exist while it runs"
        assert len(node_processes(own)) >= 4, "kubelet, containerd, shims and containers run"
    assert processes_after_teardown(own) == []
    assert node_traces(own) == []
    assert not own.workdir.exists()
    assert leftovers(before, HostState.now()) == []


def _nspid_levels(pid: str) -> int:
    """How many PID namespaces ``pid`` is seen in (1: only the host's)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("NSpid:"):
            return len(line.split()) - 1
    return 1


def test_when_the_runner_dies_every_process_of_the_node_dies_with_it_and_the_next_reaps_the_rest(
    control_plane: ControlPlane,
    kube: Any,
    namespace: str,
    docker_registry: RegistryServer,
) -> None:
    """containerd and the kubelet die with the runner (``PR_SET_PDEATHSIG``), and so does
    the holder, ``unshare --kill-child``: its child is PID 1 of the PID namespace every
    process of the node lives in (shims and containers included), and the kernel kills a
    namespace whose PID 1 dies. Killing the holder is what the runner's death does to it."""
    from tests.e2e.conftest import node_binaries

    binaries = node_binaries()
    image = push_app(ImagePusher(docker_registry), f"e2e/{namespace}", build="runner dies")
    orphan = "autoroll-node-orphan"
    with running_node_with_registry(binaries, control_plane, docker_registry, name=orphan) as own:
        manifest = deployment("o", image.reference, replicas=1, http_port=APP_PORT)
        manifest["spec"]["template"]["spec"]["nodeName"] = own.name
        apps_api(kube).create_namespaced_deployment(namespace, manifest)
        _ready_pods(kube, namespace, "o", 1)
        running = node_processes(own)
        assert any("containerd-shim" in p for p in running), running
        unshare = int(Path(f"/proc/{own.holder_pid}/stat").read_text().split()[3])
        # In the host's PID namespace only the wrappers (unshare; nsenter, which forks into
        # the namespace); everything else (containerd, kubelet, shims, each container in a
        # namespace of its own) in the node's or one nested in it: NSpid has a level more.
        outside = sorted(
            " ".join(p.split(" ", 2)[:2]) for p in running if _nspid_levels(p.split(" ", 1)[0]) == 1
        )
        assert all("(unshare," in p or "(nsenter," in p for p in outside), outside
        assert len(running) - len(outside) >= 5, running  # 2 components, shims, containers

        os.kill(unshare, signal.SIGKILL)  # as PR_SET_PDEATHSIG does when the runner dies

        gone = eventually(
            lambda: _none_left(own), timeout=30, what="every process of the node gone"
        )
        assert gone == []
        # What a killed runner leaves (its cgroups, its directory) goes at the next start.
        # (the owner file names a process that is gone: this pid with another start time)
        (own.workdir / "owner").write_text(f"{os.getpid()}:0 {own.cgroup}\n")
        reaped = reap_orphans()
        assert [r for r in reaped if str(own.workdir) in r], reaped
        assert node_traces(own) == []


def _none_left(node: Node) -> list[str]:
    """Node processes still there, but for dead children of this runner that it has not
    waited for yet (the wrappers it started: zombies, reaped by the node's teardown)."""
    ours = f"Z (zombie), parent {os.getpid()})"
    left = [p for p in node_processes(node) if ours not in p]
    assert left == [], left
    return left
