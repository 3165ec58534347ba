"""The HTTP edge through Flask's test client: signatures, body cap, health and metrics."""

from __future__ import annotations

import hashlib
import hmac
import io
import json
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from urllib.parse import urlencode

import pytest
from flask import Flask
from flask.testing import FlaskClient
from prometheus_client import CollectorRegistry

from autoroll.controller.worker import Health, Nudge, Worker
from autoroll.core.scope import FULL, ImageTag, Scope
from autoroll.edge.web import (
    FORM_ENCODED_HINT,
    MAX_BODY_BYTES,
    create_app,
    form_payload,
    is_signed,
    signature_valid,
)
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


@pytest.fixture
def app(metrics: Metrics, nudge: CountingNudge, live: Probe, ready: Probe) -> Flask:
    return create_app(
        webhook_secret=SECRET,
        nudge=nudge,
        metrics=metrics,
        live=live,
        ready=ready,
        forgejo_host="forgejo.example",
    )


@pytest.fixture
def client(app: Flask) -> FlaskClient:
    return app.test_client()


def outcome(metrics: Metrics, name: str) -> float:
    return (
        metrics.registry.get_sample_value(
            "autoroll_webhook_requests_total", {"source": "forgejo", "outcome": name}
        )
        or 0
    )


@pytest.mark.parametrize(
    ("header", "value"),
    [
        ("X-Forgejo-Signature", sign(BODY)),
        ("X-Gitea-Signature", sign(BODY)),
        ("X-Hub-Signature-256", f"sha256={sign(BODY)}"),
        ("X-Forgejo-Signature", sign(BODY).upper()),
    ],
)
def test_a_valid_signature_is_accepted_and_nudges_once(
    client: FlaskClient, nudge: CountingNudge, metrics: Metrics, header: str, value: str
) -> None:
    response = client.post("/webhook", data=BODY, headers={header: value})
    assert response.status_code == 202
    assert nudge.count == 1
    assert outcome(metrics, "accepted") == 1


@pytest.mark.parametrize(
    ("headers", "reason"),
    [
        ({}, "missing-signature"),
        ({"X-Forgejo-Signature": ""}, "missing-signature"),
        ({"X-Forgejo-Signature": "   "}, "missing-signature"),
        ({"X-Forgejo-Signature": sign(BODY, "other-secret")}, "bad-signature"),
        ({"X-Gitea-Signature": sign(BODY + b" ")}, "bad-signature"),
        ({"X-Forgejo-Signature": sign(BODY)[:-1]}, "bad-signature"),
        ({"X-Forgejo-Signature": "zz" * 32}, "bad-signature"),
        ({"X-Forgejo-Signature": "ä" * 64}, "bad-signature"),
        # The hub header without its sha256= form is not accepted.
        ({"X-Hub-Signature-256": sign(BODY)}, "bad-signature"),
        ({"X-Hub-Signature-256": f"sha1={sign(BODY)}"}, "bad-signature"),
        ({"X-Hub-Signature-256": "sha256= "}, "missing-signature"),
        ({"X-Hub-Signature-256": "SHA256="}, "missing-signature"),
        # What Gitea (and Forgejo) send for a hook saved without a secret.
        (
            {
                "X-Gitea-Signature": "",
                "X-Gogs-Signature": "",
                "X-Hub-Signature": "sha1=",
                "X-Hub-Signature-256": "sha256=",
            },
            "missing-signature",
        ),
        ({"X-Hub-Signature-256": "sha256=", "X-Gitea-Signature": "00"}, "bad-signature"),
        # A signature in an unrecognised header does not count.
        ({"X-Signature": sign(BODY)}, "missing-signature"),
    ],
)
def test_a_missing_empty_or_wrong_signature_is_403_and_no_nudge(
    client: FlaskClient,
    nudge: CountingNudge,
    metrics: Metrics,
    headers: dict[str, str],
    reason: str,
) -> None:
    response = client.post("/webhook", data=BODY, headers=headers)
    assert response.status_code == 403
    assert nudge.count == 0
    assert outcome(metrics, reason) == 1
    assert outcome(metrics, "accepted") == 0


