"""The distribution registry's live notifications start a targeted pass of the real serve.

Debian's ``docker-registry`` (2.8) with ``notifications.endpoints`` in its configuration POSTs
its events to ``/webhook/distribution`` with the ``Authorization`` header the endpoint
configures, as a user sets it up (docs/adr/025-webhook-receivers.md). The controller is the
real ``autoroll serve`` (gunicorn, the receivers, the worker, the real registry client); the
Kubernetes API is the fake one of the fault matrix (``tests/support/fake_kube.py``): ``shop/web``
runs the tag's old digest on two pods. The poll interval is an hour, so only a notification
can start the pass that deletes.

Measured: push completion (the manifest PUT answered) → the DELETE arriving at the API, for
``SAMPLES`` pushes; the pass starts ``SETTLE_SECONDS`` after the notification, once the
registry has written the tag it notifies before writing. The registry also notifies every
pull, autoroll's own HEADs included: those are answered 202 and start nothing (else every
pass would start the next one).
"""

from __future__ import annotations

import secrets
import statistics
import time
from collections.abc import Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import pytest
import requests

from tests.conftest import require_tool
from tests.support.fake_kube import FaultyKubeApi, KubeApiServer
from tests.support.ports import free_port
from tests.support.registry import ImagePusher, RegistryServer
from tests.support.serve import Serve, start_serve
from tests.support.wait import eventually, wait_until

pytestmark = pytest.mark.integration

TOKEN = "distribution-notify-" + secrets.token_hex(12)
REPOSITORY = "team/web"
SAMPLES = 3
#: Bound on push completion → first deletion (SETTLE_SECONDS and one pass; measured 1.1-1.3 s).
DELIVERY_BOUND = 5.0


@dataclass
class World:
    registry: RegistryServer
    pusher: ImagePusher
    api: FaultyKubeApi
    serve: Serve

    def metric(self, outcome: str) -> float:
        return self.serve.metric(
            "autoroll_webhook_requests_total", source="distribution", outcome=outcome
        )

    def notify(self, authorization: str) -> None:
        """(Re)start the registry with its endpoint pointing at the controller."""
        self.registry.stop()
        self.registry.notifications = [
            {
                "name": "autoroll",
                "url": f"{self.serve.url}/webhook/distribution",
                "headers": {"Authorization": [authorization]},
                "timeout": "2s",
                "threshold": 3,
                "backoff": "1s",
            }
        ]
        self.registry.write_config()
        self.registry.start()


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    """The registry (first without notifications, holding the tag's old digest), the fake
    API whose pods run it, and ``autoroll serve`` with the distribution receiver on."""
    require_tool("htpasswd")
    registry = RegistryServer(
        binary=require_tool("docker-registry"),
        root=tmp_path / "registry",
        port=free_port(),
        user="robot",
        password=secrets.token_hex(12),
    )
    registry.root.mkdir()
    registry.start()
    kube: KubeApiServer | None = None
    serve: Serve | None = None
    try:
        pusher = ImagePusher(registry)
        old = pusher.push_image(REPOSITORY, "latest").digest
        api = FaultyKubeApi(
            image=f"{registry.host}/{REPOSITORY}:latest", running=old, target="sha256:" + "0" * 64
        )
        kube = KubeApiServer(api)
        kube.start()
        serve = start_serve(
            tmp_path,
            {
                "KUBECONFIG": str(kube.write_kubeconfig(tmp_path / "kubeconfig")),
                "FORGEJO_HOST": registry.host,
                "REGISTRY_SCHEME": "http",
                "FORGEJO_USER": registry.user,
                "FORGEJO_TOKEN": registry.password,
                "WEBHOOK_SECRET": "forgejo-secret-" + secrets.token_hex(8),
                "DISTRIBUTION_WEBHOOK_TOKEN": TOKEN,
                # Each pass lists the fake API (its watch is quiet); the scope still applies.
                "WATCH_CACHE": "false",
                "TAG_PASS_INTERVAL_SECONDS": "0",
            },
        )
        wait_until(lambda: serve is not None and serve.ticks() >= 1, 60, "the first pass")
        yield World(registry, pusher, api, serve)
    finally:
        if serve is not None:
            serve.terminate()
            serve.kill()
        registry.stop()
        if kube is not None:
            kube.stop()


def passed(serve: Serve, ticks: float) -> bool:
    return serve.ticks() > ticks


