"""The node's processes and the cgroup tree that holds them.

Every node process (the holder, containerd, the kubelet, kube-proxy, CoreDNS) joins the
node's cgroups before it runs and dies with the test runner (``PR_SET_PDEATHSIG``); teardown
thaws, kills and removes the whole tree (``CgroupTree``), and with it the shims and
containers the runtime started there. Apart from ``node.py`` because the node
(``Node.restart_kubelet``), its start (``node_start.py``) and the reaping of dead runners'
nodes (``node_host.py``) all use them.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from tests.e2e.controlplane_process import Component

PR_SET_PDEATHSIG = 1
_libc = ctypes.CDLL(None, use_errno=True)


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


def tied_to_us(cgroup_procs: Sequence[Path]) -> Callable[[], None]:
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


class Process(Component):
    """One node process, started inside the holder's namespaces and the node's cgroups
    (joined before exec), killed if the test runner dies; output in a log file."""

    def __init__(
        self, name: str, argv: list[str], log: Path, env: Mapping[str, str], cgroups: list[Path]
    ) -> None:
        # Only prctl and a file write before exec: it is the only way to join the cgroups and
        # tie the process's life to ours before it runs.
        super().__init__(name, argv, log, env=env, preexec_fn=tied_to_us(cgroups))
        self.cgroups = cgroups

    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def send_signal(self, number: signal.Signals) -> None:
        # The process group: nsenter forks (to enter the PID namespace) and does not pass
        # signals on, so the signal goes to it and the component together.
        assert self.proc is not None
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, number)
