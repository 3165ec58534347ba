"""``make demo`` as CI can run it: ``scripts/demo.py --once`` must show a complete roll.

The demo brings up its own control plane, registry, real node (kubelet + containerd) and
controller (as a newcomer's run does), so this also proves that it tears all of them down
and exits on its own, leaving nothing of the node on the machine.
"""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import require_tool
from tests.e2e.conftest import node_binaries
from tests.e2e.node_host import HostState, leftovers

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]
BOUND_SECONDS = 240  # measured 42-48 s simulated on a busy 2-core machine (3 pods, 7 s readiness)


def test_demo_once_shows_a_complete_roll_of_three_pods_and_exits() -> None:
    for tool in ("etcd", "kube-apiserver", "kube-controller-manager", "docker-registry"):
        require_tool(tool)
    require_tool("htpasswd")
    node_binaries()  # the real node's tools: skip locally, fail in CI, when missing
    before = HostState.now()
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "scripts/demo.py", "--once"],  # the defaults a newcomer gets
        cwd=REPO,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=BOUND_SECONDS,
        check=False,
    )
    took = time.monotonic() - started
    out = done.stdout
    assert done.returncode == 0, f"exit {done.returncode}:\n{out}\n{done.stderr}"
    deleted = re.findall(r"autoroll │ deleted stale pod (\S+):", out)
    assert len(set(deleted)) == 3, out
    # Between deletions a pass waits for the replacement to become Ready (7 s > the 5 s poll).
    assert "waiting (not-settled): pod not ready" in out, out
    assert "HTTP 202" in out
    assert out.count("roll complete") == 2, out  # the first deploy, then autoroll's roll
    assert "generation 1, as before the push" in out, "the Deployment's generation changed"
    assert out.rstrip().endswith("everything is torn down"), out[-500:]
    assert "Traceback" not in out + done.stderr
    assert "not real: no scheduler" in out, "the demo ran on the real node and says what is real"
    assert re.search(r"✓ hello-\S+ Ready on \w{12}", out), out
    assert leftovers(before, HostState.now()) == []
    print(f"demo --once took {took:.1f} s")