def test_the_signature_covers_the_raw_bytes_not_parsed_json(
    client: FlaskClient, nudge: CountingNudge
) -> None:
    reformatted = b'{"action": "created", "package": {"name": "app", "version": "latest"}}'
    response = client.post(
        "/webhook",
        data=reformatted,
        headers={"X-Forgejo-Signature": sign(BODY), "Content-Type": "application/json"},
    )
    assert response.status_code == 403
    assert nudge.count == 0


DIGEST = "sha256:" + "ab" * 32


def package_event(version: object, kind: object = "container") -> bytes:
    return json.dumps(
        {"action": "created", "package": {"type": kind, "name": "app", "version": version}}
    ).encode()


def test_a_signed_digest_version_event_is_202_without_a_nudge(
    client: FlaskClient, nudge: CountingNudge, metrics: Metrics
) -> None:
    body = package_event(DIGEST)
    response = client.post("/webhook", data=body, headers={"X-Gitea-Signature": sign(body)})
    assert response.status_code == 202
    assert nudge.count == 0
    assert outcome(metrics, "digest-version") == 1
    assert outcome(metrics, "accepted") == 0


GITEA = Path(__file__).parent / "data"


def test_a_signed_container_tag_event_nudges_a_pass_targeted_at_that_tag(
    client: FlaskClient, nudge: CountingNudge, metrics: Metrics
) -> None:
    body = (GITEA / "gitea-1.27-package-tag-user.json").read_bytes()  # as Gitea sent it
    response = client.post("/webhook", data=body, headers={"X-Gitea-Signature": sign(body)})
    assert response.status_code == 202
    assert response.text == "targeted pass requested for forgejo.example/team-owner/my-app:latest\n"
    assert nudge.scopes == [
        Scope.of([ImageTag.named("forgejo.example", "team-owner/my-app", "latest")])
    ]
    assert (outcome(metrics, "targeted"), outcome(metrics, "accepted")) == (1, 0)


@pytest.mark.parametrize(
    "body",
    [b"{}", b"not json", package_event("latest", kind="npm"), BODY],
    ids=["empty-object", "not-json", "npm-package", "no-type"],
)
def test_a_signed_body_naming_no_tag_nudges_a_full_pass(
    client: FlaskClient, nudge: CountingNudge, metrics: Metrics, body: bytes
) -> None:
    response = client.post("/webhook", data=body, headers={"X-Forgejo-Signature": sign(body)})
    assert (response.status_code, response.text) == (202, "reconcile requested\n")
    assert nudge.scopes == [FULL]
    assert (outcome(metrics, "targeted"), outcome(metrics, "accepted")) == (0, 1)


def test_a_tag_event_with_a_bad_signature_nudges_nothing(
    client: FlaskClient, nudge: CountingNudge, metrics: Metrics
) -> None:
    body = (GITEA / "gitea-1.27-package-tag-org.json").read_bytes()
    response = client.post("/webhook", data=body, headers={"X-Gitea-Signature": "00" * 32})
    assert response.status_code == 403
    assert nudge.scopes == []
    assert outcome(metrics, "targeted") == 0


def test_an_unsigned_digest_version_event_is_still_403(
    client: FlaskClient, nudge: CountingNudge, metrics: Metrics
) -> None:
    body = package_event(DIGEST)
    response = client.post("/webhook", data=body, headers={"X-Gitea-Signature": "00" * 32})
    assert response.status_code == 403
    assert outcome(metrics, "digest-version") == 0


FORM = "application/x-www-form-urlencoded"


def form_body(payload: bytes) -> bytes:
    """What Gitea posts for a form hook: ``payload=<the JSON, url-encoded>``."""
    return urlencode({"payload": payload.decode()}).encode()


