"""A real node for the e2e tier: kubelet + containerd + runc, sealed off from the machine.

What a user's cluster has and the simulated kubelet only imitates: containerd pulls the image
and reports its ``imageID``, runc runs it, the kubelet probes readiness, restarts crashing
containers and kills deleted pods. The node is built by ``scripts/tools.sh node``.

How it is kept off the machine (a test run must leave nothing behind):

- **Namespaces.** A holder process (``unshare --net --mount``) owns a network namespace and a
  private mount namespace; containerd and the kubelet are started inside both with
  ``nsenter``. In the mount namespace ``/var`` and ``/run`` are bind mounts of the node's own
  directory, so ``/var/lib/kubelet``, ``/var/lib/containerd``, ``/var/log/pods``,
  ``/var/log/containers``, ``/run/containerd``, ``/run/nri`` and every container mount exist
  only there and vanish with the namespace. The kubelet's volume plugin directory is moved
  under ``/var`` too (no ``/usr/libexec/kubernetes``).
- **Network.** The namespace has ``lo`` and a veth pair whose both ends stay inside it: one end
  carries the node IP (the kubelet refuses a loopback one). Pods get addresses on a CNI bridge
  inside the same namespace. There is no default route and no interface leading out, so
  nothing on the node can send a packet anywhere else; the Service CIDR is routed onto
  ``node0``, where kube-proxy's rules turn a ClusterIP into an endpoint (node processes, and
  the API server's egress proxy, ``egress.py``, reach Services as a node's do). The control
  plane and registries (on the host's 127.0.0.1) are reached through
  ``loopback.LoopbackBridge``, which makes each host port answer on the node's 127.0.0.1
  too: the same ``127.0.0.1:<port>`` strings work on both sides, and the only traffic is
  loopback.
- **cgroups.** The kubelet uses the cgroupfs driver under a cgroup root of this node's own
  (``/autoroll-node-<id>`` in every hierarchy); the holder, containerd, its shims and the
  kubelet live in ``<root>/runtime``. Teardown thaws, then kills every process in that tree
  and removes it.
- **PID namespace.** The holder is ``unshare --pid --kill-child``; containerd and the kubelet
  enter its PID namespace too, and with them every shim and container. The holder,
  containerd and the kubelet die with the test runner (``PR_SET_PDEATHSIG``); the kernel
  kills the rest of the namespace when its PID 1 (the holder's script) dies. What a killed
  runner still leaves (cgroups, the directory) is reaped by the next node to start
  (``reap_orphans``: only nodes whose ``owner`` file names a runner that is gone).

Host limits handled here (from a trial on these machines): no ``CAP_SYS_RESOURCE``, so
containerd has ``restrict_oom_score_adj`` and the kubelet ``oomScoreAdj: 0``; cgroup v1, which
kubelet 1.37 refuses unless ``failCgroupV1: false``; swap checks off.

Scheduling: there is no kube-scheduler. ``Binder`` binds every unscheduled pod to this node
(one node: the only decision a scheduler could make), except in namespaces labelled
``e2e.autoroll/node=simulated``, which belong to the simulated kubelet. The node keeps the
``node.kubernetes.io/not-ready`` taint the kubelet registers it with, as nothing runs the node
lifecycle controller; a taint only steers a scheduler, and the kubelet admits bound pods.

Services: with ``kube_proxy`` and ``coredns`` among its binaries the node also runs
kube-proxy and CoreDNS (``node_network.py``), and the kubelet points pods at that CoreDNS: a
pod reaches a Service by its name and ClusterIP, as ``helm test``'s pod does.

Registries: ``trust_registry`` bridges a registry's port and writes containerd's
``hosts.toml`` for it (plain HTTP, its Basic credentials as a header), so pods pull without
an imagePullSecret, the way node-level registry credentials work.

Errors::

    NodeError     a component could not start, died, or the node was not Ready in time; the
                  message names it and carries the last lines of its log

The harness, module by module: this one has the ``Node`` a test holds and what of a stopped
node may still be around; ``node_start.py`` starts and tears down a node (``running_node``);
``node_config.py`` renders its configs; ``node_process.py`` has its processes and cgroups;
``node_api.py`` its certificates, RBAC and Node object; ``node_host.py`` what a run must not
leave on the machine and the reaping of dead runners' nodes; ``node_binder.py`` the
``Binder``; ``node_network.py`` kube-proxy and CoreDNS.
"""