def test_a_push_is_notified_live_and_its_targeted_pass_deletes_a_stale_pod(world: World) -> None:
    world.notify(f"Bearer {TOKEN}")
    assert world.api.deletes == []  # the first pass found nothing stale: the tag is old
    samples: list[float] = []
    for n in range(1, SAMPLES + 1):
        ticks = world.serve.ticks()
        new = world.pusher.push_image(REPOSITORY, "latest")
        pushed = time.monotonic()
        world.api.target = new.digest  # what a replacement pod runs

        def deleted(n: int = n) -> float:
            assert len(world.api.deletes) >= n, "no deletion yet"
            return time.monotonic()

        samples.append(eventually(deleted, timeout=30, interval=0.01, what="a deletion") - pushed)
        # The pass (SETTLE_SECONDS after the notification, once the tag is written) ends;
        # then the replacement is Ready, and the next push may delete again.
        wait_until(partial(passed, world.serve, ticks), 30, "the pass's end")
        assert len(world.api.deletes) == n
        world.api.make_ready()
    print(
        "distribution notification: push -> first deletion "
        + ", ".join(f"{s:.2f}" for s in samples)
        + f" s (median {statistics.median(samples):.2f})"
    )
    assert max(samples) <= DELIVERY_BOUND, samples
    # One targeted pass per push (the blob and by-digest manifest events start nothing).
    assert world.metric("targeted") == SAMPLES
    assert len(world.api.deletes) == SAMPLES
    assert "Traceback" not in world.serve.output()


def test_the_registrys_pull_notifications_of_autorolls_own_heads_start_nothing(
    world: World,
) -> None:
    world.notify(TOKEN)  # the token alone, as GitLab's documented endpoint sends it
    before = world.serve.ticks()
    world.pusher.push_image(REPOSITORY, "latest")
    wait_until(lambda: world.metric("targeted") >= 1, 30, "the push's targeted pass")
    # The pass's HEAD is a pull: the registry notifies it, the receiver ignores it.
    wait_until(partial(passed, world.serve, before), 30, "the push's pass")
    wait_until(lambda: world.metric("ignored") >= 1, 30, "a pull notification answered")
    passes = world.serve.ticks()
    assert passes == before + 1
    ignored = world.metric("ignored")
    # More pulls (a HEAD each, as a kubelet's or autoroll's): each notified, none a pass.
    for _ in range(3):
        world.pusher.session.head(
            f"{world.registry.url}/v2/{REPOSITORY}/manifests/latest",
            headers={"Accept": "application/vnd.oci.image.manifest.v1+json"},
            timeout=5,
        )
    wait_until(lambda: world.metric("ignored") >= ignored + 3, 30, "three pulls notified")
    assert world.serve.ticks() == passes
    assert world.metric("targeted") == 1


def test_a_wrong_token_in_the_registrys_endpoint_is_refused_and_starts_nothing(
    world: World,
) -> None:
    world.notify("Bearer not-the-token-0123456789abcdef")
    passes = world.serve.ticks()
    world.pusher.push_image(REPOSITORY, "latest")
    # The registry retries a refused delivery: each attempt is counted, none is acted on.
    wait_until(lambda: world.metric("bad-signature") >= 2, 30, "refused deliveries")
    assert world.metric("targeted") == 0
    assert world.serve.ticks() == passes
    assert world.api.deletes == []
    assert "not-the-token" not in world.serve.output()
    assert TOKEN not in world.serve.output()


def test_a_delivery_naming_another_digest_only_scopes_a_pass_the_registry_decides(
    world: World,
) -> None:
    """An authentic envelope (the right token) whose event names a digest the tag does not
    hold: the targeted pass asks the registry (HEAD), finds the pods on the tag's digest, and
    deletes nothing. A body's digest is never read."""
    passes = world.serve.ticks()
    envelope = {
        "events": [
            {
                "action": "push",
                "target": {
                    "mediaType": "application/vnd.oci.image.manifest.v1+json",
                    "digest": "sha256:" + "ee" * 32,
                    "repository": REPOSITORY,
                    "tag": "latest",
                },
                "request": {"host": world.registry.host, "method": "PUT"},
            }
        ]
    }
    answer = requests.post(
        f"{world.serve.url}/webhook/distribution",
        json=envelope,
        headers={"Authorization": f"Bearer {TOKEN}"},
        timeout=5,
    )
    assert answer.text == f"targeted pass requested for {world.registry.host}/{REPOSITORY}:latest\n"
    wait_until(partial(passed, world.serve, passes), 30, "the targeted pass")
    assert world.api.deletes == []