def test_a_form_delivery_signed_over_its_payload_field_is_told_to_use_json(
    client: FlaskClient,
    nudge: CountingNudge,
    metrics: Metrics,
    caplog: pytest.LogCaptureFixture,
) -> None:
    response = client.post(
        "/webhook",
        data=form_body(BODY),
        headers={"X-Gitea-Signature": sign(BODY), "Content-Type": FORM},
    )
    assert response.status_code == 403
    assert response.get_data(as_text=True) == FORM_ENCODED_HINT + "\n"
    assert "application/json" in FORM_ENCODED_HINT
    assert nudge.count == 0
    assert outcome(metrics, "form-encoded") == 1
    assert outcome(metrics, "bad-signature") == 0
    (record,) = [r for r in caplog.records if r.name == "autoroll.edge.web"]
    assert record.levelname == "WARNING"
    assert "set the webhook's POST content type to application/json" in record.getMessage()


@pytest.mark.parametrize(
    ("content_type", "body", "signed_over"),
    [
        # The wrong secret: a plain bad signature, whatever the content type.
        (FORM, form_body(BODY), b"other"),
        # Signed over the payload, but not declared as a form.
        ("application/json", form_body(BODY), BODY),
        ("text/plain", form_body(BODY), BODY),
    ],
)
def test_other_failed_signatures_stay_bad_signature(
    client: FlaskClient, metrics: Metrics, content_type: str, body: bytes, signed_over: bytes
) -> None:
    response = client.post(
        "/webhook",
        data=body,
        headers={"X-Gitea-Signature": sign(signed_over), "Content-Type": content_type},
    )
    assert response.status_code == 403
    assert response.get_data(as_text=True) == "bad signature\n"
    assert outcome(metrics, "bad-signature") == 1


def test_a_form_body_signed_over_its_raw_bytes_is_accepted(
    client: FlaskClient, nudge: CountingNudge
) -> None:
    # curl --data sends this content type; a signature over the raw body is what counts.
    body = form_body(BODY)
    response = client.post(
        "/webhook", data=body, headers={"X-Forgejo-Signature": sign(body), "Content-Type": FORM}
    )
    assert response.status_code == 202
    assert nudge.count == 1


@pytest.mark.parametrize(
    ("content_type", "body", "expected"),
    [
        (FORM, b"payload=%7B%7D", b"{}"),
        (f"{FORM}; charset=utf-8", b"payload=%7B%7D", b"{}"),
        ("APPLICATION/X-WWW-FORM-URLENCODED", b"payload=%7B%7D", b"{}"),
        (FORM, b"payload=%E2%9C%93", "\u2713".encode()),
        ("application/json", b"payload=%7B%7D", None),
        (FORM, b"payload=a&payload=b", None),  # two payloads: which was signed?
        (FORM, b"other=x", None),
        (FORM, b"&&&not a form", None),
        (FORM, "payload=\u2713".encode(), None),  # not url-encoded
        (FORM, b"&".join(b"k%d=v" % k for k in range(17)) + b"&payload=x", None),
    ],
)
def test_form_payload_reads_one_payload_field_of_a_form_only(
    content_type: str, body: bytes, expected: bytes | None
) -> None:
    assert form_payload(content_type, body) == expected


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({}, False),
        ({"X-Gitea-Signature": " "}, False),
        ({"X-Hub-Signature-256": "sha256="}, False),
        ({"X-Hub-Signature-256": "sha1=ab"}, True),
        ({"X-Hub-Signature-256": "sha256=ab"}, True),
        ({"X-Forgejo-Signature": "ab"}, True),
        ({"X-Gitea-Signature": "ab"}, True),
    ],
)
def test_is_signed(headers: dict[str, str], expected: bool) -> None:
    assert is_signed(headers) is expected


def test_an_unreadable_payload_still_nudges(client: FlaskClient, nudge: CountingNudge) -> None:
    junk = b"\xff\xfe not json at all {{{"
    response = client.post(
        "/webhook",
        data=junk,
        headers={"X-Forgejo-Signature": sign(junk), "Content-Type": "application/json"},
    )
    assert response.status_code == 202
    assert nudge.count == 1


def test_an_empty_body_can_still_be_signed(client: FlaskClient, nudge: CountingNudge) -> None:
    response = client.post("/webhook", data=b"", headers={"X-Forgejo-Signature": sign(b"")})
    assert response.status_code == 202
    assert nudge.count == 1


