"""The real Kubernetes client against a small fake API server on 127.0.0.1.

Until the local control plane is available, this checks what the pure tests cannot: that
real API JSON deserializes through the client into our views, which query parameters and
delete bodies go over the wire, and how many list requests a pass costs. With the real
``docker-registry`` fixture it also runs ``autoroll plan`` and ``autoroll serve`` end to
end: a signed webhook makes the server delete exactly one stale pod, with its UID as a
precondition, and nothing more until the replacement is Ready.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import http.server
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
import requests

from autoroll.cluster import DeleteOutcome, KubeCluster, connect
from tests.support.ports import free_port
from tests.support.registry import ImagePusher, RegistryServer

pytestmark = pytest.mark.integration

SELECTOR = "aethnet.se/autoroll=true"
SECRET = "fake-api-webhook-secret-0123456789"
CREATED = "2026-01-01T00:00:00Z"


@dataclass
class FakeApi:
    """Deployments and pods as JSON; DELETE replaces a pod with an unready new one."""

    image: str
    running: str  # the digest the initial pods report
    target: str  # the digest a replacement pod reports
    pods: dict[str, dict[str, Any]] = field(default_factory=dict)
    requests: list[tuple[str, str]] = field(default_factory=list)
    deletes: list[tuple[str, str | None]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    serial: int = 0

    def __post_init__(self) -> None:
        for name in ("web-1", "web-2"):
            self.pods[name] = self.pod(name, self.running, ready=True)

    def pod(self, name: str, digest: str, *, ready: bool) -> dict[str, Any]:
        repo = self.image.rpartition(":")[0]
        return {
            "metadata": {
                "name": name,
                "namespace": "shop",
                "uid": f"uid-{name}",
                "labels": {"app": "web", "pod-template-hash": "abc"},
                "creationTimestamp": CREATED,
            },
            "spec": {
                "containers": [{"name": "app", "image": self.image, "imagePullPolicy": "Always"}]
            },
            "status": {
                "phase": "Running",
                "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
                "containerStatuses": [
                    {
                        "name": "app",
                        "image": self.image,
                        "imageID": f"{repo}@{digest}",
                        "ready": ready,
                        "restartCount": 0,
                    }
                ],
            },
        }

    def deployment(self) -> dict[str, Any]:
        return {
            "metadata": {
                "name": "web",
                "namespace": "shop",
                "uid": "uid-deploy",
                "generation": 1,
                "labels": {"aethnet.se/autoroll": "true"},
                "creationTimestamp": CREATED,
            },
            "spec": {
                "replicas": 2,
                "selector": {"matchLabels": {"app": "web"}},
                "template": {
                    "metadata": {"labels": {"app": "web"}},
                    "spec": {
                        "containers": [
                            {"name": "app", "image": self.image, "imagePullPolicy": "Always"}
                        ]
                    },
                },
            },
        }

    def make_ready(self) -> None:
        with self.lock:
            for name, pod in self.pods.items():
                self.pods[name] = self.pod(
                    name,
                    pod["status"]["containerStatuses"][0]["imageID"].rpartition("@")[2],
                    ready=True,
                )

    # -- HTTP ---------------------------------------------------------------------------------

    def handle(
        self, method: str, path: str, query: dict[str, list[str]], body: bytes
    ) -> tuple[int, Any]:
        with self.lock:
            self.requests.append((method, path))
            if method == "GET" and path == "/apis/apps/v1/deployments":
                items = [self.deployment()] if query.get("labelSelector") == [SELECTOR] else []
                return 200, {
                    "kind": "DeploymentList",
                    "apiVersion": "apps/v1",
                    "metadata": {},
                    "items": items,
                }
            if method == "GET" and path == "/api/v1/namespaces/shop/pods":
                assert query.get("fieldSelector") == [
                    "status.phase!=Succeeded,status.phase!=Failed"
                ]
                return 200, {
                    "kind": "PodList",
                    "apiVersion": "v1",
                    "metadata": {},
                    "items": list(self.pods.values()),
                }
            prefix = "/api/v1/namespaces/shop/pods/"
            if method == "DELETE" and path.startswith(prefix):
                name = path[len(prefix) :]
                uid = (json.loads(body or b"{}").get("preconditions") or {}).get("uid")
                self.deletes.append((name, uid))
                pod = self.pods.get(name)
                if pod is None:
                    return 404, {"kind": "Status", "code": 404, "reason": "NotFound"}
                if uid is not None and uid != pod["metadata"]["uid"]:
                    return 409, {"kind": "Status", "code": 409, "reason": "Conflict"}
                del self.pods[name]
                self.serial += 1
                fresh = f"web-new-{self.serial}"
                self.pods[fresh] = self.pod(fresh, self.target, ready=False)
                return 200, {"kind": "Status", "status": "Success"}
            return 404, {"kind": "Status", "code": 404, "reason": "NotFound"}


def serve_api(api: FakeApi) -> tuple[http.server.ThreadingHTTPServer, str]:
    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def _any(self) -> None:
            parts = urlsplit(self.path)
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            status, document = api.handle(self.command, parts.path, parse_qs(parts.query), body)
            data = json.dumps(document).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = _any  # noqa: N815
        do_DELETE = _any  # noqa: N815

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}"


def write_kubeconfig(path: Path, url: str) -> Path:
    path.write_text(
        "apiVersion: v1\nkind: Config\n"
        f'clusters: [{{name: c, cluster: {{server: "{url}"}}}}]\n'
        "users: [{name: u, user: {token: fake}}]\n"
        "contexts: [{name: x, context: {cluster: c, user: u}}]\ncurrent-context: x\n"
    )
    return path


@dataclass
class World:
    api: FakeApi
    kubeconfig: Path
    registry: RegistryServer
    old: str
    new: str


@pytest.fixture
def world(
    registry: RegistryServer, pusher: ImagePusher, repository: str, tmp_path: Path
) -> Iterator[World]:
    """The tag has moved: pods run ``old``, the registry's tag now names ``new``."""
    old = pusher.push_image(repository, "latest").digest
    new = pusher.push_image(repository, "latest").digest
    api = FakeApi(image=f"{registry.host}/{repository}:latest", running=old, target=new)
    server, url = serve_api(api)
    try:
        yield World(api, write_kubeconfig(tmp_path / "kubeconfig", url), registry, old, new)
    finally:
        server.shutdown()
        server.server_close()


