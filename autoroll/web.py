"""The HTTP edge: ``/livez``, ``/readyz``, ``/metrics`` and the signed ``/webhook``.

Nothing is built at import time; ``create_app`` receives everything it serves (the nudge,
the metrics, the secret, the two health checks), so the gunicorn worker, the tests and
nothing else decide what exists.

The probes answer from the reconcile loop, not from the HTTP server being up: ``/livez`` is
503 once no pass has finished within the worker's liveness bound (a hung loop: the kubelet
restarts the container), ``/readyz`` is 503 while shutting down or when the reconcile thread
is not running. ``/healthz`` is kept for probes configured before they existed and answers
as ``/livez`` does. Each answer's body says why, for the kubelet's event.

The webhook is a doorbell, not a message: the body is authenticated and then ignored. A
valid signature only nudges the worker (the same full pass the poll timer runs), so the
worst a holder of the secret can do is cause one extra no-op pass. The handler never waits
on the reconciler, so it answers in milliseconds whatever a pass is doing (Forgejo gives up
after 5 s and does not retry).

Signature headers accepted, each the lowercase hex HMAC-SHA256 of the raw body:
``X-Forgejo-Signature``, ``X-Gitea-Signature`` and ``X-Hub-Signature-256`` (``sha256=<hex>``).
A request is accepted when any non-empty one of them matches; every comparison is
constant-time.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Callable
from typing import Final

from flask import Flask, Response, request
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from werkzeug.exceptions import RequestEntityTooLarge

from autoroll.metrics import Metrics
from autoroll.worker import Health

#: Largest webhook body read, in bytes. Forgejo package events are a few KiB.
MAX_BODY_BYTES: Final = 1024 * 1024

_PLAIN_HEADERS: Final = ("X-Forgejo-Signature", "X-Gitea-Signature")
_HUB_HEADER: Final = "X-Hub-Signature-256"
_HUB_PREFIX: Final = "sha256="


def signature_valid(secret: bytes, body: bytes, headers: dict[str, str]) -> bool:
    """Does any provided signature header carry HMAC-SHA256(secret, body) in hex?

    Pure, so the whole policy is testable without a request. ``headers`` maps the header
    names above to their raw values (absent names may be missing).
    """
    expected = hmac.new(secret, body, hashlib.sha256).hexdigest().encode("ascii")
    candidates: list[str] = [headers.get(name, "").strip() for name in _PLAIN_HEADERS]
    hub = headers.get(_HUB_HEADER, "").strip()
    if hub[: len(_HUB_PREFIX)].lower() == _HUB_PREFIX:
        candidates.append(hub[len(_HUB_PREFIX) :])
    valid = False
    for candidate in candidates:
        if not candidate:
            continue
        given = candidate.lower().encode("ascii", errors="replace")
        # No early exit: every provided header is compared, in constant time.
        valid = hmac.compare_digest(expected, given) or valid
    return valid


def create_app(
    *,
    webhook_secret: str,
    nudge: Callable[[], None],
    metrics: Metrics,
    live: Callable[[], Health],
    ready: Callable[[], Health],
) -> Flask:
    """Build the Flask app. ``nudge`` must return immediately (``Nudge.nudge`` does)."""
    if not webhook_secret:
        # An empty key makes every signature forgeable; refuse rather than serve it.
        raise ValueError("webhook_secret must not be empty")
    secret = webhook_secret.encode("utf-8")

    app = Flask("autoroll")
    # Werkzeug enforces this on any stream it wraps; the handler also checks explicitly.
    app.config["MAX_CONTENT_LENGTH"] = MAX_BODY_BYTES

    @app.get("/livez")
    @app.get("/healthz")
    def livez() -> Response:
        return _probe(live())

    @app.get("/readyz")
    def readyz() -> Response:
        return _probe(ready())

    @app.get("/metrics")
    def metrics_text() -> Response:
        return Response(
            generate_latest(metrics.registry),
            status=200,
            mimetype=None,
            content_type=CONTENT_TYPE_LATEST,
        )

    @app.post("/webhook")
    def webhook() -> Response:
        body = _read_capped_body()
        if body is None:
            metrics.webhook_requests.labels(outcome="too-large").inc()
            return _answer(413, f"body larger than {MAX_BODY_BYTES} bytes")
        headers = {name: request.headers.get(name, "") for name in (*_PLAIN_HEADERS, _HUB_HEADER)}
        if not any(value.strip() for value in headers.values()):
            metrics.webhook_requests.labels(outcome="missing-signature").inc()
            return _answer(403, "missing signature")
        if not signature_valid(secret, body, headers):
            metrics.webhook_requests.labels(outcome="bad-signature").inc()
            return _answer(403, "bad signature")
        nudge()
        metrics.webhook_requests.labels(outcome="accepted").inc()
        return _answer(202, "reconcile requested")

    return app


def _read_capped_body() -> bytes | None:
    """The raw body, or None when it is larger than ``MAX_BODY_BYTES``.

    A declared Content-Length over the cap is refused before a byte is read; a chunked
    body is read at most one byte past the cap, never in full.
    """
    declared = request.content_length
    if declared is not None and declared > MAX_BODY_BYTES:
        return None
    stream = request.stream
    chunks: list[bytes] = []
    total = 0
    try:
        while True:
            # Reads may come back short (sockets); loop until EOF or one byte past the cap.
            chunk = stream.read(min(64 * 1024, MAX_BODY_BYTES + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
            if total > MAX_BODY_BYTES:
                return None
    except RequestEntityTooLarge:
        return None
    return b"".join(chunks)


def _probe(health: Health) -> Response:
    return _answer(
        200 if health.ok else 503, ("ok: " if health.ok else "failing: ") + health.detail
    )


def _answer(status: int, text: str) -> Response:
    return Response(text + "\n", status=status, mimetype="text/plain")