def test_a_body_of_exactly_one_mib_is_read(client: FlaskClient, nudge: CountingNudge) -> None:
    body = b"a" * MAX_BODY_BYTES
    response = client.post("/webhook", data=body, headers={"X-Forgejo-Signature": sign(body)})
    assert response.status_code == 202
    assert nudge.count == 1


def call_raw(app: Flask, stream: io.RawIOBase, **extra: str) -> str:
    """Drive the WSGI app with a hand-made input stream; return the status line."""
    environ: dict[str, object] = {
        "REQUEST_METHOD": "POST",
        "PATH_INFO": "/webhook",
        "SERVER_NAME": "localhost",
        "SERVER_PORT": "80",
        "SERVER_PROTOCOL": "HTTP/1.1",
        "wsgi.url_scheme": "http",
        "wsgi.input": stream,
        "HTTP_X_FORGEJO_SIGNATURE": "00" * 32,
        **extra,
    }
    statuses: list[str] = []

    def start_response(status: str, headers: object, exc_info: object = None) -> None:
        statuses.append(status)

    b"".join(app.wsgi_app(environ, start_response))  # type: ignore[arg-type]
    return statuses[0]


class Endless(io.RawIOBase):
    """A body that would never end; counts what was taken from it."""

    def __init__(self) -> None:
        self.served = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: bytearray) -> int:  # type: ignore[override]
        n = min(len(buffer), 4096)  # short reads, like a socket
        buffer[:n] = b"a" * n
        self.served += n
        return n


def test_a_declared_length_over_one_mib_is_413_before_reading(
    app: Flask, nudge: CountingNudge, metrics: Metrics
) -> None:
    stream = Endless()
    status = call_raw(app, stream, CONTENT_LENGTH=str(MAX_BODY_BYTES + 1))
    assert status.startswith("413")
    assert stream.served == 0
    assert nudge.count == 0
    assert outcome(metrics, "too-large") == 1


def test_a_chunked_body_over_one_mib_is_413_without_reading_it_all(
    app: Flask, nudge: CountingNudge
) -> None:
    stream = Endless()
    # gunicorn marks de-chunked bodies as terminated by the server.
    status = call_raw(app, stream, **{"wsgi.input_terminated": "1"})
    assert status.startswith("413")
    assert nudge.count == 0
    assert stream.served <= MAX_BODY_BYTES + 64 * 1024


@pytest.mark.parametrize(
    "headers",
    [
        {"HTTP_X_FORGEJO_SIGNATURE": ""},  # no header carries a signature
        {"HTTP_X_FORGEJO_SIGNATURE": "", "HTTP_X_HUB_SIGNATURE_256": "sha256="},
        {"HTTP_X_FORGEJO_SIGNATURE": "", "CONTENT_LENGTH": str(MAX_BODY_BYTES)},
        {"HTTP_X_FORGEJO_SIGNATURE": "", "wsgi.input_terminated": "1"},  # chunked
    ],
)
def test_an_unsigned_request_is_403_before_a_byte_of_its_body_is_read(
    app: Flask, nudge: CountingNudge, metrics: Metrics, headers: dict[str, str]
) -> None:
    stream = Endless()
    status = call_raw(app, stream, **headers)
    assert status.startswith("403")
    assert stream.served == 0
    assert nudge.count == 0
    assert outcome(metrics, "missing-signature") == 1


def test_a_body_arriving_in_short_reads_is_read_whole(app: Flask, nudge: CountingNudge) -> None:
    body = b"b" * 100_000

    class Trickle(io.RawIOBase):
        def __init__(self) -> None:
            self.buffer = io.BytesIO(body)

        def readable(self) -> bool:
            return True

        def readinto(self, buffer: bytearray) -> int:  # type: ignore[override]
            chunk = self.buffer.read(min(len(buffer), 1000))
            buffer[: len(chunk)] = chunk
            return len(chunk)

    status = call_raw(
        app, Trickle(), CONTENT_LENGTH=str(len(body)), HTTP_X_FORGEJO_SIGNATURE=sign(body)
    )
    assert status.startswith("202")
    assert nudge.count == 1


def test_healthz_is_200(client: FlaskClient) -> None:
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.data == b"ok\n"  # the old probe's answer, for what reads it