def base_env(world: World, tmp: Path) -> dict[str, str]:
    return {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(tmp),
        "KUBECONFIG": str(world.kubeconfig),
        "FORGEJO_HOST": world.registry.host,
        "REGISTRY_SCHEME": "http",
        "FORGEJO_USER": world.registry.user,
        "FORGEJO_TOKEN": world.registry.password,
    }


def test_the_real_client_reads_the_api_json_in_1_plus_namespaces_requests(world: World) -> None:
    cluster = KubeCluster(
        label_selector=SELECTOR,
        api_client_factory=lambda: connect({"KUBECONFIG": str(world.kubeconfig)}),
    )
    [enrolled] = cluster.snapshot()
    assert enrolled.deployment.key == "shop/web"
    assert enrolled.deployment.replicas == 2
    assert [p.name for p in enrolled.pods] == ["web-1", "web-2"]
    assert enrolled.pods[0].ready and enrolled.pods[0].created_at.tzinfo is not None
    assert enrolled.pods[0].statuses[0].image_id.endswith(world.old)
    assert world.api.requests == [
        ("GET", "/apis/apps/v1/deployments"),
        ("GET", "/api/v1/namespaces/shop/pods"),
    ]


def test_the_real_client_deletes_with_the_uid_precondition(world: World) -> None:
    cluster = KubeCluster(
        label_selector=SELECTOR,
        api_client_factory=lambda: connect({"KUBECONFIG": str(world.kubeconfig)}),
    )
    assert cluster.delete_pod("shop", "web-2", "uid-other") is DeleteOutcome.REPLACED
    assert cluster.delete_pod("shop", "web-2", "uid-web-2") is DeleteOutcome.DELETED
    assert cluster.delete_pod("shop", "web-2", "uid-web-2") is DeleteOutcome.ALREADY_GONE
    assert world.api.deletes == [
        ("web-2", "uid-other"),
        ("web-2", "uid-web-2"),
        ("web-2", "uid-web-2"),
    ]


def test_plan_prints_the_stale_pod_and_deletes_nothing(world: World, tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "autoroll", "plan"],
        env=base_env(world, tmp_path),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    [row] = [line for line in result.stdout.splitlines() if line.startswith("shop/web")]
    assert "stale → would delete pod web-1" in row
    assert world.old[:19] in row and world.new[:19] in row
    assert world.api.deletes == []
    assert world.registry.password not in result.stdout + result.stderr


def wait_until(predicate: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


def test_serve_rolls_one_pod_per_webhook_only_when_settled(world: World, tmp_path: Path) -> None:
    port = free_port()
    env = {
        **base_env(world, tmp_path),
        "WEBHOOK_SECRET": SECRET,
        "LISTEN_ADDR": f"127.0.0.1:{port}",
        "POLL_INTERVAL_SECONDS": "3600",
    }
    log_path = tmp_path / "serve.log"
    with log_path.open("wb") as log_file:
        process = subprocess.Popen(
            [sys.executable, "-m", "autoroll", "serve"],
            env=env,
            stdout=log_file,
            stderr=subprocess.STDOUT,
        )
    url = f"http://127.0.0.1:{port}"

    def webhook() -> None:
        body = b"{}"
        signature = hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()
        response = requests.post(
            f"{url}/webhook", data=body, headers={"X-Forgejo-Signature": signature}, timeout=5
        )
        assert response.status_code == 202

    def ticks() -> float:
        for line in requests.get(f"{url}/metrics", timeout=5).text.splitlines():
            if line.startswith('autoroll_ticks_total{outcome="ok"}'):
                return float(line.rpartition(" ")[2])
        return 0.0

    def ticks_above(value: float) -> bool:
        return ticks() > value

    def up() -> bool:
        try:
            return requests.get(f"{url}/healthz", timeout=1).status_code == 200
        except requests.ConnectionError:
            return False

    try:
        wait_until(up, 30, "/healthz")
        # The first pass (at start) deletes the oldest stale pod, with its UID.
        wait_until(lambda: len(world.api.deletes) == 1, 15, "the first deletion")
        assert world.api.deletes == [("web-1", "uid-web-1")]

        # The replacement is not Ready: further passes must wait, however many webhooks.
        for _ in range(3):
            before = ticks()
            webhook()
            wait_until(functools.partial(ticks_above, before), 15, "a nudged pass")
        assert len(world.api.deletes) == 1

        # Once it is Ready, the next pass takes the next stale pod.
        world.api.make_ready()
        webhook()
        wait_until(lambda: len(world.api.deletes) == 2, 15, "the second deletion")
        assert world.api.deletes[1] == ("web-2", "uid-web-2")

        process.send_signal(signal.SIGTERM)
        assert process.wait(10) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(5)
    log = log_path.read_text()
    assert "deleted stale pod shop/web-1" in log
    assert world.registry.password not in log
    assert SECRET not in log
