"""The whole run's leftovers check, for the e2e tier on several pytest-xdist workers.

Each worker has its own control plane and node, and its ``node`` fixture checks that node's
teardown (``node.py``: processes, cgroups, mounts, network namespaces, host paths, its
directory). That check runs inside the worker, so its findings travel to the controlling
process in ``workeroutput`` (``WorkerReport``), where they fail the run. Once every worker
is gone, the controlling process then looks at the machine as a whole (``whole_run``): what
is there now that was not when the run started, and that no other live test run on this
shared machine owns:

- host paths a kubelet or containerd writes, mounts, named network namespaces and
  ``autoroll-node-*`` cgroups (``node.HostState``);
- node directories (``/tmp/autoroll-node-*``) and control-plane directories
  (``/tmp/autoroll-e2e-*``);
- processes whose command line names such a directory (etcd, kube-apiserver,
  containerd, the kubelet...) and whose parent is no test runner (a live run's components
  are children of its Python; ours, orphaned, are not).

A node directory belongs to another run while its ``owner`` file names a live runner other
than this run's workers; a control-plane directory while a process of that run (a child of
a Python process) still uses it.
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.e2e.node_host import HostState, _owned_nodes, _owner_tag, other_runners_nodes

NODE_DIRS = "autoroll-node-*"
PLANE_DIRS = "autoroll-e2e-*"


@dataclass
class WorkerReport:
    """What one worker's session found: problems fail the run, notes and timings are said."""

    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)
    pid: int = field(default_factory=os.getpid)

    def as_output(self) -> dict[str, Any]:
        """For ``config.workeroutput`` (plain data: it crosses execnet)."""
        return {
            "problems": list(self.problems),
            "notes": list(self.notes),
            "timings": dict(self.timings),
            "pid": self.pid,
        }

    @classmethod
    def from_output(cls, data: Mapping[str, Any]) -> WorkerReport:
        return cls(
            list(data.get("problems", ())),
            list(data.get("notes", ())),
            dict(data.get("timings", {})),
            int(data.get("pid", 0)),
        )


@dataclass(frozen=True)
class RunStart:
    """The machine when the run started."""

    host: HostState
    dirs: frozenset[str]

    @classmethod
    def now(cls, tmp: Path | None = None) -> RunStart:
        return cls(HostState.now(), temp_dirs(tmp))


def temp_dirs(tmp: Path | None = None) -> frozenset[str]:
    """Node and control-plane directories under the temporary directory."""
    root = Path(tmp or tempfile.gettempdir())
    return frozenset(str(p) for pattern in (NODE_DIRS, PLANE_DIRS) for p in root.glob(pattern))


def foreign_nodes(ours: Collection[int], tmp: Path | None = None) -> frozenset[str]:
    """Directory and cgroup names of nodes owned by a live runner that is neither this
    process nor one of ``ours`` (this run's workers)."""
    names: set[str] = set()
    for owner, tag, cgroup in _owned_nodes(tmp):
        pid = int(tag.partition(":")[0])
        if pid != os.getpid() and pid not in ours and _owner_tag(pid) == tag:
            names.update((owner.parent.name, cgroup))
    return frozenset(names)


def _cmdline(pid: int | str) -> str:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return ""
    return " ".join(a.decode(errors="replace") for a in raw.split(b"\0") if a)


def processes_using(dirs: Collection[str]) -> dict[str, list[str]]:
    """For each directory, the processes whose command line names it: ``pid (parent's
    command) command``, and whether its parent is a Python process (a live test run)."""
    found: dict[str, list[str]] = {d: [] for d in dirs}
    if not dirs:
        return found
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        text = _cmdline(proc.name)
        hits = [d for d in dirs if d in text]
        if not hits:
            continue
        try:
            status = (proc / "status").read_text()
        except OSError:
            continue
        ppid = next((ln.split()[1] for ln in status.splitlines() if ln.startswith("PPid:")), "0")
        parent = _cmdline(ppid)
        owner = "python" if "python" in parent else f"parent {ppid}: {parent[:60] or '?'}"
        for d in hits:
            found[d].append(f"{proc.name} ({owner}) {text[:160]}")
    return found


def changed(before: HostState, after: HostState) -> list[str]:
    """Everything in ``after`` that was not in ``before``, named."""
    return [
        *(f"host path {p}" for p in sorted(after.paths - before.paths)),
        *(f"mount {m}" for m in sorted(after.mounts - before.mounts)),
        *(f"network namespace {n}" for n in sorted(after.netns - before.netns)),
        *(f"cgroup {c}" for c in sorted(after.cgroups - before.cgroups)),
    ]


def _not_of(foreign: Collection[str], problems: list[str]) -> list[str]:
    return [p for p in problems if not any(name in p for name in foreign)]


def session_leftovers(before: HostState, tmp: Path | None = None) -> list[str]:
    """One session's (one worker's) check after its node's teardown: what is new since
    ``before``, less what belongs to a node another live runner owns. The owners are read
    both before and after the machine is, so a node another worker tears down in between
    (its cgroup seen, its owner file gone by the time the owners are read) is still known
    to be that worker's."""
    foreign = other_runners_nodes(tmp)
    after = HostState.now()
    return _not_of(foreign | other_runners_nodes(tmp), changed(before, after))


def whole_run(start: RunStart, *, ours: Collection[int] = (), tmp: Path | None = None) -> list[str]:
    """What this run left on the machine (see the module docstring); empty when nothing."""
    foreign = foreign_nodes(ours, tmp)
    after = HostState.now()
    foreign |= foreign_nodes(ours, tmp)
    problems = _not_of(foreign, changed(start.host, after))
    new = sorted(temp_dirs(tmp) - start.dirs)
    users = processes_using(new)
    for directory in new:
        name = Path(directory).name
        if name in foreign:
            continue
        orphans = [u for u in users[directory] if "(python)" not in u]
        problems += [f"process {u}" for u in orphans]
        in_use_by_a_run = len(orphans) < len(users[directory])
        gone = not Path(directory).exists()  # removed since it was listed
        if not gone and (name.startswith("autoroll-node-") or not in_use_by_a_run):
            problems.append(f"directory {directory}")
    return problems


def whole_run_settled(
    start: RunStart, *, ours: Collection[int] = (), timeout: float = 15.0
) -> list[str]:
    """``whole_run`` once the killed processes have been reaped (orphans go to PID 1, which
    reaps them in its own time): empty as soon as it is, else what is left at ``timeout``."""
    deadline = time.monotonic() + timeout
    while (found := whole_run(start, ours=ours)) and time.monotonic() < deadline:
        time.sleep(0.5)
    return found
