"""tests/e2e/leftovers.py: what the e2e tier's workers report and what the whole run's check
counts as left behind (node and control-plane directories, who owns a node)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.e2e.leftovers import (
    RunStart,
    WorkerReport,
    changed,
    foreign_nodes,
    temp_dirs,
    whole_run,
)
from tests.e2e.node_host import OWNER_FILE, HostState, _owner_tag


def node_dir(tmp: Path, name: str, runner: int | None = None) -> Path:
    """A node directory as ``running_node`` leaves it: an owner file naming its runner
    (``None``: a runner that wrote it and has died since)."""
    path = tmp / f"autoroll-node-{name}"
    path.mkdir()
    child = None
    if runner is None:
        child = subprocess.Popen(
            [sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE
        )
        runner = child.pid
    (path / OWNER_FILE).write_text(f"{_owner_tag(runner)} autoroll-node-cg{name}\n")
    if child is not None:
        child.communicate(b"")
    return path


def test_a_worker_report_crosses_to_the_controlling_process_unchanged() -> None:
    report = WorkerReport(["left behind: cgroup x"], ["reaped y"], {"start: etcd": 1.5})
    back = WorkerReport.from_output(report.as_output())
    assert back == report
    assert back.pid == os.getpid()


def test_only_new_things_are_named() -> None:
    before = HostState(frozenset({"/run/nri"}), frozenset(), frozenset({"a"}), frozenset())
    after = HostState(
        frozenset({"/run/nri", "/var/lib/kubelet"}),
        frozenset({"/tmp/autoroll-node-1/var"}),
        frozenset({"a", "b"}),
        frozenset({"/sys/fs/cgroup/autoroll-node-1"}),
    )
    assert changed(before, after) == [
        "host path /var/lib/kubelet",
        "mount /tmp/autoroll-node-1/var",
        "network namespace b",
        "cgroup /sys/fs/cgroup/autoroll-node-1",
    ]


def test_a_node_of_another_live_run_is_foreign_but_not_one_of_this_runs_workers(
    tmp_path: Path,
) -> None:
    parent = os.getppid()  # alive, and not this process
    node_dir(tmp_path, "other", parent)
    node_dir(tmp_path, "dead")
    assert foreign_nodes((), tmp_path) == {"autoroll-node-other", "autoroll-node-cgother"}
    assert foreign_nodes({parent}, tmp_path) == frozenset()  # a worker of this run


def test_the_whole_run_names_a_node_directory_its_worker_left(tmp_path: Path) -> None:
    start = RunStart.now(tmp_path)
    assert temp_dirs(tmp_path) == frozenset()
    left = node_dir(tmp_path, "left")
    node_dir(tmp_path, "live", os.getppid())  # another run's, still going
    (tmp_path / "autoroll-e2e-abandoned").mkdir()  # a control plane nobody runs any more
    found = [p for p in whole_run(start, tmp=tmp_path) if p.startswith("directory ")]
    assert found == [f"directory {tmp_path / 'autoroll-e2e-abandoned'}", f"directory {left}"]
