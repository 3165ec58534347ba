"""A real ``autoroll serve`` (gunicorn) on 127.0.0.1, with no reachable Kubernetes API.

The kubeconfig points at a closed port on 127.0.0.1: every pass fails fast with "cannot
reach the Kubernetes API", is logged and counted, and the server keeps answering. That is
the behaviour we want in production too, and it lets these tests run without a cluster.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from tests.support.ports import free_port
from tests.support.serve import Serve
from tests.support.serve_without_cluster import serving_without_cluster
from tests.support.wait import wait_until

pytestmark = pytest.mark.integration

SECRET = "integration-webhook-secret-0123456789"
TOKEN = "integration-forgejo-token-abcdef"
BODY = b'{"action":"published"}'


def sign(body: bytes) -> str:
    return hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()


def start_server(tmp: Path, **extra_env: str) -> contextlib.AbstractContextManager[Serve]:
    """The server at debug level (the secret filter must hold even there); its registry is
    a closed port too, so it is as "down" as the API."""
    return serving_without_cluster(
        tmp,
        forgejo_host=f"127.0.0.1:{free_port()}",
        token=TOKEN,
        secret=SECRET,
        extra_env={"LOG_LEVEL": "debug", **extra_env},
    )


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Serve]:
    # The first pass runs at start and fails (no API); it is counted before the tests run.
    with start_server(tmp_path_factory.mktemp("server")) as srv:
        yield srv


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


def test_healthz_answers_while_the_api_is_unreachable(server: Serve) -> None:
    assert requests.get(f"{server.url}/healthz", timeout=5).status_code == 200
    assert "cannot reach the Kubernetes API" in server.output()


def test_exactly_one_worker_process_serves(server: Serve) -> None:
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
    server: Serve, headers: dict[str, str]
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
def test_a_bad_webhook_is_403_and_runs_no_pass(server: Serve, headers: dict[str, str]) -> None:
    before = stable_ticks(server)
    response = requests.post(f"{server.url}/webhook", data=BODY, headers=headers, timeout=5)
    assert response.status_code == 403
    time.sleep(0.5)
    assert server.metric("autoroll_ticks_total", outcome="error") == before


def stable_ticks(server: Serve) -> float:
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


def test_a_body_over_one_mib_is_413(server: Serve) -> None:
    body = b"x" * (1024 * 1024 + 1)
    response = requests.post(
        f"{server.url}/webhook", data=body, headers={"X-Forgejo-Signature": sign(body)}, timeout=10
    )
    assert response.status_code == 413


def test_metrics_is_prometheus_text(server: Serve) -> None:
    response = requests.get(f"{server.url}/metrics", timeout=5)
    assert response.status_code == 200
    assert response.headers["Content-Type"].startswith("text/plain")
    assert "# TYPE autoroll_ticks_total counter" in response.text
    assert "# TYPE autoroll_tick_duration_seconds histogram" in response.text


def test_secrets_never_reach_the_log(server: Serve) -> None:
    log = server.output()
    assert "FORGEJO_TOKEN=<redacted>" in log
    assert TOKEN not in log
    assert SECRET not in log


def test_sigterm_stops_cleanly_and_exits_0(tmp_path: Path) -> None:
    with start_server(tmp_path, LOG_FORMAT="json") as srv:
        wait_until(lambda: "reconcile worker started" in srv.output(), 15, "the reconcile thread")
        code, elapsed = srv.terminate(10)
    assert code == 0, srv.output()
    assert elapsed < 5.0
    assert "reconcile thread stopped" in srv.output()
    # LOG_FORMAT=json covers gunicorn's own lines too: every line is one JSON object.
    entries = [json.loads(line) for line in srv.output().splitlines() if line.strip()]
    assert {"gunicorn.error", "autoroll.controller.worker"} <= {e["logger"] for e in entries}
