"""The reconcile process beside the HTTP worker (docs/adr/027), on a real ``autoroll serve``.

As in ``test_server.py`` the Kubernetes API and the registry are closed ports: every pass
fails fast and is counted, which is all these tests need of a pass. What they show is the
process model: one worker answering, one reconcile process beside it, a webhook answered
while the reconcile process cannot run at all (SIGSTOP: the extreme of a pass holding the
CPU), its nudge delivered once it runs again, one ``/metrics``, a reconcile process that dies
replaced with its worker, and never two reconcile loops at once.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests
from prometheus_client.parser import text_string_to_metric_families

from tests.integration.test_server import BODY, child_pids, sign, start_server
from tests.support.serve import Serve
from tests.support.wait import wait_until

pytestmark = pytest.mark.integration

RECONCILE_MODULE = b"autoroll.edge.reconcile_main"


def cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def worker_of(server: Serve) -> int:
    (worker,) = child_pids(server.process.pid)
    return worker


def reconcile_processes(server: Serve) -> list[int]:
    """Every reconcile process under this ``autoroll serve``, at any depth."""
    found, pids = [], [server.process.pid]
    while pids:
        pid = pids.pop()
        for child in child_pids(pid):
            if RECONCILE_MODULE in cmdline(child):
                found.append(child)
            pids.append(child)
    return found


def errors(server: Serve) -> float:
    return server.metric("autoroll_ticks_total", outcome="error")


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Serve]:
    frozen: list[int] = []
    try:
        with start_server(tmp_path) as srv:  # yielded once the first pass is counted
            try:
                yield srv
            finally:
                for pid in reconcile_processes(srv):
                    frozen.append(pid)
                    os.kill(pid, signal.SIGCONT)  # a stopped process would outlive the test
    finally:
        for pid in frozen:
            wait_until(lambda: not cmdline(pid), 30, f"reconcile process {pid} to exit")  # noqa: B023


def test_one_worker_answers_and_one_reconcile_process_runs_beside_it(server: Serve) -> None:
    worker = worker_of(server)
    (reconciler,) = reconcile_processes(server)
    assert child_pids(worker) == [reconciler]
    assert "reconcile worker started" in server.output()


def test_a_webhook_is_answered_while_the_reconcile_process_cannot_run(server: Serve) -> None:
    """The answer does not wait for the pass's CPU: with the reconcile process stopped
    outright, signed webhooks are answered at once, and their nudge (merged into one) runs
    a pass as soon as it runs again."""
    (reconciler,) = reconcile_processes(server)
    before = errors(server)
    os.kill(reconciler, signal.SIGSTOP)
    try:
        took = []
        for _ in range(20):
            started = time.monotonic()
            response = requests.post(
                f"{server.url}/webhook",
                data=BODY,
                headers={"X-Forgejo-Signature": sign(BODY)},
                timeout=5,
            )
            took.append(time.monotonic() - started)
            assert response.status_code == 202
        assert requests.get(f"{server.url}/readyz", timeout=5).status_code == 200
        assert requests.get(f"{server.url}/livez", timeout=5).status_code == 200
    finally:
        os.kill(reconciler, signal.SIGCONT)
    print(f"\nwebhook answers with the reconcile process stopped: max {max(took) * 1000:.0f} ms")
    assert max(took) < 1.0
    wait_until(lambda: errors(server) >= before + 1, 15, "the nudged pass")


def test_metrics_serves_every_family_once_from_both_processes(server: Serve) -> None:
    response = requests.post(
        f"{server.url}/webhook", data=BODY, headers={"X-Forgejo-Signature": "0" * 64}, timeout=5
    )
    assert response.status_code == 403
    text = requests.get(f"{server.url}/metrics", timeout=5).text
    names = [line.split()[2] for line in text.splitlines() if line.startswith("# TYPE ")]
    assert len(names) == len(set(names)), names
    families = {f.name: f for f in text_string_to_metric_families(text)}
    # Counted by the worker (the edge) ...
    webhook = families["autoroll_webhook_requests"].samples
    assert any(s.labels.get("outcome") == "bad-signature" and s.value >= 1 for s in webhook)
    # ... and by the reconcile process.
    ticks = families["autoroll_ticks"].samples
    assert any(s.labels == {"outcome": "error"} and s.value >= 1 for s in ticks)
    assert families["autoroll_leader"].samples[0].value == 1


def test_a_reconcile_process_that_dies_is_replaced_with_its_worker(server: Serve) -> None:
    worker = worker_of(server)
    (reconciler,) = reconcile_processes(server)
    os.kill(reconciler, signal.SIGKILL)
    wait_until(
        lambda: [w for w in child_pids(server.process.pid) if w != worker], 30, "a new worker"
    )
    wait_until(lambda: len(reconcile_processes(server)) == 1, 30, "a new reconcile process")
    assert reconcile_processes(server) != [reconciler]
    assert "the reconcile process exited on its own (code -9)" in server.output()
    # The new reconcile process's first pass: a new registry, counting from nothing.
    wait_until(lambda: errors(server) >= 1, 30, "the new reconcile process's first pass")


def test_a_new_reconcile_process_waits_until_the_old_one_is_gone(server: Serve) -> None:
    """The worker dies while its reconcile process cannot run (stopped): gunicorn starts a
    new worker and a new reconcile process, which must not reconcile while the old one
    lives. The old one, running again, finds its worker gone and stops; only then does the
    new one start its loop."""
    worker = worker_of(server)
    (old,) = reconcile_processes(server)
    os.kill(old, signal.SIGSTOP)
    try:
        os.kill(worker, signal.SIGKILL)
        wait_until(
            lambda: "waiting for the previous reconcile process to exit" in server.output(),
            30,
            "the new reconcile process to wait",
        )
        assert server.output().count("reconcile worker started") == 1
        ready = requests.get(f"{server.url}/readyz", timeout=5)
        assert ready.status_code == 503 and "starting" in ready.text
    finally:
        os.kill(old, signal.SIGCONT)
    wait_until(lambda: not cmdline(old), 30, "the old reconcile process to exit")
    wait_until(lambda: server.output().count("reconcile worker started") == 2, 30, "the new loop")
    assert len(reconcile_processes(server)) == 1
    wait_until(
        lambda: requests.get(f"{server.url}/readyz", timeout=5).status_code == 200, 15, "ready"
    )
