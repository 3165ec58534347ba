"""A real ``autoroll serve`` (gunicorn) on 127.0.0.1, with no reachable Kubernetes API.

The kubeconfig points at a closed port on 127.0.0.1: every pass fails fast with "cannot
reach the Kubernetes API", is logged and counted, and the server keeps answering. That is
the behaviour we want in production too, and it lets these tests run without a cluster.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import requests

from tests.support.ports import free_port
from tests.support.serve import POD_GRACE_SECONDS, dead_kubeconfig, scrape_metric
from tests.support.wait import wait_until

pytestmark = pytest.mark.integration

SECRET = "integration-webhook-secret-0123456789"
TOKEN = "integration-forgejo-token-abcdef"
BODY = b'{"action":"published"}'


def sign(body: bytes) -> str:
    return hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()


@dataclass
class Server:
    process: subprocess.Popen[bytes]
    url: str
    log_path: Path

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def metric(self, name: str, **labels: str) -> float:
        return scrape_metric(self.url, name, **labels)


def start_server(tmp: Path, **extra_env: str) -> Server:
    dead_port = free_port()  # nothing listens here: the registry is "down", as is the API
    kubeconfig = dead_kubeconfig(tmp / "kubeconfig")
    port = free_port()
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(tmp),
        "FORGEJO_HOST": f"127.0.0.1:{dead_port}",
        "REGISTRY_SCHEME": "http",
        "FORGEJO_USER": "autoroll",
        "FORGEJO_TOKEN": TOKEN,
        "WEBHOOK_SECRET": SECRET,
        "LISTEN_ADDR": f"127.0.0.1:{port}",
        "PROBE_ADDR": f"127.0.0.1:{free_port()}",
        "POLL_INTERVAL_SECONDS": "3600",  # only the first pass and nudges run
        "KUBECONFIG": str(kubeconfig),
        "LOG_LEVEL": "debug",  # the secret filter must hold even at debug
        **extra_env,
    }
    log_path = tmp / "server.log"
    with log_path.open("wb") as log_file:
        process = subprocess.Popen(
            [sys.executable, "-m", "autoroll", "serve"],
            env=env,
            stdout=log_file,
            stderr=subprocess.STDOUT,
        )
    server = Server(process, f"http://127.0.0.1:{port}", log_path)

    def healthy() -> bool:
        if process.poll() is not None:
            raise AssertionError(f"server exited {process.returncode}:\n{server.log()}")
        try:
            return requests.get(f"{server.url}/healthz", timeout=1).status_code == 200
        except requests.ConnectionError:
            return False

    wait_until(healthy, 30, "/healthz")
    return server


def stop_server(server: Server) -> None:
    if server.process.poll() is None:
        server.process.send_signal(signal.SIGTERM)
        try:
            server.process.wait(POD_GRACE_SECONDS)
        except subprocess.TimeoutExpired:
            server.process.kill()
            server.process.wait(5)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    srv = start_server(tmp_path_factory.mktemp("server"))
    try:
        # The first pass runs at start and fails (no API); wait for it to be counted.
        wait_until(lambda: srv.metric("autoroll_ticks_total", outcome="error") >= 1, 30, "pass 1")
        yield srv
    finally:
        stop_server(srv)


def child_pids(pid: int) -> list[int]:
    children = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # Field 4 (after the parenthesised command name) is the parent pid.
        ppid = int(stat.rpartition(")")[2].split()[1])
        if ppid == pid:
            children.append(int(entry.name))
    return children


def test_healthz_answers_while_the_api_is_unreachable(server: Server) -> None:
    assert requests.get(f"{server.url}/healthz", timeout=5).status_code == 200
    assert "cannot reach the Kubernetes API" in server.log()


def test_exactly_one_worker_process_serves(server: Server) -> None:
    assert len(child_pids(server.process.pid)) == 1


@pytest.mark.parametrize(
    "headers",
    [
        {"X-Forgejo-Signature": sign(BODY)},
        {"X-Gitea-Signature": sign(BODY)},
        {"X-Hub-Signature-256": f"sha256={sign(BODY)}"},
    ],
)
def test_a_signed_webhook_is_accepted_and_runs_one_pass(
    server: Server, headers: dict[str, str]
) -> None:
    before = server.metric("autoroll_ticks_total", outcome="error")
    started = time.monotonic()
    response = requests.post(f"{server.url}/webhook", data=BODY, headers=headers, timeout=5)
    elapsed = time.monotonic() - started
    assert response.status_code == 202
    assert elapsed < 1.0
    wait_until(
        lambda: server.metric("autoroll_ticks_total", outcome="error") >= before + 1,
        15,
        "the nudged pass",
    )


@pytest.mark.parametrize(
    "headers", [{}, {"X-Forgejo-Signature": ""}, {"X-Forgejo-Signature": "0" * 64}]
)
def test_a_bad_webhook_is_403_and_runs_no_pass(server: Server, headers: dict[str, str]) -> None:
    before = stable_ticks(server)
    response = requests.post(f"{server.url}/webhook", data=BODY, headers=headers, timeout=5)
    assert response.status_code == 403
    time.sleep(0.5)
    assert server.metric("autoroll_ticks_total", outcome="error") == before


def stable_ticks(server: Server) -> float:
    """The pass count once no pass has finished for 0.3 s (earlier nudges are done)."""
    last = server.metric("autoroll_ticks_total", outcome="error")
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        time.sleep(0.3)
        now = server.metric("autoroll_ticks_total", outcome="error")
        if now == last:
            return now
        last = now
    raise AssertionError("passes kept running")


def test_a_body_over_one_mib_is_413(server: Server) -> None:
    body = b"x" * (1024 * 1024 + 1)
    response = requests.post(
        f"{server.url}/webhook", data=body, headers={"X-Forgejo-Signature": sign(body)}, timeout=10
    )
    assert response.status_code == 413


def test_metrics_is_prometheus_text(server: Server) -> None:
    response = requests.get(f"{server.url}/metrics", timeout=5)
    assert response.status_code == 200
    assert response.headers["Content-Type"].startswith("text/plain")
    assert "# TYPE autoroll_ticks_total counter" in response.text
    assert "# TYPE autoroll_tick_duration_seconds histogram" in response.text


def test_secrets_never_reach_the_log(server: Server) -> None:
    log = server.log()
    assert "FORGEJO_TOKEN=<redacted>" in log
    assert TOKEN not in log
    assert SECRET not in log


def test_sigterm_stops_cleanly_and_exits_0(tmp_path: Path) -> None:
    srv = start_server(tmp_path, LOG_FORMAT="json")
    try:
        wait_until(lambda: "reconcile worker started" in srv.log(), 15, "the reconcile thread")
        started = time.monotonic()
        srv.process.send_signal(signal.SIGTERM)
        code = srv.process.wait(10)
        elapsed = time.monotonic() - started
    finally:
        stop_server(srv)
    assert code == 0, srv.log()
    assert elapsed < 5.0
    assert "reconcile thread stopped" in srv.log()
    # LOG_FORMAT=json covers gunicorn's own lines too: every line is one JSON object.
    entries = [json.loads(line) for line in srv.log().splitlines() if line.strip()]
    assert {"gunicorn.error", "autoroll.controller.worker"} <= {e["logger"] for e in entries}
