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
  plane and registries (on the host's 127.0.0.1) are reached through ``loopback.LoopbackBridge``,
  which makes each host port answer on the node's 127.0.0.1 too: the same ``127.0.0.1:<port>``
  strings work on both sides, and the only traffic is loopback.
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
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from tests.e2e.controlplane import ControlPlane
from tests.e2e.controlplane_config import SERVICE_CIDR, kubeconfig_document
from tests.e2e.loopback import LoopbackBridge
from tests.e2e.node_network import (
    COREDNS_READY,
    COREDNS_USER,
    KUBE_PROXY_HEALTHZ,
    KUBE_PROXY_USER,
    cluster_role_binding,
    coredns_rbac,
    corefile,
    http_probe_script,
    kube_proxy_config,
)

NODE_NAME = "autoroll-node"
# Addresses inside the node's own network namespace only (RFC 2544 benchmarking ranges, so
# they are nobody's real network); no route leads from there to anywhere else.
NODE_IP = "198.19.0.10"
POD_SUBNET = "198.18.0.0/24"
# Where Debian (and the CNI project's own packaging) put the plugins.
CNI_DIRS = ("/usr/lib/cni", "/opt/cni/bin")
SIMULATED_LABEL = "e2e.autoroll/node"  # =simulated: the simulated kubelet's namespaces
LOG_TAIL_LINES = 30
# Host paths a kubelet or containerd writes when run plainly; none may exist because of us.
HOST_PATHS = (
    "/var/lib/kubelet",
    "/var/lib/containerd",
    "/var/lib/cni",
    "/var/log/pods",
    "/var/log/containers",
    "/run/containerd",
    "/run/nri",
    "/run/netns",
    "/usr/libexec/kubernetes",
    "/etc/cni/net.d",
    "/opt/cni",
)

SYSTEM_PATH = "/usr/sbin:/usr/bin:/sbin:/bin"
PR_SET_PDEATHSIG = 1
_libc = ctypes.CDLL(None, use_errno=True)


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


# --- pure configuration ---------------------------------------------------------------


def containerd_config(
    *, shim: str, runc: str, cni_bin: str, cni_conf: Path, certs: Path, sandbox_image: str
) -> str:
    """containerd 2.x config (version 3) for this node.

    Paths under /var and /run are the node's private ones. NRI and the snapshotters that need
    kernel features or cgo are off; runc is Debian's, started by the shim built with
    containerd (an older shim from a distribution package would not work with 2.x).
    """
    return f"""version = 3
root = "/var/lib/containerd"
state = "/run/containerd"
disabled_plugins = [
  "io.containerd.nri.v1.nri",
  "io.containerd.snapshotter.v1.btrfs",
  "io.containerd.snapshotter.v1.zfs",
  "io.containerd.snapshotter.v1.devmapper",
  "io.containerd.snapshotter.v1.erofs",
  "io.containerd.snapshotter.v1.blockfile",
  "io.containerd.tracing.processor.v1.otlp",
  "io.containerd.internal.v1.tracing",
]

[grpc]
  address = "/run/containerd/containerd.sock"

[ttrpc]
  address = "/run/containerd/containerd.sock.ttrpc"

[plugins.'io.containerd.cri.v1.images']
  snapshotter = "overlayfs"
  [plugins.'io.containerd.cri.v1.images'.pinned_images]
    sandbox = "{sandbox_image}"
  [plugins.'io.containerd.cri.v1.images'.registry]
    config_path = "{certs}"

[plugins.'io.containerd.cri.v1.runtime']
  # No CAP_SYS_RESOURCE on these hosts: runc could not lower oom_score_adj.
  restrict_oom_score_adj = true
  enable_selinux = false
  disable_apparmor = true
  cdi_spec_dirs = []
  [plugins.'io.containerd.cri.v1.runtime'.containerd]
    default_runtime_name = "runc"
    [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      runtime_path = "{shim}"
      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
        BinaryName = "{runc}"
        SystemdCgroup = false
  [plugins.'io.containerd.cri.v1.runtime'.cni]
    bin_dirs = ["{cni_bin}"]
    conf_dir = "{cni_conf}"

[plugins.'io.containerd.grpc.v1.cri']
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
"""


def cni_config(*, subnet: str, routes: Sequence[str] = ()) -> dict[str, Any]:
    """A bridge network inside the node's namespace: pods get an address, no way out.

    ``routes``: destinations pods reach through the bridge's gateway, the node (the Service
    range, which kube-proxy turns into endpoints, and the node IP, where CoreDNS answers); no
    default route, so a pod has no way even to try an address outside these."""
    return {
        "cniVersion": "1.0.0",
        "name": "autoroll-e2e",
        "plugins": [
            {
                "type": "bridge",
                "bridge": "cni0",
                "isGateway": True,
                "ipMasq": False,
                "hairpinMode": True,
                "ipam": {
                    "type": "host-local",
                    "ranges": [[{"subnet": subnet}]],
                    "routes": [{"dst": dst} for dst in routes],
                },
            }
        ],
    }


def kubelet_config(
    *, cgroup_root: str, node_ip: str, resolv_conf: Path, cluster_dns: str | None = None
) -> dict[str, Any]:
    """KubeletConfiguration for a sealed-off test node (see the module docstring for why);
    ``cluster_dns``: the nameserver of every ClusterFirst pod (the node's CoreDNS)."""
    config: dict[str, Any] = {
        "apiVersion": "kubelet.config.k8s.io/v1beta1",
        "kind": "KubeletConfiguration",
        "address": node_ip,
        "readOnlyPort": 0,
        "healthzBindAddress": "127.0.0.1",
        "healthzPort": 10248,
        "authentication": {
            "anonymous": {"enabled": False},
            "webhook": {"enabled": False},
            "x509": {},
        },
        "authorization": {"mode": "AlwaysAllow"},
        "cgroupDriver": "cgroupfs",
        "cgroupRoot": cgroup_root,
        "cgroupsPerQOS": True,
        "enforceNodeAllocatable": ["pods"],
        "failCgroupV1": False,
        "failSwapOn": False,
        "oomScoreAdj": 0,
        "containerRuntimeEndpoint": "unix:///run/containerd/containerd.sock",
        "resolvConf": str(resolv_conf),
        "clusterDomain": "cluster.local",
        "volumePluginDir": "/var/lib/kubelet/volume-plugins",
        "serializeImagePulls": False,
        # The host's disk is shared: never evict or garbage-collect images because of it.
        "evictionHard": {
            "memory.available": "50Mi",
            "nodefs.available": "1%",
            "imagefs.available": "1%",
            "nodefs.inodesFree": "1%",
        },
        "imageGCHighThresholdPercent": 100,
        "imageGCLowThresholdPercent": 99,
        "syncFrequency": "10s",
        "nodeStatusUpdateFrequency": "5s",
        "shutdownGracePeriod": "0s",
        "registerNode": True,
        "maxPods": 110,
    }
    if cluster_dns is not None:
        config["clusterDNS"] = [cluster_dns]
    return config


def hosts_toml(*, host: str, authorization: str | None, ca: Path | None = None) -> str:
    """containerd's ``hosts.toml`` for a registry with Basic credentials (None: none, so the
    node pulls only with what the kubelet hands containerd, the pod's pull secrets): plain
    HTTP, or HTTPS verified with the CA file ``ca`` (a private CA's, as a node is configured
    for it)."""
    url = f"https://{host}" if ca is not None else f"http://{host}"
    trust = f'\n  ca = "{ca}"' if ca is not None else ""
    header = (
        f'\n  [host."{url}".header]\n    Authorization = "{authorization}"'
        if authorization is not None
        else ""
    )
    return f"""server = "{url}"

[host."{url}"]
  capabilities = ["pull", "resolve"]{trust}{header}
"""


# --- cgroups --------------------------------------------------------------------------


def cgroup_mounts(mountinfo: str) -> list[Path]:
    """Mount points of every cgroup (v1) and cgroup2 hierarchy in a ``mountinfo`` text."""
    out: list[Path] = []
    for line in mountinfo.splitlines():
        left, _, right = line.partition(" - ")
        fstype = right.split(" ", 1)[0]
        if fstype in {"cgroup", "cgroup2"}:
            out.append(Path(left.split(" ")[4]))
    return out


class CgroupTree:
    """``/<name>`` in every cgroup hierarchy: created, joined, emptied and removed."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.roots = [m / name for m in cgroup_mounts(Path("/proc/self/mountinfo").read_text())]

    def create(self, child: str) -> None:
        for root in self.roots:
            for path in (root, root / child):
                path.mkdir(exist_ok=True)
                if (path / "cpuset.cpus").exists():  # cpuset: empty until copied from parent
                    for knob in ("cpuset.cpus", "cpuset.mems"):
                        (path / knob).write_text((path.parent / knob).read_text())

    def join(self, child: str, pid: int) -> None:
        for procs in self.procs_files(child):
            procs.write_text(str(pid))

    def procs_files(self, child: str) -> list[Path]:
        return [root / child / "cgroup.procs" for root in self.roots]

    def pids(self) -> set[int]:
        found: set[int] = set()
        for root in self.roots:
            for procs in root.rglob("cgroup.procs") if root.exists() else []:
                with contextlib.suppress(OSError):
                    found.update(int(p) for p in procs.read_text().split())
        return found

    def thaw(self) -> None:
        """Thaw every frozen cgroup of the tree (runc freezes a container's cgroup while it
        updates or kills it): a frozen process does not act on SIGKILL until thawed, so a
        teardown that only kills leaves it, frozen, for good."""
        for root in self.roots:
            for dirpath, _, files in sorted(os.walk(root), key=lambda w: len(w[0])):
                if "freezer.state" in files:  # cgroup v1
                    knob, value = "freezer.state", "THAWED"
                elif "cgroup.freeze" in files:  # cgroup v2
                    knob, value = "cgroup.freeze", "0"
                else:
                    continue
                with contextlib.suppress(OSError):
                    Path(dirpath, knob).write_text(value)

    def kill_all(self, timeout: float = 20.0) -> set[int]:
        """Thaw, then SIGKILL every process in the tree until none is left; the survivors
        (none, or why teardown failed)."""
        deadline = time.monotonic() + timeout
        while (pids := self.pids()) and time.monotonic() < deadline:
            self.thaw()
            for pid in pids:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.1)
        return self.pids()

    def remove(self, timeout: float = 10.0) -> list[Path]:
        """rmdir the whole tree, deepest first; the directories that would not go."""
        deadline = time.monotonic() + timeout
        while True:
            left: list[Path] = []
            for root in self.roots:
                if not root.exists():
                    continue
                for dirpath, _, _ in sorted(os.walk(root), key=lambda w: -len(w[0])):
                    try:
                        os.rmdir(dirpath)
                    except OSError:
                        left.append(Path(dirpath))
            if not left or time.monotonic() > deadline:
                return left
            time.sleep(0.2)

    def existing(self) -> list[Path]:
        return [r for r in self.roots if r.exists()]


# --- processes ------------------------------------------------------------------------


def _tied_to_us(cgroup_procs: Sequence[Path]) -> Callable[[], None]:
    """A ``preexec_fn``: the child dies when the test runner does (``PR_SET_PDEATHSIG``; kept
    across exec) and joins the node's cgroups before it runs. Only prctl and file writes (no
    locks, no imports): safe to run between fork and exec with the runner's threads."""
    files = [str(p) for p in cgroup_procs]

    def in_child() -> None:
        _libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        for procs in files:
            with open(procs, "w") as handle:
                handle.write("0")  # "0": the writing process itself

    return in_child