@pytest.mark.parametrize("path", ["/livez", "/healthz"])
def test_liveness_follows_the_reconcile_loop(client: FlaskClient, live: Probe, path: str) -> None:
    assert client.get(path).status_code == 200
    live.health = Health(False, "no reconcile pass finished for 500s (bound 460s)")
    response = client.get(path)
    assert response.status_code == 503
    assert b"no reconcile pass finished for 500s" in response.data


def test_readiness_is_its_own_check(client: FlaskClient, live: Probe, ready: Probe) -> None:
    ready.health = Health(False, "shutting down")
    assert client.get("/readyz").status_code == 503
    assert client.get("/livez").status_code == 200  # a shutting-down pod is not restarted
    ready.health = Health(True, "the reconcile thread is running")
    live.health = Health(False, "stuck")
    assert client.get("/readyz").status_code == 200


def test_metrics_serves_the_injected_registry_as_prometheus_text(
    client: FlaskClient, metrics: Metrics
) -> None:
    metrics.deletions.labels(mode="dry", kind="deployment").inc(3)
    client.post("/webhook", data=BODY)
    response = client.get("/metrics")
    assert response.status_code == 200
    assert response.content_type.startswith("text/plain")
    text = response.get_data(as_text=True)
    assert 'autoroll_pod_deletions_total{kind="deployment",mode="dry"} 3.0' in text
    assert (
        'autoroll_webhook_requests_total{outcome="missing-signature",source="forgejo"} 1.0' in text
    )
    # Only the injected registry: nothing from the process-global default one.
    assert "python_gc_objects_collected_total" not in text


def test_get_on_webhook_is_not_allowed(client: FlaskClient, nudge: CountingNudge) -> None:
    assert client.get("/webhook").status_code == 405
    assert nudge.count == 0


def test_an_empty_secret_is_refused(metrics: Metrics) -> None:
    with pytest.raises(ValueError, match="must not be empty"):
        create_app(
            webhook_secret="",
            nudge=lambda scope: None,
            metrics=metrics,
            live=lambda: Health(True, ""),
            ready=lambda: Health(True, ""),
            forgejo_host="forgejo.example",
        )


def test_signature_valid_accepts_any_matching_header_and_rejects_none() -> None:
    key = SECRET.encode()
    good = sign(BODY)
    assert signature_valid(key, BODY, {"X-Gitea-Signature": good, "X-Forgejo-Signature": "bad"})
    assert not signature_valid(key, BODY, {})
    assert not signature_valid(key, BODY, {"X-Forgejo-Signature": ""})


@pytest.fixture
def busy_worker(metrics: Metrics) -> Iterator[tuple[Worker, Nudge, threading.Event]]:
    """A real worker whose pass is stuck until the test ends."""
    release = threading.Event()
    entered = threading.Event()

    def tick(stopping: Callable[[], bool], scope: Scope) -> None:
        entered.set()
        release.wait(10)

    nudge = Nudge(metrics)
    worker = Worker(tick, nudge=nudge, interval_seconds=3600, metrics=metrics)
    worker.start()
    assert entered.wait(5)
    yield worker, nudge, release
    release.set()
    worker.stop(timeout=5)


def test_the_webhook_answers_in_milliseconds_while_a_pass_is_stuck(
    busy_worker: tuple[Worker, Nudge, threading.Event], metrics: Metrics
) -> None:
    _, nudge, _ = busy_worker
    worker, _, _ = busy_worker
    client = create_app(
        webhook_secret=SECRET,
        nudge=nudge.nudge,
        metrics=metrics,
        live=worker.liveness,
        ready=worker.readiness,
        forgejo_host="forgejo.example",
    ).test_client()
    started = time.monotonic()
    for _ in range(20):
        response = client.post("/webhook", data=BODY, headers={"X-Forgejo-Signature": sign(BODY)})
        assert response.status_code == 202
    elapsed = (time.monotonic() - started) / 20
    assert elapsed < 0.05, f"{elapsed * 1000:.1f} ms per webhook while the reconciler is busy"
    assert nudge.pending