from __future__ import annotations

import shutil
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from tests.e2e.loopback import LoopbackBridge
from tests.e2e.node_config import hosts_toml
from tests.e2e.node_process import CgroupTree, Process

NODE_NAME = "autoroll-node"
# Addresses inside the node's own network namespace only (RFC 2544 benchmarking ranges, so
# they are nobody's real network); no route leads from there to anywhere else.
NODE_IP = "198.19.0.10"
POD_SUBNET = "198.18.0.0/24"
# Where Debian (and the CNI project's own packaging) put the plugins.
CNI_DIRS = ("/usr/lib/cni", "/opt/cni/bin")


class NodeError(RuntimeError):
    """The node could not start or was not Ready in time (message has the log tail)."""


@dataclass(frozen=True)
class NodeBinaries:
    """What ``scripts/tools.sh node`` provides."""

    kubelet: str
    containerd: str
    shim: str
    runc: str
    cni_dir: str
    #: Service routing and cluster DNS (``node_network.py``); without them a pod reaches no
    #: Service and resolves no name (the demo needs neither).
    kube_proxy: str | None = None
    coredns: str | None = None


# --- the node -------------------------------------------------------------------------


@dataclass
class Node:
    """A running node: its name and IP, the bridge to its loopback, its logs."""

    name: str
    ip: str
    workdir: Path
    holder_pid: int
    cgroup: str  # the cgroup root's name, in every hierarchy
    bridge: LoopbackBridge
    logs: dict[str, Path]
    sandbox_image: str
    timings: dict[str, float] = field(default_factory=dict)
    _kubelet: Process | None = None
    _ready: Callable[[], bool] | None = None
    _trusted: set[str] = field(default_factory=set)
    #: What ``reap_orphans`` removed when this node started (nodes of dead runners).
    reaped: list[str] = field(default_factory=list)

    @property
    def netns(self) -> str:
        return f"/proc/{self.holder_pid}/ns/net"

    @property
    def pod_logs(self) -> Path:
        """Where the kubelet writes container logs, seen from the host (its mount namespace's
        ``/var/log/pods``: ``<namespace>_<pod>_<uid>/<container>/<n>.log``)."""
        return Path(f"/proc/{self.holder_pid}/root/var/log/pods")

    def enter(self, *argv: str) -> list[str]:
        """``argv`` prefixed so it runs in the node's network, mount and PID namespaces."""
        return ["nsenter", "-t", str(self.holder_pid), "-n", "-m", "-p", "--", *argv]

    def run(self, *argv: str, timeout: float = 30.0) -> subprocess.CompletedProcess[str]:
        """Run a command on the node (its namespaces), e.g. ``ip route``; output captured."""
        return subprocess.run(
            self.enter(*argv), capture_output=True, text=True, timeout=timeout, check=False
        )

    def trust_registry(
        self, host: str, authorization: str | None, *, ca_file: Path | None = None
    ) -> None:
        """Let the node pull from the registry at ``host`` (``127.0.0.1:<port>``); over HTTPS
        verified with ``ca_file`` when given (copied beside the node's hosts.toml). With
        ``authorization`` None the node has no credentials of its own for it: a pull works
        only with the pod's pull secrets, which the kubelet passes to containerd."""
        port = int(host.rpartition(":")[2])
        self.bridge.import_port(port)
        certs = self.workdir / "etc" / "certs.d" / host
        certs.mkdir(parents=True, exist_ok=True)
        ca = None
        if ca_file is not None:
            ca = certs / "ca.crt"
            ca.write_bytes(ca_file.read_bytes())
        (certs / "hosts.toml").write_text(hosts_toml(host=host, authorization=authorization, ca=ca))
        self._trusted.add(host)

    def mirror(self, upstream: str, host: str, authorization: str) -> None:
        """Pull ``upstream``'s images (``docker.io``, say) from the registry at ``host``, as an
        air-gapped cluster's containerd mirrors them: nothing is asked of ``upstream``."""
        port = int(host.rpartition(":")[2])
        self.bridge.import_port(port)
        certs = self.workdir / "etc" / "certs.d" / upstream
        certs.mkdir(parents=True, exist_ok=True)
        (certs / "hosts.toml").write_text(hosts_toml(host=host, authorization=authorization))

    def expose(self, port: int) -> None:
        """Make the node's 127.0.0.1:``port`` (a host-network pod's) answer on the host's."""
        self.bridge.expose(port)

    def restart_kubelet(self, timeout: float = 60.0) -> None:
        """Stop the kubelet process and start it again; return once the Node is Ready."""
        assert self._kubelet is not None and self._ready is not None
        self._kubelet.stop()
        self._kubelet.start()
        deadline = time.monotonic() + timeout
        while not self._ready():
            if not self._kubelet.running():
                raise NodeError(f"kubelet exited after a restart:\n{self._kubelet.tail()}")
            if time.monotonic() > deadline:
                raise NodeError(f"node not Ready {timeout}s after a kubelet restart")
            time.sleep(0.2)


