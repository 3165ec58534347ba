"""The HTTP edge: ``/livez``, ``/readyz``, ``/metrics`` and the signed ``/webhook``.

Nothing is built at import time; ``create_app`` receives everything it serves (the nudge,
the metrics, the secret, the two health checks), so the gunicorn worker, the tests and
nothing else decide what exists.

The probes answer from the reconcile loop, not from the HTTP server being up: ``/livez`` is
503 once no pass has finished within the worker's liveness bound (a hung loop: the kubelet
restarts the container), ``/readyz`` is 503 while shutting down or when the reconcile thread
is not running. ``/healthz`` is kept for probes configured before they existed: the same check
as ``/livez``, and ``ok`` as its healthy answer, as before. Each failing answer's body says
why, for the kubelet's event.

The webhook is a doorbell that may say which door. A request without any signature header is
refused before its body is read (``missing-signature``); a signed one is read within
``MAX_BODY_BYTES``, and read for meaning only after the signature checked out, and then only
for *which tag to look at* (``autoroll.core.webhook_body``): a Forgejo/Gitea ``container`` package
event for a tag nudges a pass targeted at the workloads using that repository and tag
(``targeted``); one for a digest version (a platform manifest of a multi-arch push, delivered
just before the tag's own event) is answered 202 without a nudge (``digest-version``); anything
else nudges a full pass, as the poll timer runs (``accepted``). The digest is never taken from
the body: the pass asks the registry, and decides on a fresh read of the cluster. So the worst
a holder of the secret can do is cause passes the poll would run anyway. The handler never
waits on the reconciler, so it answers in milliseconds whatever a pass is doing (Forgejo gives
up after 5 s and does not retry).

Signature headers accepted, each the lowercase hex HMAC-SHA256 of the raw body:
``X-Forgejo-Signature``, ``X-Gitea-Signature`` and ``X-Hub-Signature-256`` (``sha256=<hex>``).
A request is accepted when any non-empty one of them matches; every comparison is
constant-time. A header with nothing after its prefix carries no signature: a hook saved
without a secret still sends ``X-Gitea-Signature: ""`` and ``X-Hub-Signature-256: sha256=``,
and that delivery is unsigned (``missing-signature``), not wrongly signed.

Forgejo and Gitea sign the JSON payload, also when a hook posts it form-encoded
(``payload=<json>``), so such a delivery can never match the raw body. When its ``payload``
field carries a valid signature, the 403 says so (``form-encoded``) and a warning tells the
user to choose the JSON content type; the body is still not acted on.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
from collections.abc import Callable, Mapping
from typing import Final
from urllib.parse import parse_qs

from flask import Flask, Response, request
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from autoroll.controller.loop_health import Health
from autoroll.core.pushed import tags_of
from autoroll.core.receivers.sources import Source
from autoroll.core.scope import FULL, Scope
from autoroll.core.webhook_body import MAX_BODY_BYTES, BodyKind, BodyReading, read_body
from autoroll.edge.bodies import answer, read_capped_body
from autoroll.edge.receivers import Receiving, add_receivers
from autoroll.instruments.metrics import Metrics

_PLAIN_HEADERS: Final = ("X-Forgejo-Signature", "X-Gitea-Signature")
_HUB_HEADER: Final = "X-Hub-Signature-256"
_HUB_PREFIX: Final = "sha256="
_FORM_TYPE: Final = "application/x-www-form-urlencoded"
#: This route's label in ``autoroll_webhook_requests_total{source}``.
FORGEJO: Final = str(Source.FORGEJO)
#: What a form-encoded delivery is told (the 403 body and the warning).
FORM_ENCODED_HINT: Final = (
    "form-encoded delivery: Forgejo and Gitea sign the JSON payload, not the form body;"
    " set the webhook's POST content type to application/json"
)

log = logging.getLogger(__name__)

#: ``MAX_BODY_BYTES`` is the body reader's (``autoroll.core.webhook_body``), re-exported here.
__all__ = [
    "FORM_ENCODED_HINT",
    "MAX_BODY_BYTES",
    "create_app",
    "form_payload",
    "is_signed",
    "signature_valid",
]


def is_signed(headers: Mapping[str, str]) -> bool:
    """Does any signature header carry something? ``sha256=`` alone carries nothing."""
    if any(headers.get(name, "").strip() for name in _PLAIN_HEADERS):
        return True
    hub = headers.get(_HUB_HEADER, "").strip()
    return bool(hub) and hub.lower() != _HUB_PREFIX


def signature_valid(secret: bytes, body: bytes, headers: Mapping[str, str]) -> bool:
    """Does any provided signature header carry HMAC-SHA256(secret, body) in hex?

    Pure, so the whole policy is testable without a request. ``headers`` maps the header
    names above to their raw values (absent names may be missing).
    """
    expected = hmac.new(secret, body, hashlib.sha256).hexdigest().encode("ascii")
    candidates: list[str] = [headers.get(name, "").strip() for name in _PLAIN_HEADERS]
    hub = headers.get(_HUB_HEADER, "").strip()
    if hub[: len(_HUB_PREFIX)].lower() == _HUB_PREFIX:
        candidates.append(hub[len(_HUB_PREFIX) :].strip())
    valid = False
    for candidate in candidates:
        if not candidate:
            continue
        given = candidate.lower().encode("ascii", errors="replace")
        # No early exit: every provided header is compared, in constant time.
        valid = hmac.compare_digest(expected, given) or valid
    return valid


def form_payload(content_type: str, body: bytes) -> bytes | None:
    """The ``payload`` field of a form-encoded body (what Forgejo signs), else None.

    Only read to explain a refusal: a form delivery whose field verifies was sent by a
    hook with the right secret and the wrong content type.
    """
    if content_type.partition(";")[0].strip().lower() != _FORM_TYPE:
        return None
    try:
        fields = parse_qs(body.decode("ascii"), strict_parsing=True, max_num_fields=16)
    except (UnicodeDecodeError, ValueError):
        return None
    values = fields.get("payload", [])
    return values[0].encode("utf-8") if len(values) == 1 else None


def create_app(
    *,
    webhook_secret: str,
    nudge: Callable[[Scope], None],
    metrics: Metrics,
    live: Callable[[], Health],
    ready: Callable[[], Health],
    forgejo_host: str | None,
    receiving: Receiving | None = None,
    later: Callable[[Scope, float], None] | None = None,
    exposition: Callable[[], bytes] | None = None,
) -> Flask:
    """Build the Flask app. ``nudge(scope)`` must return immediately (``Nudge.nudge`` does).

    ``forgejo_host`` is the registry host a Forgejo package event's tag is on (None: no
    Forgejo is configured, so such an event asks for a full pass). ``receiving`` says which
    registries' receivers are on (``autoroll.edge.receivers``); without it every
    ``/webhook/<source>`` answers that its receiver is off. ``later(scope, seconds)`` asks for
    a pass that many seconds from now (``Nudge.nudge_in``), for their re-checks.
    ``/metrics`` serves ``exposition()`` (the reconcile process's metrics with this process's
    webhook counters, under ``autoroll serve``), else ``metrics``' registry."""
    if not webhook_secret:
        # An empty key makes every signature forgeable; refuse rather than serve it.
        raise ValueError("webhook_secret must not be empty")
    secret = webhook_secret.encode("utf-8")

    app = Flask("autoroll")
    # Werkzeug enforces this on any stream it wraps; the handler also checks explicitly.
    app.config["MAX_CONTENT_LENGTH"] = MAX_BODY_BYTES

    _add_probes_and_metrics(
        app,
        live=live,
        ready=ready,
        exposition=exposition or (lambda: generate_latest(metrics.registry)),
    )
    add_receivers(
        app, receiving=receiving or Receiving(), nudge=nudge, metrics=metrics, later=later
    )

    @app.post("/webhook")
    def webhook() -> Response:
        headers = {name: request.headers.get(name, "") for name in (*_PLAIN_HEADERS, _HUB_HEADER)}
        if not is_signed(headers):
            # Refused before a byte of the body is read: an unsigned sender costs nothing
            # more than its headers (gunicorn drains at most 64 KiB of what is left).
            metrics.webhook_requests.labels(source=FORGEJO, outcome="missing-signature").inc()
            return answer(403, "missing signature")
        body = read_capped_body()
        if body is None:
            metrics.webhook_requests.labels(source=FORGEJO, outcome="too-large").inc()
            return answer(413, f"body larger than {MAX_BODY_BYTES} bytes")
        if not signature_valid(secret, body, headers):
            payload = form_payload(request.headers.get("Content-Type", ""), body)
            if payload is not None and signature_valid(secret, payload, headers):
                metrics.webhook_requests.labels(source=FORGEJO, outcome="form-encoded").inc()
                log.warning(
                    "webhook refused: %s",
                    FORM_ENCODED_HINT,
                    extra={"event": "webhook", "reason": "form-encoded"},
                )
                return answer(403, FORM_ENCODED_HINT)
            metrics.webhook_requests.labels(source=FORGEJO, outcome="bad-signature").inc()
            return answer(403, "bad signature")
        reading = (
            read_body(body)
            if forgejo_host
            else BodyReading(BodyKind.NOTHING, detail="no FORGEJO_HOST to name its tags")
        )
        home = forgejo_host or ""
        if reading.kind is BodyKind.DIGEST_VERSION:
            metrics.webhook_requests.labels(source=FORGEJO, outcome="digest-version").inc()
            return answer(202, "a digest version moves no tag; no pass")
        if reading.tag is not None:
            # A package event names no host: its tag is on the configured Forgejo, by definition.
            scope = tags_of([reading.tag], hosts=(home,), default_host=home)
            nudge(scope)
            metrics.webhook_requests.labels(source=FORGEJO, outcome="targeted").inc()
            return answer(202, f"targeted pass requested for {scope}")
        log.debug("webhook names no tag (%s): a full pass", reading.detail)
        nudge(FULL)
        metrics.webhook_requests.labels(source=FORGEJO, outcome="accepted").inc()
        return answer(202, "reconcile requested")

    return app


def _add_probes_and_metrics(
    app: Flask,
    *,
    live: Callable[[], Health],
    ready: Callable[[], Health],
    exposition: Callable[[], bytes],
) -> None:
    """``/livez`` (and its old name ``/healthz``), ``/readyz`` and ``/metrics``."""

    @app.get("/livez")
    def livez() -> Response:
        return _probe(live())

    @app.get("/healthz")
    def healthz() -> Response:
        # The old probe's answer ("ok") kept for what reads it; the check is /livez's.
        health = live()
        return answer(200, "ok") if health.ok else _probe(health)

    @app.get("/readyz")
    def readyz() -> Response:
        return _probe(ready())

    @app.get("/metrics")
    def metrics_text() -> Response:
        try:
            text = exposition()
        except Exception as exc:  # the reconcile process did not answer: say so, no trace
            log.warning("/metrics: %s", exc)
            return answer(503, f"metrics unavailable: {exc}")
        return Response(
            text,
            status=200,
            mimetype=None,
            content_type=CONTENT_TYPE_LATEST,
        )


def _probe(health: Health) -> Response:
    return answer(200 if health.ok else 503, ("ok: " if health.ok else "failing: ") + health.detail)
