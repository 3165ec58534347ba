"""What a node could leave on the machine, and what nodes of dead test runners left.

``HostState`` is taken before and after a run and ``leftovers`` tells what is new. Each node
directory has an ``owner`` file naming its runner (``_owner_tag``): a session's check skips
nodes another live runner owns (``other_runners_nodes``), and ``reap_orphans`` removes those
whose runner is gone. Apart from ``node.py`` because none of it needs a running node: the
session's check (``leftovers.py``) and the unit tests use it without one.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from tests.e2e.node_process import CgroupTree, cgroup_mounts

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


def leftovers(before: HostState, after: HostState, tmp: Path | None = None) -> list[str]:
    """Everything present after that was not before (paths, mounts, netns, cgroups), except
    what belongs to a node another live runner owns."""
    problems = [f"host path {p}" for p in sorted(after.paths - before.paths)]
    problems += [f"mount {m}" for m in sorted(after.mounts - before.mounts)]
    problems += [f"network namespace {n}" for n in sorted(after.netns - before.netns)]
    problems += [f"cgroup {c}" for c in sorted(after.cgroups - before.cgroups)]
    foreign = other_runners_nodes(tmp)
    return [p for p in problems if not any(name in p for name in foreign)]
