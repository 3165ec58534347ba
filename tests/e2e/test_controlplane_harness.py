"""The control plane harness itself: it runs the Kubernetes version the versions file pins, and
a component that dies at start is named with its log, with nothing left running."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from tests.conftest import require_tool
from tests.e2e.controlplane import Binaries, ControlPlaneError, running_control_plane

pytestmark = pytest.mark.e2e

VERSIONS = Path(__file__).resolve().parents[2] / "scripts" / "versions.env"


def pinned_kubernetes_version() -> str:
    match = re.search(r"^KUBERNETES_VERSION=(\S+)$", VERSIONS.read_text(), re.MULTILINE)
    assert match, f"KUBERNETES_VERSION not found in {VERSIONS}"
    return match.group(1)


def test_server_reports_the_pinned_version(kube: Any) -> None:
    info = client.VersionApi(kube).get_code()
    assert info.git_version == pinned_kubernetes_version()


# --- the harness's own failure path ------------------------------------------------------


def processes_mentioning(text: str) -> list[int]:
    """PIDs whose command line contains ``text`` (to prove teardown left nothing behind)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if text in cmdline:
            found.append(int(entry.name))
    return found


def test_a_component_that_dies_is_named_with_its_log_and_nothing_is_left_running(
    tmp_path: Path,
) -> None:
    etcd = require_tool("etcd")
    fake = tmp_path / "kube-apiserver"
    fake.write_text("#!/bin/sh\necho 'E0000 flag provided but not defined: --nope' >&2\nexit 3\n")
    fake.chmod(0o755)
    binaries = Binaries(etcd=etcd, kube_apiserver=str(fake), kube_controller_manager="/bin/false")
    workdir = tmp_path / "plane"

    with (
        pytest.raises(ControlPlaneError) as failed,
        running_control_plane(binaries, workdir=workdir, timeout=30),
    ):
        pytest.fail("the control plane must not start with a broken kube-apiserver")

    message = str(failed.value)
    assert "kube-apiserver exited with code 3" in message
    assert "flag provided but not defined: --nope" in message
    assert processes_mentioning(str(workdir)) == [], "etcd was left running"
    assert not (workdir / "etcd").exists(), "etcd's data (64 MB WAL) was left behind"
    assert (workdir / "kube-apiserver.log").exists(), "the logs are kept for a post-mortem"