def _only_child(pid: int) -> int:
    """The one child of ``pid`` (``unshare --fork``'s: PID 1 of the node's PID namespace)."""
    children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    if len(children) != 1:
        raise NodeError(f"the holder {pid} has children {children}, expected one")
    return int(children[0])


class _Process:
    """One node process, started inside the holder's namespaces and the node's cgroups
    (joined before exec), killed if the test runner dies; output in a log file."""

    def __init__(
        self, name: str, argv: list[str], log: Path, env: Mapping[str, str], cgroups: list[Path]
    ) -> None:
        self.name = name
        self.argv = argv
        self.log = log
        self.env = dict(env)
        self.cgroups = cgroups
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        with self.log.open("ab") as out:
            self.proc = subprocess.Popen(
                self.argv,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                env=self.env,
                start_new_session=True,
                # Only prctl and a file write before exec (no locks, no imports): safe even
                # with the test runner's threads; it is the only way to join the cgroups and
                # tie the process's life to ours before it runs.
                preexec_fn=_tied_to_us(self.cgroups),  # noqa: PLW1509
            )

    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def tail(self, lines: int = LOG_TAIL_LINES) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def stop(self, timeout: float = 15.0) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        # The process group: nsenter forks (to enter the PID namespace) and does not pass
        # signals on, so the signal goes to it and the component together.
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)


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
    _kubelet: _Process | None = None
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


