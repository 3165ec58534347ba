"""The HTTP edge's app for tests through Flask's test client: a webhook secret and body, their
signature, a counting nudge, probes the test sets, and the fixtures that build the app
(``tests/unit/web/conftest.py`` imports ``app, client, live, metrics, nudge, ready``).
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Callable

import pytest
from flask import Flask
from flask.testing import FlaskClient
from prometheus_client import CollectorRegistry

from autoroll.controller.worker import Health, Nudge, Worker
from autoroll.core.scope import FULL, Scope
from autoroll.edge.web import create_app
from autoroll.instruments.metrics import Metrics

SECRET = "s3cret-webhook-key"
BODY = b'{"action":"created","package":{"name":"app","version":"latest"}}'


def sign(body: bytes, secret: str = SECRET) -> str:
    return hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


class CountingNudge:
    def __init__(self) -> None:
        self.count = 0
        self.scopes: list[Scope] = []

    def __call__(self, scope: Scope = FULL) -> None:
        self.count += 1
        self.scopes.append(scope)


@pytest.fixture
def metrics() -> Metrics:
    return Metrics(CollectorRegistry())


@pytest.fixture
def nudge() -> CountingNudge:
    return CountingNudge()


class Probe:
    """A health check whose answer the test sets."""

    def __init__(self) -> None:
        self.health = Health(True, "fine")

    def __call__(self) -> Health:
        return self.health


@pytest.fixture
def live() -> Probe:
    return Probe()


@pytest.fixture
def ready() -> Probe:
    return Probe()


def edge_app(
    nudge: Callable[[Scope], None],
    metrics: Metrics,
    live: Callable[[], Health],
    ready: Callable[[], Health],
    secret: str = SECRET,
) -> Flask:
    """The edge's app for ``forgejo.example`` with the given nudge, metrics and probes."""
    return create_app(
        webhook_secret=secret,
        nudge=nudge,
        metrics=metrics,
        live=live,
        ready=ready,
        forgejo_host="forgejo.example",
    )


@pytest.fixture
def app(metrics: Metrics, nudge: CountingNudge, live: Probe, ready: Probe) -> Flask:
    return edge_app(nudge, metrics, live, ready)


@pytest.fixture
def client(app: Flask) -> FlaskClient:
    return app.test_client()


def app_over(worker: Worker, nudge: Nudge, metrics: Metrics, secret: str = SECRET) -> FlaskClient:
    """The edge's test client in front of a real worker: the worker's nudge and its probes."""
    return edge_app(nudge.nudge, metrics, worker.liveness, worker.readiness, secret).test_client()


def outcome(metrics: Metrics, name: str) -> float:
    return (
        metrics.registry.get_sample_value(
            "autoroll_webhook_requests_total", {"source": "forgejo", "outcome": name}
        )
        or 0
    )
