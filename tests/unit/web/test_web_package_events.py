"""The webhook's package events (Forgejo and Gitea): a digest version is accepted without a
nudge, a container tag nudges a pass targeted at that tag, a body naming no tag a full pass.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from flask.testing import FlaskClient

from autoroll.core.scope import FULL, ImageTag, Scope
from autoroll.instruments.metrics import Metrics
from tests.support.web_app import BODY, CountingNudge, outcome, sign

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


GITEA = Path(__file__).parents[1] / "data"  # tests/unit/data


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