def node_traces(node: Node) -> list[str]:
    """What of ``node`` is still on the machine besides processes: its cgroup in any
    hierarchy, its directory (when it was a temporary one)."""
    found = [f"cgroup {p}" for p in CgroupTree(node.cgroup).existing()]
    if node.workdir.name.startswith("autoroll-node-") and node.workdir.exists():
        found.append(f"directory {node.workdir}")
    return found


def node_processes(node: Node) -> list[str]:
    """Processes of ``node`` still on the machine: a command line naming its directory
    (containerd, kubelet) or membership of its cgroups (shims, containers)."""
    found: list[str] = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            argv = (proc / "cmdline").read_bytes().split(b"\0")
            cgroups = (proc / "cgroup").read_text()
            status = dict(
                line.split(":\t", 1) for line in (proc / "status").read_text().splitlines()
            )
        except (OSError, ValueError):
            continue
        text = " ".join(a.decode(errors="replace") for a in argv if a)
        ours = f"/{node.cgroup}/" in cgroups or f"/{node.cgroup}\n" in cgroups
        if str(node.workdir) in text or ours:
            state, ppid = status.get("State", "?"), status.get("PPid", "?")
            name = status.get("Name", "?")
            found.append(f"{proc.name} ({name}, {state}, parent {ppid}): {text}")
    return found


def processes_after_teardown(node: Node, timeout: float = 15.0) -> list[str]:
    """``node_processes`` once the killed ones have been reaped: the shims and containers
    were reparented to PID 1, which reaps its zombies in its own time."""
    deadline = time.monotonic() + timeout
    while (found := node_processes(node)) and time.monotonic() < deadline:
        time.sleep(0.2)
    return found


def binaries_from_path() -> NodeBinaries | None:
    """The node's binaries from PATH (``source .tools/env``), or None if any is missing."""
    found = {
        n: shutil.which(n) for n in ("kubelet", "containerd", "containerd-shim-runc-v2", "runc")
    }
    cni = next((d for d in CNI_DIRS if Path(d, "bridge").exists()), None)
    if any(v is None for v in found.values()) or cni is None:
        return None
    return NodeBinaries(
        kubelet=str(found["kubelet"]),
        containerd=str(found["containerd"]),
        shim=str(found["containerd-shim-runc-v2"]),
        runc=str(found["runc"]),
        cni_dir=cni,
    )
