"""The HTTP edge through Flask's test client: signatures, health and metrics.

The app and its fixtures are in ``tests.support.web_app``; package events, form bodies and the
body cap have their own modules (``test_web_package_events.py``, ``test_web_form_bodies.py``,
``test_web_body_cap.py``).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator

import pytest
from flask.testing import FlaskClient

from autoroll.controller.worker import Health, Nudge, Worker
from autoroll.core.scope import Scope
from autoroll.edge.web import create_app, is_signed, signature_valid
from autoroll.instruments.metrics import Metrics
from tests.support.web_app import BODY, SECRET, CountingNudge, Probe, app_over, outcome, sign


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
    """A real worker whose pass is stuck until the test ends (10 s at most), and the event
    its pass sets when it ends."""
    release = threading.Event()
    entered = threading.Event()
    left = threading.Event()

    def tick(stopping: Callable[[], bool], scope: Scope) -> None:
        entered.set()
        release.wait(10)
        left.set()

    nudge = Nudge(metrics)
    worker = Worker(tick, nudge=nudge, interval_seconds=3600, metrics=metrics)
    worker.start()
    assert entered.wait(5)
    yield worker, nudge, left
    release.set()
    worker.stop(timeout=5)


def test_the_webhook_answers_while_a_pass_is_stuck(
    busy_worker: tuple[Worker, Nudge, threading.Event], metrics: Metrics
) -> None:
    worker, nudge, pass_ended = busy_worker
    client = app_over(worker, nudge, metrics)
    for _ in range(20):
        response = client.post("/webhook", data=BODY, headers={"X-Forgejo-Signature": sign(BODY)})
        assert response.status_code == 202
    # All twenty answered while the pass was still stuck: none waited for it (the speed of
    # an answer is bench/'s to measure, not a unit test's).
    assert not pass_ended.is_set()
    assert nudge.pending
