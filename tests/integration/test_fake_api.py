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
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
import requests

from autoroll.core.model import DeleteOutcome, WorkloadKind
from autoroll.kube import KubeCluster, connect
from tests.support.autoroll_cli import run_autoroll
from tests.support.fake_kube import SELECTOR, FaultyKubeApi, KubeApiServer
from tests.support.moved_tag import api_on_moved_tag
from tests.support.registry import ImagePusher, RegistryServer
from tests.support.serve import start_serve
from tests.support.wait import wait_until

pytestmark = pytest.mark.integration

SECRET = "fake-api-webhook-secret-0123456789"
#: What the client must ask for on every pod list: pods still running, not finished ones.


@dataclass
class World:
    api: FaultyKubeApi
    kube: KubeApiServer
    kubeconfig: Path
    registry: RegistryServer
    old: str
    new: str

    def requests(self) -> list[tuple[str, str]]:
        """(method, path without query) of every request the fake API received."""
        return [(s.method, urlsplit(s.path).path) for s in self.kube.seen]

    def pod_list_field_selectors(self) -> list[list[str] | None]:
        """The ``fieldSelector`` values of every pod list request (None when absent)."""
        return [
            parse_qs(urlsplit(s.path).query).get("fieldSelector")
            for s in self.kube.seen
            if s.method == "GET" and urlsplit(s.path).path == "/api/v1/namespaces/shop/pods"
        ]

    def assert_pod_lists_have_no_phase_filter(self) -> None:
        """No phase filter: a deleted pod shows Succeeded/Failed while it still terminates."""
        selectors = self.pod_list_field_selectors()
        assert selectors, "no pod list request reached the fake API"
        assert selectors == [None] * len(selectors)


@pytest.fixture
def world(
    registry: RegistryServer, pusher: ImagePusher, repository: str, tmp_path: Path
) -> Iterator[World]:
    """The tag has moved: pods run ``old``, the registry's tag now names ``new``."""
    api, old, new = api_on_moved_tag(pusher, repository, host=registry.host)
    with KubeApiServer(api) as kube:
        kubeconfig = kube.write_kubeconfig(tmp_path / "kubeconfig")
        yield World(api, kube, kubeconfig, registry, old, new)


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


def test_the_real_client_reads_the_api_json_in_kinds_plus_namespaces_requests(
    world: World,
) -> None:
    cluster = KubeCluster(
        label_selector=SELECTOR,
        api_client_factory=lambda: connect({"KUBECONFIG": str(world.kubeconfig)}),
    )
    [enrolled] = cluster.snapshot()
    assert enrolled.workload.key == "shop/deployment/web"
    assert enrolled.workload.replicas == 2
    assert [p.name for p in enrolled.pods] == ["web-1", "web-2"]
    assert enrolled.pods[0].ready and enrolled.pods[0].created_at.tzinfo is not None
    assert enrolled.pods[0].statuses[0].image_id.endswith(world.old)
    assert world.requests() == [
        ("GET", "/apis/apps/v1/deployments"),
        ("GET", "/apis/apps/v1/statefulsets"),
        ("GET", "/apis/apps/v1/daemonsets"),
        ("GET", "/api/v1/namespaces/shop/pods"),
    ]
    world.assert_pod_lists_have_no_phase_filter()


def test_only_the_configured_kinds_are_listed(world: World) -> None:
    cluster = KubeCluster(
        label_selector=SELECTOR,
        api_client_factory=lambda: connect({"KUBECONFIG": str(world.kubeconfig)}),
        kinds=[WorkloadKind.DEPLOYMENT],
    )
    assert [e.workload.key for e in cluster.snapshot()] == ["shop/deployment/web"]
    assert world.requests() == [
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
    result = run_autoroll("plan", env=base_env(world, tmp_path))
    assert result.returncode == 0, result.stderr
    [row] = [line for line in result.stdout.splitlines() if line.startswith("shop/deployment/web")]
    assert "stale → would delete pod web-1" in row
    assert world.old[:19] in row and world.new[:19] in row
    assert world.api.deletes == []
    assert world.registry.password not in result.stdout + result.stderr
    world.assert_pod_lists_have_no_phase_filter()


def test_serve_rolls_one_pod_per_webhook_only_when_settled(world: World, tmp_path: Path) -> None:
    serve = start_serve(tmp_path, {**base_env(world, tmp_path), "WEBHOOK_SECRET": SECRET})

    def webhook() -> None:
        body = b"{}"
        signature = hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()
        response = requests.post(
            f"{serve.url}/webhook", data=body, headers={"X-Forgejo-Signature": signature}, timeout=5
        )
        assert response.status_code == 202

    def ticks() -> float:
        return serve.metric("autoroll_ticks_total", outcome="ok")

    def ticks_above(value: float) -> bool:
        return ticks() > value

    try:
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

        code, _ = serve.terminate()  # a clean exit; its time is tests/faults' business
        assert code == 0
    finally:
        serve.kill()
    log = serve.output()
    assert "deleted stale pod shop/web-1" in log
    assert world.registry.password not in log
    assert SECRET not in log
    world.assert_pod_lists_have_no_phase_filter()
