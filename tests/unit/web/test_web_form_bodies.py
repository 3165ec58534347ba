"""Form-encoded webhook deliveries: signed over the payload field (told to use JSON) or over the
raw bytes (accepted), and the one payload field read from a form.
"""

from __future__ import annotations

from urllib.parse import urlencode

import pytest
from flask.testing import FlaskClient

from autoroll.edge.web import FORM_ENCODED_HINT, form_payload
from autoroll.instruments.metrics import Metrics
from tests.support.web_app import BODY, CountingNudge, outcome, sign

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
