"""The registry client's bearer tokens against a fake registry: the token request, Gitea's
several challenges, what a refused token names, one token per scope, a refused cached token.
"""

from __future__ import annotations

import json
import threading
from typing import Any

import pytest
import requests

from autoroll.core.images import TagRef
from autoroll.core.model import Digest, Unknown
from autoroll.registry import RegistryClient
from tests.support.registry_fakes import BASIC, D1, HOST, REF, Handler, make, refs, response


def test_token_request_carries_service_and_scope_and_basic() -> None:
    seen: dict[str, Any] = {}

    def handle(method: str, url: str, kwargs: dict[str, Any]) -> requests.Response:
        if "/token" in url:
            seen.update(kwargs)
            return response(200, body=b'{"access_token":"t2","expires_in":300}')
        if kwargs["headers"]["Authorization"] == "Bearer t2":
            return response(200, {"Docker-Content-Digest": D1})
        return response(
            401,
            {
                "WWW-Authenticate": f'Bearer realm="https://{HOST}/token",service="svc",scope="repository:team/app:pull"'
            },
        )

    client, _ = make(handle)
    assert client.resolve([REF]) == {REF: Digest(D1)}
    assert seen["params"] == {"service": "svc", "scope": "repository:team/app:pull"}
    assert seen["headers"]["Authorization"] == BASIC


GITEA_CHALLENGES = (
    f'Bearer realm="https://{HOST}/v2/token",service="container_registry",scope="*"',
    'Basic realm="Gitea Container Registry"',
)


def gitea_handler(*, valid: str, token: bytes = b'{"token":"t"}', order: int = 1) -> Handler:
    """Gitea's answers for a private owner: two challenges in one 401 (``requests`` joins
    the two header lines with ", "), a token endpoint, and ``valid`` as the accepted token."""
    header = ", ".join(GITEA_CHALLENGES[::order])

    def handle(method: str, url: str, kwargs: dict[str, Any]) -> requests.Response:
        if url.endswith("/v2/token"):
            if kwargs["headers"]["Authorization"] != BASIC:
                return response(401, {"WWW-Authenticate": header})
            return response(200, body=token)
        if kwargs["headers"]["Authorization"] == f"Bearer {valid}":
            return response(200, {"Docker-Content-Digest": D1})
        return response(401, {"WWW-Authenticate": header})

    return handle


def unknown_because(client: RegistryClient, reason: str) -> str:
    """Resolve ``REF`` with ``client``: unknown for ``reason``; what its detail says."""
    answer = client.resolve([REF])[REF]
    assert isinstance(answer, Unknown)
    assert answer.reason == reason
    return answer.detail


@pytest.mark.parametrize("order", [1, -1], ids=["bearer-first", "basic-first"])
def test_the_bearer_challenge_is_used_wherever_it_stands_among_several(order: int) -> None:
    client, session = make(gitea_handler(valid="t", order=order))
    assert client.resolve([REF]) == {REF: Digest(D1)}
    assert [url for _, url, _ in session.sent] == [
        f"https://{HOST}/v2/team/app/manifests/latest",
        f"https://{HOST}/v2/token",
        f"https://{HOST}/v2/team/app/manifests/latest",
    ]


def test_a_refused_token_with_two_challenges_is_unauthorized_and_names_the_fix() -> None:
    client, _ = make(gitea_handler(valid="t"), token="wrong")  # the wrong token for this user
    detail = unknown_because(client, "unauthorized")
    assert "token endpoint refused user 'robot'" in detail
    assert "FORGEJO_TOKEN" in detail
    assert "read:package" in detail


def test_a_401_without_a_bearer_challenge_names_the_scope_to_grant() -> None:
    header = {"WWW-Authenticate": 'Basic realm="Gitea Package API"'}
    client, session = make(lambda *_: response(401, header))
    detail = unknown_because(client, "unauthorized")
    assert "refused user 'robot' and its token (Basic realm=\"Gitea Package API\")" in detail
    assert "read:package" in detail
    assert "must see 'team'" in detail
    assert len(session.sent) == 1


def test_a_bearer_token_refused_after_issue_names_read_access() -> None:
    detail = unknown_because(make(gitea_handler(valid="never"))[0], "unauthorized")
    assert "the Bearer token was refused" in detail
    assert "must see 'team'" in detail


def test_a_403_names_the_repository_and_public_only_tokens() -> None:
    detail = unknown_because(make(lambda *_: response(403))[0], "forbidden")
    assert "may not read 'team/app'" in detail
    assert "public packages" in detail


def test_lookups_at_once_fetch_one_token_per_scope() -> None:
    # Both HEADs of one repository are refused before either asks for a token.
    refused_together = threading.Barrier(2, timeout=5)
    tokens = [0]

    def handle(method: str, url: str, kwargs: dict[str, Any]) -> requests.Response:
        if url.endswith("/v2/token"):
            tokens[0] += 1
            return response(200, body=b'{"token":"t"}')
        if kwargs["headers"]["Authorization"] == "Bearer t":
            return response(200, {"Docker-Content-Digest": D1})
        refused_together.wait()
        return response(401, {"WWW-Authenticate": ", ".join(GITEA_CHALLENGES)})

    client, _ = make(handle, lookup_concurrency=2)
    both = [TagRef(HOST, "team/app", "latest"), TagRef(HOST, "team/app", "stable")]
    assert client.resolve(both) == {r: Digest(D1) for r in both}
    assert tokens == [1]


def test_each_scope_gets_its_own_token() -> None:
    fetched: list[str] = []

    def handle(method: str, url: str, kwargs: dict[str, Any]) -> requests.Response:
        if url.endswith("/v2/token"):
            fetched.append(url)
            return response(200, body=b'{"token":"t"}')
        if kwargs["headers"]["Authorization"] == "Bearer t":
            return response(200, {"Docker-Content-Digest": D1})
        return response(401, {"WWW-Authenticate": ", ".join(GITEA_CHALLENGES)})

    client, _ = make(handle, lookup_concurrency=2)
    assert all(isinstance(d, Digest) for d in client.resolve(refs(2)).values())
    assert len(fetched) == 2


def test_a_cached_token_the_registry_refuses_is_fetched_anew() -> None:
    issued = iter(["t1", "t2"])
    accepted = {"t1"}

    def handle(method: str, url: str, kwargs: dict[str, Any]) -> requests.Response:
        if url.endswith("/v2/token"):
            return response(200, body=json.dumps({"token": next(issued)}).encode())
        if kwargs["headers"]["Authorization"].removeprefix("Bearer ") in accepted:
            return response(200, {"Docker-Content-Digest": D1})
        return response(401, {"WWW-Authenticate": GITEA_CHALLENGES[0]})

    client, session = make(handle)
    assert client.resolve([REF]) == {REF: Digest(D1)}
    accepted = {"t2"}  # the registry rotated its signing key
    assert client.resolve([REF]) == {REF: Digest(D1)}
    auths = [h["Authorization"] for _, url, h in session.sent if "/manifests/" in url]
    assert auths == [BASIC, "Bearer t1", "Bearer t1", "Bearer t2"]
