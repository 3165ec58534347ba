"""The registries' receivers through Flask's test client: each source's documented delivery,
signed or tokened as its sender does it, accepted; the same delivery unsigned, wrongly signed,
with another source's token or at the wrong path, refused with nothing nudged."""

from __future__ import annotations

import hashlib
import hmac

import pytest

from autoroll.core.receivers.sources import RECEIVERS, Source
from autoroll.edge.web import MAX_BODY_BYTES
from tests.support.endless_body import Endless
from tests.support.receivers import (
    BY_SOURCE,
    DELIVERIES,
    IDS,
    SECRETS,
    Delivery,
    Edge,
    edge,
    generic,
    plain,
)


@pytest.fixture
def on() -> Edge:
    return edge()


def test_every_receiver_has_a_delivery_here() -> None:
    assert set(BY_SOURCE) == set(RECEIVERS)


@pytest.mark.parametrize("delivery", DELIVERIES, ids=IDS)
def test_a_documented_delivery_authenticated_as_its_sender_does_it_starts_a_targeted_pass(
    on: Edge, delivery: Delivery
) -> None:
    status, text = delivery.send(on.client)
    assert (status, text) == (202, f"targeted pass requested for {delivery.scope}\n")
    # At once, or (the distribution family) once the registry has written the tag.
    asked = on.nudges + [scope for scope, _ in on.laters]
    assert asked == [delivery.scope]
    assert on.outcome(delivery.source, "targeted") == 1


@pytest.mark.parametrize("delivery", DELIVERIES, ids=IDS)
def test_a_wrong_secret_is_refused_and_nothing_is_nudged(on: Edge, delivery: Delivery) -> None:
    status, _ = delivery.send(on.client, secret="not-the-secret-0123456789abcdef")
    assert status == 403
    assert on.nudges == []
    assert on.outcome(delivery.source, "bad-signature") == 1


@pytest.mark.parametrize("delivery", DELIVERIES, ids=IDS)
def test_another_sources_secret_is_a_wrong_one(on: Edge, delivery: Delivery) -> None:
    other = next(s for s in RECEIVERS if s is not delivery.source)
    status, _ = delivery.send(on.client, secret=SECRETS[other])
    assert status == 403 and on.nudges == []


@pytest.mark.parametrize(
    "delivery",
    [d for d in DELIVERIES if d.source not in (Source.DOCKERHUB, Source.QUAY)],
    ids=lambda d: str(d.source),  # stable across processes (pytest-xdist compares the ids)
)
def test_a_delivery_without_its_credential_is_refused_as_unsigned(
    on: Edge, delivery: Delivery
) -> None:
    response = on.client.post(
        f"/webhook/{delivery.source}", data=delivery.body, headers=plain(b"", "")
    )
    assert response.status_code == 403
    assert response.get_data(as_text=True).startswith("missing ")
    assert on.outcome(delivery.source, "missing-signature") == 1
    assert on.nudges == []


@pytest.mark.parametrize("source", [Source.DOCKERHUB, Source.QUAY])
def test_a_path_token_source_without_its_token_in_the_path_is_not_found(
    on: Edge, source: Source
) -> None:
    delivery = BY_SOURCE[source]
    # The token where a header would carry it is no token: this route takes it in the path.
    response = on.client.post(
        f"/webhook/{source}",
        data=delivery.body,
        headers={"Authorization": f"Bearer {SECRETS[source]}"},
    )
    assert response.status_code == 404
    assert f"/webhook/{source}/<token>" in response.get_data(as_text=True)
    assert on.nudges == []


@pytest.mark.parametrize("source", [Source.HARBOR, Source.GITHUB, Source.DISTRIBUTION])
def test_a_token_in_the_path_of_a_source_that_takes_a_header_is_not_found(
    on: Edge, source: Source
) -> None:
    delivery = BY_SOURCE[source]
    response = on.client.post(
        f"/webhook/{source}/{SECRETS[source]}",
        data=delivery.body,
        headers=delivery.headers(delivery.body, "x"),
    )
    assert response.status_code == 404 and on.nudges == []
    assert on.outcome(source, "not-found") == 1


@pytest.mark.parametrize(
    ("path", "headers"),
    [
        ("/webhook/harbor", {"HTTP_AUTHORIZATION": "Bearer wrong-token-0123456789"}),
        ("/webhook/distribution", {}),  # no Authorization at all
        ("/webhook/dockerhub/wrong-token-0123456789", {}),
        ("/webhook/github", {}),  # HMAC sources refuse an unsigned request before reading too
    ],
)
def test_a_missing_or_wrong_token_is_refused_before_a_byte_of_the_body_is_read(
    on: Edge, path: str, headers: dict[str, str]
) -> None:
    stream = Endless()
    environ: dict[str, object] = {
        "REQUEST_METHOD": "POST",
        "PATH_INFO": path,
        "SERVER_NAME": "localhost",
        "SERVER_PORT": "80",
        "SERVER_PROTOCOL": "HTTP/1.1",
        "wsgi.url_scheme": "http",
        "wsgi.input": stream,
        "CONTENT_LENGTH": str(MAX_BODY_BYTES),
        **headers,
    }
    statuses: list[str] = []

    def start_response(status: str, headers: object, exc_info: object = None) -> None:
        statuses.append(status)

    app = on.client.application
    b"".join(app.wsgi_app(environ, start_response))  # type: ignore[arg-type]
    assert statuses[0].startswith("403")
    assert stream.served == 0 and on.nudges == []


def test_an_hmac_signature_of_another_body_is_refused(on: Edge) -> None:
    delivery = BY_SOURCE[Source.GENERIC]
    headers = generic(b'{"image": "127.0.0.1:25397/team/other:v9"}', SECRETS[Source.GENERIC])
    response = on.client.post("/webhook/generic", data=delivery.body, headers=headers)
    assert response.status_code == 403 and on.nudges == []


def test_sha1_is_not_accepted_for_the_generic_format(on: Edge) -> None:
    body = BY_SOURCE[Source.GENERIC].body
    digest = hmac.new(SECRETS[Source.GENERIC].encode(), body, hashlib.sha1).hexdigest()
    response = on.client.post(
        "/webhook/generic", data=body, headers={"X-Signature": f"sha1={digest}"}
    )
    assert response.status_code == 403
    assert on.outcome(Source.GENERIC, "bad-signature") == 1


@pytest.mark.parametrize("delivery", DELIVERIES, ids=IDS)
def test_a_receiver_that_is_off_answers_404_naming_its_variable(delivery: Delivery) -> None:
    off = edge({})
    status, text = delivery.send(off.client)
    assert status == 404
    assert RECEIVERS[delivery.source].variable in text
    assert off.nudges == [] and off.outcome(delivery.source, "disabled") == 1


def test_an_unknown_source_is_not_found_and_not_counted(on: Edge) -> None:
    response = on.client.post("/webhook/nexus", data=b"{}")
    assert response.status_code == 404
    assert "the receivers are cloudevents, distribution" in response.get_data(as_text=True)
    samples = on.metrics.registry.collect()
    assert not [s for m in samples for s in m.samples if s.labels.get("source") == "nexus"]


def test_a_body_over_the_cap_is_413_and_never_read_whole(on: Edge) -> None:
    response = on.client.post(
        "/webhook/generic",
        data=b"x" * (MAX_BODY_BYTES + 1),
        headers={"X-Signature": "sha256=" + "0" * 64},
    )
    assert response.status_code == 413 and on.nudges == []
    assert on.outcome(Source.GENERIC, "too-large") == 1
