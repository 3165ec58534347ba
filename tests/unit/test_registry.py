"""Registry client edge cases a real registry will not produce on demand, via a hand-written fake.

The happy paths and real faults run against docker-registry in
``tests/integration/test_registry.py``; these pin the parsing and bookkeeping around them. The
fake is ``tests.support.registry_fakes``; tokens, children and concurrency have their own
modules (``test_registry_tokens.py``, ``test_registry_children.py``,
``test_registry_concurrency.py``).
"""

from __future__ import annotations

from typing import Any

import pytest
import requests

from autoroll.core.model import Digest
from autoroll.registry import (
    DOCKER_LIST,
    DOCKER_MANIFEST,
    MANIFEST_ACCEPT,
    MAX_TOKEN_BYTES,
    OCI_INDEX,
    OCI_MANIFEST,
    RegistryClient,
)
from tests.support.registry_fakes import BASIC, D1, HOST, REF, Handler, make, reason, response

# --------------------------------------------------------------------------------------------


def test_head_sends_basic_and_the_accept_list_index_types_first() -> None:
    client, session = make(lambda *_: response(200, {"Docker-Content-Digest": D1}))
    assert client.resolve([REF]) == {REF: Digest(D1)}
    ((method, url, headers),) = session.sent
    assert (method, url) == ("HEAD", f"https://{HOST}/v2/team/app/manifests/latest")
    assert headers["Authorization"] == BASIC
    accepted = [t.strip() for t in headers["Accept"].split(",")]
    assert set(accepted) == {OCI_INDEX, DOCKER_LIST, OCI_MANIFEST, DOCKER_MANIFEST}
    assert headers["Accept"] == MANIFEST_ACCEPT


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        (403, "forbidden"),
        (404, "not-found"),
        (429, "rate-limited"),
        (302, "http-3xx"),
        (400, "http-4xx"),
        (500, "http-5xx"),
        (503, "http-5xx"),
    ],
)
def test_status_codes_become_unknown_with_a_bounded_reason(status: int, expected: str) -> None:
    client, _ = make(lambda *_: response(status, {"Docker-Content-Digest": D1}))
    assert reason(client.resolve([REF])[REF]) == expected


def test_401_with_a_basic_challenge_is_unauthorized_without_retry() -> None:
    client, session = make(lambda *_: response(401, {"WWW-Authenticate": 'Basic realm="x"'}))
    assert reason(client.resolve([REF])[REF]) == "unauthorized"
    assert len(session.sent) == 1


@pytest.mark.parametrize(
    ("exc", "expected"),
    [
        (requests.ConnectTimeout(), "timeout"),
        (requests.ReadTimeout(), "timeout"),
        (requests.ConnectionError(), "network"),
    ],
)
def test_transport_failures_become_unknown(exc: Exception, expected: str) -> None:
    def boom(*_: Any) -> requests.Response:
        raise exc

    client, _ = make(boom)
    assert reason(client.resolve([REF])[REF]) == expected


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        (None, "missing-digest"),
        ("", "missing-digest"),
        ("sha256:abc", "malformed-digest"),
        ("sha512:" + "a" * 128, "malformed-digest"),
    ],
)
def test_bad_digest_headers(header: str | None, expected: str) -> None:
    headers = {} if header is None else {"Docker-Content-Digest": header}
    client, _ = make(lambda *_: response(200, headers))
    assert reason(client.resolve([REF])[REF]) == expected


def bearer_handler(token_response: requests.Response) -> Handler:
    def handle(method: str, url: str, kwargs: dict[str, Any]) -> requests.Response:
        if "/token" in url:
            return token_response
        return response(
            401,
            {
                "WWW-Authenticate": f'Bearer realm="http://{HOST}/token",service="s",scope="repository:team/app:pull"'
            },
        )

    return handle


def test_realm_that_downgrades_https_gets_no_credentials() -> None:
    client, session = make(bearer_handler(response(200, body=b'{"token":"t"}')))
    assert reason(client.resolve([REF])[REF]) == "bad-challenge"
    assert all("/token" not in url for _, url, _ in session.sent)


@pytest.mark.parametrize(
    ("token_response", "expected"),
    [
        (response(500), "token-failed"),
        (response(200, body=b"not json"), "token-failed"),
        (response(200, body=b'{"expires_in": 60}'), "token-failed"),
        (response(200, body=b"[]"), "token-failed"),
        (response(200, body=b'{"token": "' + b"t" * MAX_TOKEN_BYTES + b'"}'), "token-failed"),
        (
            response(200, body=b'{"token": "t", "x": ' + b"[" * 1500 + b"]" * 1500 + b"}"),
            "token-failed",
        ),
        (response(401), "unauthorized"),
    ],
)
def test_token_endpoint_failures(token_response: requests.Response, expected: str) -> None:
    client, _ = make(bearer_handler(token_response), base=f"http://{HOST}")
    assert reason(client.resolve([REF])[REF]) == expected


def test_bearer_retry_happens_once_only() -> None:
    client, session = make(
        bearer_handler(response(200, body=b'{"token":"t"}')), base=f"http://{HOST}"
    )
    assert reason(client.resolve([REF])[REF]) == "unauthorized"
    assert [m for m, _, _ in session.sent] == ["HEAD", "GET", "HEAD"]
    assert session.sent[2][2]["Authorization"] == "Bearer t"


def test_base_url_must_be_scheme_and_host() -> None:
    for bad in ("registry.example", "ftp://registry.example", "https://registry.example/v2"):
        with pytest.raises(ValueError, match="scheme://host"):
            RegistryClient(session=requests.Session(), base_url=bad, user="u", token="t")


def test_repr_shows_no_credentials() -> None:
    client, _ = make(lambda *_: response(200))
    assert "s3cret" not in repr(client)
