"""Starting and stopping the real node: ``running_node`` sets up the holder's namespaces,
writes the configs, starts containerd and the kubelet (and kube-proxy and CoreDNS when they
are built), waits until the Node is Ready, and afterwards tears all of it down.

How the node is sealed off from the machine, and why: ``node.py``'s docstring. Apart from
the ``Node`` class, which is what tests hold; this is what brings one up and down.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path

import yaml

from tests.e2e.controlplane import ControlPlane
from tests.e2e.controlplane_config import SERVICE_CIDR
from tests.e2e.images import push_pause
from tests.e2e.loopback import LoopbackBridge
from tests.e2e.node import NODE_IP, NODE_NAME, POD_SUBNET, Node, NodeBinaries, NodeError
from tests.e2e.node_api import (
    apply_cluster_objects,
    delete_node,
    grant_node_role,
    node_is_ready,
    write_kubeconfig,
)
from tests.e2e.node_config import cni_config, containerd_config, kubelet_config
from tests.e2e.node_host import OWNER_FILE, _owner_tag, reap_orphans
from tests.e2e.node_network import (
    COREDNS_READY,
    COREDNS_USER,
    KUBE_PROXY_HEALTHZ,
    KUBE_PROXY_USER,
    coredns_rbac,
    corefile,
    http_probe_script,
    kube_proxy_config,
)
from tests.e2e.node_process import CgroupTree, Process, tied_to_us
from tests.support.registry import ImagePusher, RegistryServer

SYSTEM_PATH = "/usr/sbin:/usr/bin:/sbin:/bin"


def _only_child(pid: int) -> int:
    """The one child of ``pid`` (``unshare --fork``'s: PID 1 of the node's PID namespace)."""
    children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    if len(children) != 1:
        raise NodeError(f"the holder {pid} has children {children}, expected one")
    return int(children[0])


_HOLDER_SCRIPT = """set -e
mount --make-rprivate /
mount --bind "$NODE_DIR/var" /var
mount --bind "$NODE_DIR/run" /run
mount --bind "$NODE_DIR/etc/resolv.conf" /etc/resolv.conf
ip link set lo up
ip link add node0 type veth peer name node0-peer
ip addr add "$NODE_IP/32" dev node0
ip link set node0 up
ip link set node0-peer up
ip route add "$SERVICE_CIDR" dev node0
echo ready
exec cat >/dev/null
"""


@contextlib.contextmanager
def running_node(
    binaries: NodeBinaries,
    plane: ControlPlane,
    *,
    sandbox_image: str,
    registry_host: str,
    registry_authorization: str,
    workdir: Path | None = None,
    name: str = NODE_NAME,
    timeout: float = 120.0,
    keep_workdir: bool = False,
) -> Iterator[Node]:
    """Start the node (holder, containerd, kubelet), wait until its Node is Ready, yield it;
    afterwards stop everything and remove every trace (``leftovers`` must then be empty).

    ``sandbox_image`` (the pause image) must already be pushed to the registry at
    ``registry_host``, which the node trusts from the start.
    """
    started = time.monotonic()
    made_tmp = workdir is None
    root = Path(tempfile.mkdtemp(prefix="autoroll-node-")) if workdir is None else workdir
    for sub in ("var", "run", "etc/cni", "etc/certs.d", "pki", "logs"):
        (root / sub).mkdir(parents=True, exist_ok=True)
    reaped = reap_orphans()
    cgroups = CgroupTree(f"autoroll-node-{uuid.uuid4().hex[:8]}")
    (root / OWNER_FILE).write_text(f"{_owner_tag(os.getpid())} {cgroups.name}\n")
    holder: subprocess.Popen[bytes] | None = None
    bridge: LoopbackBridge | None = None
    processes: list[Process] = []
    kube = plane.api_client()
    logs = {
        n: root / "logs" / f"{n}.log"
        for n in ("holder", "containerd", "kubelet", "kube-proxy", "coredns")
    }
    timings: dict[str, float] = {}
    try:
        # No nameserver, for containerd and the kubelet (over /etc/resolv.conf) and for pods
        # (the kubelet's resolvConf): nothing on the node even tries to resolve a name.
        resolv = root / "etc" / "resolv.conf"
        resolv.write_text("# no nameserver: nothing on the node resolves names\n")
        cgroups.create("runtime")
        env = {
            "PATH": ":".join(
                [str(Path(binaries.shim).parent), str(Path(binaries.runc).parent), SYSTEM_PATH]
            ),
            "NODE_DIR": str(root),
            "NODE_IP": NODE_IP,
            # Services are routed from the node itself too (kube-proxy rewrites the address
            # on the way out): the API server's egress proxy dials ClusterIPs from here.
            "SERVICE_CIDR": SERVICE_CIDR,
            "HOME": "/root",
        }
        with logs["holder"].open("ab") as holder_log:
            holder = subprocess.Popen(
                [
                    "unshare",
                    "--net",
                    "--mount",
                    "--pid",
                    "--kill-child=SIGKILL",  # implies --fork: the script is PID 1 inside
                    "--mount-proc",
                    "--propagation",
                    "private",
                    "sh",
                    "-c",
                    _HOLDER_SCRIPT,
                ],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=holder_log,
                env=env,
                start_new_session=True,
                preexec_fn=tied_to_us(cgroups.procs_files("runtime")),  # noqa: PLW1509
            )
        assert holder.stdout is not None
        if holder.stdout.readline().strip() != b"ready":
            holder.wait(10)
            raise NodeError(
                f"the node's namespaces could not be set up:\n{logs['holder'].read_text()}"
            )
        holder_pid = _only_child(holder.pid)
        timings["namespaces"] = time.monotonic() - started
        bridge = LoopbackBridge(f"/proc/{holder_pid}/ns/net")
        api_port = int(plane.server.rpartition(":")[2])
        bridge.import_port(api_port)

        node = Node(
            name=name,
            ip=NODE_IP,
            workdir=root,
            holder_pid=holder_pid,
            cgroup=cgroups.name,
            bridge=bridge,
            logs=logs,
            sandbox_image=sandbox_image,
            timings=timings,
            reaped=reaped,
        )
        node.trust_registry(registry_host, registry_authorization)
        (root / "etc" / "cni" / "10-autoroll-e2e.conflist").write_text(
            json.dumps(
                cni_config(
                    subnet=POD_SUBNET,
                    routes=[SERVICE_CIDR, f"{NODE_IP}/32"] if binaries.kube_proxy else [],
                ),
                indent=2,
            )
        )
        (root / "etc" / "containerd.toml").write_text(
            containerd_config(
                shim=binaries.shim,
                runc=binaries.runc,
                cni_bin=binaries.cni_dir,
                cni_conf=root / "etc" / "cni",
                certs=root / "etc" / "certs.d",
                sandbox_image=sandbox_image,
            )
        )
        (root / "etc" / "kubelet.yaml").write_text(
            yaml.safe_dump(
                kubelet_config(
                    cgroup_root=f"/{cgroups.name}",
                    node_ip=NODE_IP,
                    resolv_conf=resolv,
                    cluster_dns=NODE_IP if binaries.coredns else None,
                )
            )
        )
        write_kubeconfig(
            root, plane, name="kubelet", user=f"system:node:{name}", group="system:nodes"
        )
        grant_node_role(kube)

        containerd = Process(
            "containerd",
            node.enter(binaries.containerd, "--config", str(root / "etc" / "containerd.toml")),
            logs["containerd"],
            env,
            cgroups.procs_files("runtime"),
        )
        processes.append(containerd)
        containerd.start()
        deadline = started + timeout

        def sock_ready() -> bool:
            return node.run("test", "-S", "/run/containerd/containerd.sock").returncode == 0

        _wait("containerd's socket", sock_ready, watch=processes, deadline=deadline)
        timings["containerd"] = time.monotonic() - started

        kubelet = Process(
            "kubelet",
            node.enter(
                binaries.kubelet,
                f"--config={root / 'etc' / 'kubelet.yaml'}",
                f"--kubeconfig={root / 'etc' / 'kubelet.kubeconfig'}",
                f"--hostname-override={name}",
                f"--node-ip={NODE_IP}",
                "--v=1",
            ),
            logs["kubelet"],
            env,
            cgroups.procs_files("runtime"),
        )
        processes.append(kubelet)
        kubelet.start()

        def ready() -> bool:
            return node_is_ready(kube, name)

        _wait(f"Node {name} Ready", ready, watch=processes, deadline=deadline)
        timings["kubelet"] = time.monotonic() - started
        if binaries.kube_proxy and binaries.coredns:
            processes += _start_cluster_network(
                node, plane, binaries, env, cgroups, watch=processes, deadline=deadline
            )
            timings["network"] = time.monotonic() - started
        node._kubelet = kubelet
        node._ready = ready
        yield node
    finally:
        stop_started = time.monotonic()
        for process in reversed(processes):
            process.stop()
        survivors = cgroups.kill_all()
        if holder is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                holder.wait(10)
        if bridge is not None:
            bridge.close()
        stuck = cgroups.remove()
        with contextlib.suppress(Exception):
            delete_node(kube, name)
        timings["stop"] = time.monotonic() - stop_started
        if made_tmp and not keep_workdir:
            shutil.rmtree(root, ignore_errors=True)
        elif not keep_workdir:
            for sub in ("var", "run"):
                shutil.rmtree(root / sub, ignore_errors=True)
        if survivors or stuck:
            raise NodeError(f"node teardown left processes {sorted(survivors)} / cgroups {stuck}")


def running_node_with_registry(
    binaries: NodeBinaries,
    plane: ControlPlane,
    registry: RegistryServer,
    *,
    workdir: Path | None = None,
    name: str = NODE_NAME,
) -> contextlib.AbstractContextManager[Node]:
    """``running_node`` trusting ``registry``, with the pause image pushed there (at once,
    not on entry) as its sandbox image."""
    pause = push_pause(ImagePusher(registry))
    return running_node(
        binaries,
        plane,
        sandbox_image=pause.reference,
        registry_host=registry.host,
        registry_authorization=registry.authorization,
        workdir=workdir,
        name=name,
    )


def _start_cluster_network(
    node: Node,
    plane: ControlPlane,
    binaries: NodeBinaries,
    env: Mapping[str, str],
    cgroups: CgroupTree,
    *,
    watch: Sequence[Process],
    deadline: float,
) -> list[Process]:
    """Start kube-proxy and CoreDNS on the node (``node_network.py``); return once kube-proxy
    has synced its rules and CoreDNS its view of the Services."""
    assert binaries.kube_proxy is not None and binaries.coredns is not None
    root = node.workdir
    apply_cluster_objects(plane.api_client(), coredns_rbac())
    proxy_kubeconfig = write_kubeconfig(
        root, plane, name="kube-proxy", user=KUBE_PROXY_USER, group=None
    )
    dns_kubeconfig = write_kubeconfig(root, plane, name="coredns", user=COREDNS_USER, group=None)
    proxy_config = root / "etc" / "kube-proxy.yaml"
    proxy_config.write_text(
        yaml.safe_dump(
            kube_proxy_config(
                kubeconfig=proxy_kubeconfig, node_name=node.name, cluster_cidr=POD_SUBNET
            )
        )
    )
    dns_config = root / "etc" / "Corefile"
    dns_config.write_text(corefile(bind=node.ip, kubeconfig=dns_kubeconfig))
    started = [
        Process(
            "kube-proxy",
            node.enter(binaries.kube_proxy, f"--config={proxy_config}", "--v=1"),
            node.logs["kube-proxy"],
            env,
            cgroups.procs_files("runtime"),
        ),
        Process(
            "coredns",
            node.enter(binaries.coredns, "-conf", str(dns_config)),
            node.logs["coredns"],
            env,
            cgroups.procs_files("runtime"),
        ),
    ]
    for process in started:
        process.start()
    for what, url in (
        ("kube-proxy's rules", f"http://{KUBE_PROXY_HEALTHZ}/healthz"),
        ("CoreDNS ready", f"http://{COREDNS_READY}/ready"),
    ):
        probe = http_probe_script(url)

        def answers(probe: str = probe) -> bool:
            return node.run(sys.executable, "-c", probe).returncode == 0

        _wait(what, answers, watch=[*watch, *started], deadline=deadline)
    return started


def _wait(
    what: str, ready: Callable[[], bool], *, watch: Sequence[Process], deadline: float
) -> None:
    while True:
        for process in watch:
            if not process.running():
                raise NodeError(
                    f"{process.name} exited while the node started; last lines of "
                    f"{process.log}:\n{process.tail()}"
                )
        if ready():
            return
        if time.monotonic() > deadline:
            tails = "\n".join(f"--- {p.name} ({p.log}):\n{p.tail()}" for p in watch)
            raise NodeError(f"timed out waiting for {what}\n{tails}")
        time.sleep(0.2)