def _openssl(*args: str, cwd: Path) -> None:
    done = subprocess.run(["openssl", *args], cwd=cwd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise NodeError(f"openssl {args[0]} failed: {done.stderr.strip()}")


def client_cert(pki: Path, *, ca_dir: Path, name: str, user: str, group: str | None) -> None:
    """``<name>.crt``/``.key`` in ``pki``: a client certificate for ``user`` (in ``group``),
    signed by the CA the API server trusts: the identity a node component really has (the
    kubelet's is ``system:node:<node>`` in ``system:nodes``)."""
    pki.mkdir(parents=True, exist_ok=True)
    subject = (f"/O={group}" if group else "") + f"/CN={user}"
    _openssl(
        "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
        "-keyout", f"{name}.key", "-out", f"{name}.crt", "-days", "2",
        "-CA", str(ca_dir / "ca.crt"), "-CAkey", str(ca_dir / "ca.key"),
        "-subj", subject,
        "-addext", "basicConstraints=critical,CA:FALSE",
        "-addext", "keyUsage=critical,digitalSignature",
        "-addext", "extendedKeyUsage=clientAuth",
        cwd=pki,
    )  # fmt: skip


def cert_kubeconfig(
    *, server: str, ca_pem: bytes, user: str, cert: Path, key: Path
) -> dict[str, Any]:
    """A kubeconfig that authenticates with a client certificate (``client_cert``)."""
    import base64

    document = kubeconfig_document(server=server, ca_pem=ca_pem, user=user, token="")
    document["users"] = [
        {
            "name": user,
            "user": {
                "client-certificate-data": base64.b64encode(cert.read_bytes()).decode(),
                "client-key-data": base64.b64encode(key.read_bytes()).decode(),
            },
        }
    ]
    return document


NODE_RBAC_BINDING = "autoroll-e2e:nodes"


def _grant_node_role(kube: Any) -> None:
    """Bind the built-in ``system:node`` role to ``system:nodes`` (the API server runs RBAC
    only, without the Node authorizer that would otherwise authorize kubelets)."""
    body = cluster_role_binding(NODE_RBAC_BINDING, "system:node", "Group", "system:nodes")
    _apply_cluster_objects(kube, [body])


def node_is_ready(kube: Any, name: str) -> bool:
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException

    core: Any = client.CoreV1Api(kube)
    try:
        raw = json.loads(core.read_node(name, _preload_content=False).data)
    except ApiException:
        return False
    conditions = raw.get("status", {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


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
    processes: list[_Process] = []
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
                preexec_fn=_tied_to_us(cgroups.procs_files("runtime")),  # noqa: PLW1509
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
        _write_kubeconfig(
            root, plane, name="kubelet", user=f"system:node:{name}", group="system:nodes"
        )
        _grant_node_role(kube)

        containerd = _Process(
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

        kubelet = _Process(
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
            _delete_node(kube, name)
        timings["stop"] = time.monotonic() - stop_started
        if made_tmp and not keep_workdir:
            shutil.rmtree(root, ignore_errors=True)
        elif not keep_workdir:
            for sub in ("var", "run"):
                shutil.rmtree(root / sub, ignore_errors=True)
        if survivors or stuck:
            raise NodeError(f"node teardown left processes {sorted(survivors)} / cgroups {stuck}")


def _write_kubeconfig(
    root: Path, plane: ControlPlane, *, name: str, user: str, group: str | None
) -> Path:
    """``etc/<name>.kubeconfig`` for a node component, with its own client certificate."""
    client_cert(root / "pki", ca_dir=plane.ca_file.parent, name=name, user=user, group=group)
    path = root / "etc" / f"{name}.kubeconfig"
    document = cert_kubeconfig(
        server=plane.server,
        ca_pem=plane.ca_file.read_bytes(),
        user=user,
        cert=root / "pki" / f"{name}.crt",
        key=root / "pki" / f"{name}.key",
    )
    path.write_text(yaml.safe_dump(document))
    return path


def _start_cluster_network(
    node: Node,
    plane: ControlPlane,
    binaries: NodeBinaries,
    env: Mapping[str, str],
    cgroups: CgroupTree,
    *,
    watch: Sequence[_Process],
    deadline: float,
) -> list[_Process]:
    """Start kube-proxy and CoreDNS on the node (``node_network.py``); return once kube-proxy
    has synced its rules and CoreDNS its view of the Services."""
    assert binaries.kube_proxy is not None and binaries.coredns is not None
    root = node.workdir
    _apply_cluster_objects(plane.api_client(), coredns_rbac())
    proxy_kubeconfig = _write_kubeconfig(
        root, plane, name="kube-proxy", user=KUBE_PROXY_USER, group=None
    )
    dns_kubeconfig = _write_kubeconfig(root, plane, name="coredns", user=COREDNS_USER, group=None)
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
        _Process(
            "kube-proxy",
            node.enter(binaries.kube_proxy, f"--config={proxy_config}", "--v=1"),
            node.logs["kube-proxy"],
            env,
            cgroups.procs_files("runtime"),
        ),
        _Process(
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


def _apply_cluster_objects(kube: Any, bodies: Sequence[Mapping[str, Any]]) -> None:
    """Create cluster-scoped RBAC objects (``ClusterRole``/``ClusterRoleBinding``) unless they
    exist already (the session's next node finds them)."""
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException

    rbac: Any = client.RbacAuthorizationV1Api(kube)
    create = {
        "ClusterRole": rbac.create_cluster_role,
        "ClusterRoleBinding": rbac.create_cluster_role_binding,
    }
    for body in bodies:
        try:
            create[body["kind"]](body, _preload_content=False)
        except ApiException as exc:
            if exc.status != 409:
                raise


def _delete_node(kube: Any, name: str) -> None:
    from kubernetes import client

    core: Any = client.CoreV1Api(kube)
    core.delete_node(name, _preload_content=False)


def _wait(
    what: str, ready: Callable[[], bool], *, watch: Sequence[_Process], deadline: float
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


# --- what a run must not leave behind ---------------------------------------------------


@dataclass(frozen=True)
class HostState:
    """What of the machine a node could leave behind, taken before and after: the host paths
    a kubelet or containerd writes, mounts under them or a node directory, named network
    namespaces, and node cgroups."""

    paths: frozenset[str]
    mounts: frozenset[str]
    netns: frozenset[str]
    cgroups: frozenset[str]

    @classmethod
    def now(cls) -> HostState:
        mountinfo = Path("/proc/self/mountinfo").read_text()
        # Only mounts a node could make: others come and go on a shared machine.
        mounts = frozenset(
            point
            for point in (line.split(" ")[4] for line in mountinfo.splitlines())
            if "/autoroll-node-" in point or point.startswith(HOST_PATHS)
        )
        roots = cgroup_mounts(mountinfo)
        cgroups = frozenset(
            str(p)
            for r in roots
            if r.exists()
            for p in r.iterdir()
            if p.name.startswith("autoroll-node-")
        )
        netns_dir = Path("/run/netns")
        return cls(
            paths=frozenset(p for p in HOST_PATHS if os.path.lexists(p)),
            mounts=mounts,
            netns=frozenset(p.name for p in netns_dir.iterdir())
            if netns_dir.exists()
            else frozenset(),
            cgroups=cgroups,
        )


OWNER_FILE = "owner"  # in the node's directory: "<runner pid>:<its start time> <cgroup name>"


def _owner_tag(pid: int) -> str:
    """``pid:starttime``: names one process for good (a pid alone may be reused)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return f"{pid}:gone"
    return f"{pid}:{stat.rpartition(')')[2].split()[19]}"


def _owned_nodes(tmp: Path | None = None) -> list[tuple[Path, str, str]]:
    """(owner file, runner tag, cgroup name) of every node directory with an owner file."""
    found = []
    for owner in sorted(Path(tmp or tempfile.gettempdir()).glob(f"autoroll-node-*/{OWNER_FILE}")):
        try:
            tag, name = owner.read_text().split()
        except (OSError, ValueError):
            continue
        if name.startswith("autoroll-node-"):
            found.append((owner, tag, name))
    return found


def other_runners_nodes(tmp: Path | None = None) -> frozenset[str]:
    """Directory and cgroup names of nodes that another live test runner owns: a session on
    a shared machine may start one while this one runs; they are that runner's to check."""
    names: set[str] = set()
    for owner, tag, name in _owned_nodes(tmp):
        pid = int(tag.partition(":")[0])
        if pid != os.getpid() and _owner_tag(pid) == tag:
            names.update((owner.parent.name, name))
    return frozenset(names)


def reap_orphans(tmp: Path | None = None) -> list[str]:
    """Remove what nodes of test runners that died (SIGKILL, a lost session) left behind.

    Only nodes whose ``owner`` file names a runner that no longer exists: other sessions'
    nodes on this machine, and nodes of older code without that file, are never touched.
    Their processes are thawed and killed, their cgroups and directory removed. What was
    reaped, described.
    """
    reaped: list[str] = []
    for owner, tag, name in _owned_nodes(tmp):
        if _owner_tag(int(tag.partition(":")[0])) == tag:
            continue  # its runner is alive
        tree = CgroupTree(name)
        survivors = tree.kill_all(timeout=10)
        stuck = tree.remove(timeout=5)
        shutil.rmtree(owner.parent, ignore_errors=True)
        reaped.append(f"{owner.parent} (cgroup {name}; left {sorted(survivors)} / {stuck})")
    return reaped


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


def leftovers(before: HostState, after: HostState, tmp: Path | None = None) -> list[str]:
    """Everything present after that was not before (paths, mounts, netns, cgroups), except
    what belongs to a node another live runner owns."""
    problems = [f"host path {p}" for p in sorted(after.paths - before.paths)]
    problems += [f"mount {m}" for m in sorted(after.mounts - before.mounts)]
    problems += [f"network namespace {n}" for n in sorted(after.netns - before.netns)]
    problems += [f"cgroup {c}" for c in sorted(after.cgroups - before.cgroups)]
    foreign = other_runners_nodes(tmp)
    return [p for p in problems if not any(name in p for name in foreign)]


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


# --- scheduling ---------------------------------------------------------------------------


def terminating_namespace(exc: Any) -> bool:
    """Is ``exc`` the API server's 403 for creating anything (a binding too) in a namespace
    that is being deleted? A test's namespace goes while its last pods are still unbound."""
    return bool(exc.status == 403 and "being terminated" in str(exc.body or ""))


class Binder:
    """The cluster's scheduler: binds each unscheduled pod to the node.

    Skips namespaces labelled ``e2e.autoroll/node=simulated`` (the simulated kubelet binds
    those), and, as a scheduler does, a pod whose ``nodeSelector`` the node's labels do not
    match (a second, simulated node of another architecture takes it). One thread, its own
    API client; failures are kept in ``errors``.
    """

    def __init__(self, kube: Any, node: str, *, interval: float = 0.2) -> None:
        from kubernetes import client

        self.core: Any = client.CoreV1Api(kube)
        self.node = node
        self.interval = interval
        self.errors: list[str] = []
        self.bound = 0
        self._labels: dict[str, str] | None = None  # the node's, read once
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> Binder:
        self._thread = threading.Thread(target=self._run, name="e2e-binder", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(10)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.bind_once()
            except Exception as exc:  # kept for the test to see; the loop goes on
                detail = str(getattr(exc, "body", "") or "")[:300]
                self.errors.append(f"{exc!r} {detail}".strip())
            self._stop.wait(self.interval)

    def bind_once(self) -> int:
        from kubernetes.client.exceptions import ApiException

        # Pods first, then namespaces: a pod in the list was made after its namespace was
        # labelled simulated, so the later namespace list sees the label (the other order
        # raced a test's label-then-create and bound its pod here).
        pods = json.loads(
            self.core.list_pod_for_all_namespaces(
                field_selector="spec.nodeName=", _preload_content=False
            ).data
        )["items"]
        simulated = {
            ns["metadata"]["name"]
            for ns in json.loads(
                self.core.list_namespace(
                    label_selector=f"{SIMULATED_LABEL}=simulated", _preload_content=False
                ).data
            )["items"]
        }
        count = 0
        for pod in pods:
            meta = pod["metadata"]
            if meta["namespace"] in simulated or meta.get("deletionTimestamp"):
                continue
            if not self._selects_node(pod):
                continue
            body = {
                "apiVersion": "v1",
                "kind": "Binding",
                "metadata": {"name": meta["name"], "uid": meta["uid"]},
                "target": {"apiVersion": "v1", "kind": "Node", "name": self.node},
            }
            try:
                self.core.create_namespaced_pod_binding(
                    meta["name"], meta["namespace"], body, _preload_content=False
                )
                count += 1
            except ApiException as exc:
                if exc.status in (404, 409) or terminating_namespace(exc):
                    continue  # gone, bound already, or its namespace is being deleted
                raise
        self.bound += count
        return count

    def _selects_node(self, pod: dict[str, Any]) -> bool:
        """Does the pod's ``nodeSelector`` (if any) match the node's labels?"""
        selector = (pod.get("spec") or {}).get("nodeSelector") or {}
        if not selector:
            return True
        if self._labels is None:
            node = json.loads(self.core.read_node(self.node, _preload_content=False).data)
            self._labels = dict(node["metadata"].get("labels") or {})
        return all(self._labels.get(key) == value for key, value in selector.items())
