"""The HTTP edge with the registries' receivers on, for the unit tests that drive it through
Flask's test client: an app per test (``edge``), and each source's documented delivery,
authenticated as its sender does it (``DELIVERIES``)."""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from flask.testing import FlaskClient
from prometheus_client import CollectorRegistry

from autoroll.controller.loop_health import Health
from autoroll.core.receivers.sources import RECEIVERS, Source
from autoroll.core.scope import ImageTag, Scope
from autoroll.edge.receivers import Receiving
from autoroll.edge.web import create_app
from autoroll.instruments.metrics import Metrics

DATA = Path(__file__).resolve().parents[1] / "unit" / "data" / "receivers"
LIVE_HOST = "127.0.0.1:25397"  # the registry the live deliveries came from
#: The lowercased headers a reader gets with a GitHub package event, a structured and a
#: batched CloudEvent.
GITHUB_EVENT = {"x-github-event": "package"}
STRUCTURED = {"content-type": "application/cloudevents+json"}
BATCHED = {"content-type": "application/cloudevents-batch+json"}
#: Every source its own secret, so a token used at another source's route is a wrong one.
SECRETS = {source: f"{source}-secret-0123456789abcdef" for source in RECEIVERS}
HOSTS = (LIVE_HOST, "hub.harbor.com", "ghcr.io", "docker.io", "quay.io", "demo.azurecr.io")


def doc(name: str) -> Any:
    """The fixture ``name`` as JSON."""
    return json.loads(fixture(name))


def encode(document: object) -> bytes:
    return json.dumps(document).encode()


def fixture(name: str) -> bytes:
    return (DATA / name).read_bytes()


def sign(body: bytes, secret: str) -> str:
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


class Nudges(list[Scope]):
    def __call__(self, scope: Scope) -> None:
        self.append(scope)


class Laters(list[tuple[Scope, float]]):
    """The passes asked for later (``Nudge.nudge_in``), with their delays."""

    def __call__(self, scope: Scope, seconds: float) -> None:
        self.append((scope, seconds))


@dataclass
class Edge:
    client: FlaskClient
    nudges: Nudges
    metrics: Metrics
    laters: Laters

    def outcome(self, source: Source, outcome: str) -> float:
        labels = {"source": str(source), "outcome": outcome}
        return (
            self.metrics.registry.get_sample_value("autoroll_webhook_requests_total", labels) or 0
        )


def edge(
    secrets: dict[Source, str] | None = None,
    *,
    hosts: tuple[str, ...] = HOSTS,
    default_host: str | None = LIVE_HOST,
) -> Edge:
    """The app with the receivers of ``secrets`` on (every one by default), reading the
    registries ``hosts``."""
    metrics, nudges, laters = Metrics(CollectorRegistry()), Nudges(), Laters()
    app = create_app(
        webhook_secret="forgejo-secret-0123456789",
        nudge=nudges,
        metrics=metrics,
        live=lambda: Health(True, ""),
        ready=lambda: Health(True, ""),
        forgejo_host=LIVE_HOST,
        receiving=Receiving(SECRETS if secrets is None else secrets, hosts, default_host),
        later=laters,
    )
    return Edge(app.test_client(), nudges, metrics, laters)


@dataclass(frozen=True)
class Delivery:
    """One source's delivery as its sender makes it: the body, its headers and its URL,
    authenticated with ``secret``."""

    source: Source
    body: bytes
    headers: Callable[[bytes, str], dict[str, str]]
    scope: Scope

    def url(self, secret: str) -> str:
        if self.source in (Source.DOCKERHUB, Source.QUAY):
            return f"/webhook/{self.source}/{secret}"
        return f"/webhook/{self.source}"

    def send(self, client: FlaskClient, secret: str | None = None) -> tuple[int, str]:
        secret = SECRETS[self.source] if secret is None else secret
        response = client.post(
            self.url(secret), data=self.body, headers=self.headers(self.body, secret)
        )
        return response.status_code, response.get_data(as_text=True)


def bearer(body: bytes, secret: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {secret}", "Content-Type": "application/json"}


def bare_token(body: bytes, secret: str) -> dict[str, str]:
    # GitLab's documented endpoint configures the token alone: Authorization: <token>.
    return {"Authorization": secret, "Content-Type": "application/json"}


def github(body: bytes, secret: str) -> dict[str, str]:
    return {"X-GitHub-Event": "package", "X-Hub-Signature-256": sign(body, secret)}


def generic(body: bytes, secret: str) -> dict[str, str]:
    return {"X-Signature": sign(body, secret), "Content-Type": "application/json"}


def cloud_batch(body: bytes, secret: str) -> dict[str, str]:
    return {
        "Authorization": f"Bearer {secret}",
        "Content-Type": "application/cloudevents-batch+json",
    }


def cloud(body: bytes, secret: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {secret}", "Content-Type": "application/cloudevents+json"}


def plain(body: bytes, secret: str) -> dict[str, str]:
    return {"Content-Type": "application/json"}


def ghcr_push() -> bytes:
    document = json.loads(fixture("github-octokit-package-published-docker.json"))
    document["package"]["package_version"]["container_metadata"]["tag"]["name"] = "latest"
    return json.dumps(document).encode()


def tags(*images: str) -> Scope:
    """The scope of ``host/repository:tag`` images."""
    return Scope.of(
        ImageTag.named(host, *rest.rsplit(":", 1))
        for host, rest in (image.split("/", 1) for image in images)
    )


DELIVERIES = [
    Delivery(
        Source.DISTRIBUTION,
        fixture("distribution-2.8.2-push-tag.json"),
        bearer,
        tags(f"{LIVE_HOST}/team/app:latest"),
    ),
    Delivery(
        Source.GITLAB,
        fixture("distribution-2.8.2-push-index-tag.json"),
        bare_token,
        tags(f"{LIVE_HOST}/team/multi:v1"),
    ),
    Delivery(
        Source.HARBOR,
        fixture("harbor-docs-push-artifact.json"),
        bearer,
        tags("hub.harbor.com/test-webhook/debian:latest"),
    ),
    Delivery(Source.GITHUB, ghcr_push(), github, tags("ghcr.io/codertocat/hello-world-npm:latest")),
    Delivery(
        Source.DOCKERHUB,
        fixture("dockerhub-docs-push.json"),
        plain,
        tags("docker.io/svendowideit/testhook:latest"),
    ),
    Delivery(
        Source.QUAY,
        fixture("quay-docs-repo-push.json"),
        plain,
        tags("quay.io/dgangaia/test:latest"),
    ),
    Delivery(
        Source.GENERIC,
        b'{"image": "127.0.0.1:25397/team/app:v2"}',
        generic,
        tags(f"{LIVE_HOST}/team/app:v2"),
    ),
    Delivery(
        Source.CLOUDEVENTS,
        fixture("acr-eventgrid-imagepushed.json"),
        cloud_batch,
        tags("demo.azurecr.io/aci-helloworld:v1"),
    ),
]
BY_SOURCE = {d.source: d for d in DELIVERIES}
IDS = [str(d.source) for d in DELIVERIES]
