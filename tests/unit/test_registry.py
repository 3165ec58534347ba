"""Registry client edge cases a real registry will not produce on demand, via a hand-written fake.

The happy paths and real faults run against docker-registry in
``tests/integration/test_registry.py``; these pin the parsing and bookkeeping around them.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
import requests

from autoroll.core.decide import ChildrenRequest
from autoroll.core.images import TagRef
from autoroll.core.model import Digest, Unknown
from autoroll.registry import (
    DOCKER_LIST,
    DOCKER_MANIFEST,
    MANIFEST_ACCEPT,
    MAX_MANIFEST_BYTES,
    MAX_TOKEN_BYTES,
    OCI_INDEX,
    OCI_MANIFEST,
    Limits,
    RegistryClient,
)

HOST = "registry.example"
REF = TagRef(HOST, "team/app", "latest")
D1 = "sha256:" + "1" * 64
BASIC = "Basic " + base64.b64encode(b"robot:s3cret").decode()

Handler = Callable[[str, str, dict[str, Any]], requests.Response]


def response(
    status: int, headers: dict[str, str] | None = None, body: bytes = b""
) -> requests.Response:
    r = requests.Response()
    r.status_code = status
    r.headers.update(headers or {})
    r.raw = io.BytesIO(body)
    r.url = "fake"
    return r


class FakeSession(requests.Session):
    """Answers from ``handler``; records (method, url, headers) of every request."""

    def __init__(self, handler: Handler) -> None:
        super().__init__()
        self.handler = handler
        self.sent: list[tuple[str, str, dict[str, Any]]] = []

    def request(
        self, method: str | bytes, url: str | bytes, *args: Any, **kwargs: Any
    ) -> requests.Response:
        method, url = str(method), str(url)
        self.sent.append((method, url, dict(kwargs.get("headers") or {})))
        return self.handler(method, url, kwargs)


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def make(
    handler: Handler,
    *,
    base: str = f"https://{HOST}",
    clock: Clock | None = None,
    user: str = "robot",
    token: str = "s3cret",
    **limits: Any,
) -> tuple[RegistryClient, FakeSession]:
    session = FakeSession(handler)
    # One lookup at a time unless a test asks for more: these tests script answers and move
    # a fake clock, which only has a meaning when requests go out in a known order.
    limits.setdefault("lookup_concurrency", 1)
    client = RegistryClient(
        session=session,
        base_url=base,
        user=user,
        token=token,
        limits=Limits(**limits),
        clock=clock or Clock(),
    )
    return client, session


def index_body(*children: str, media_type: str = OCI_INDEX) -> bytes:
    return json.dumps(
        {
            "schemaVersion": 2,
            "mediaType": media_type,
            "manifests": [{"digest": c} for c in children],
        }
    ).encode()


def digest_of(body: bytes) -> Digest:
    return Digest("sha256:" + hashlib.sha256(body).hexdigest())


def reason(answer: object) -> str:
    assert isinstance(answer, Unknown), answer
    return answer.reason


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
    answer = client.resolve([REF])[REF]
    assert isinstance(answer, Unknown)
    assert answer.reason == "unauthorized"
    assert "token endpoint refused user 'robot'" in answer.detail
    assert "FORGEJO_TOKEN" in answer.detail
    assert "read:package" in answer.detail


def test_a_401_without_a_bearer_challenge_names_the_scope_to_grant() -> None:
    header = {"WWW-Authenticate": 'Basic realm="Gitea Package API"'}
    client, session = make(lambda *_: response(401, header))
    answer = client.resolve([REF])[REF]
    assert isinstance(answer, Unknown)
    assert answer.reason == "unauthorized"
    assert "refused user 'robot' and its token (Basic realm=\"Gitea Package API\")" in answer.detail
    assert "read:package" in answer.detail
    assert "must see 'team'" in answer.detail
    assert len(session.sent) == 1


def test_a_bearer_token_refused_after_issue_names_read_access() -> None:
    client, _ = make(gitea_handler(valid="never"))
    answer = client.resolve([REF])[REF]
    assert isinstance(answer, Unknown)
    assert answer.reason == "unauthorized"
    assert "the Bearer token was refused" in answer.detail
    assert "must see 'team'" in answer.detail


def test_a_403_names_the_repository_and_public_only_tokens() -> None:
    client, _ = make(lambda *_: response(403))
    answer = client.resolve([REF])[REF]
    assert isinstance(answer, Unknown)
    assert answer.reason == "forbidden"
    assert "may not read 'team/app'" in answer.detail
    assert "public packages" in answer.detail


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


# --------------------------------------------------------------------------------------------
# Children


def children_handler(body: bytes, status: int = 200) -> Handler:
    def handle(method: str, url: str, kwargs: dict[str, Any]) -> requests.Response:
        if method == "HEAD":
            return response(200, {"Docker-Content-Digest": D1})
        return response(status, {}, body)

    return handle


def test_docker_manifest_list_children() -> None:
    body = index_body(D1, "sha256:" + "2" * 64, media_type=DOCKER_LIST)
    client, _ = make(children_handler(body))
    target = digest_of(body)
    answer = client.fetch_children([ChildrenRequest(REF, target)])
    assert answer == {target: frozenset({Digest(D1), Digest("sha256:" + "2" * 64)})}


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (b"not json", "bad-manifest"),
        (b"[1]", "bad-manifest"),
        (json.dumps({"mediaType": OCI_INDEX}).encode(), "bad-manifest"),
        (index_body("sha256:short"), "bad-manifest"),
        (b"x" * (MAX_MANIFEST_BYTES + 1), "too-large"),
    ],
)
def test_bad_index_bodies(body: bytes, expected: str) -> None:
    client, _ = make(children_handler(body))
    target = digest_of(body)
    assert reason(client.fetch_children([ChildrenRequest(REF, target)])[target]) == expected


def test_body_that_does_not_hash_to_the_digest_is_rejected() -> None:
    client, _ = make(children_handler(index_body(D1)))
    target = Digest("sha256:" + "9" * 64)
    assert (
        reason(client.fetch_children([ChildrenRequest(REF, target)])[target]) == "digest-mismatch"
    )
    assert client.known_children() == {}


def test_failed_children_not_asked_again_until_the_next_tick() -> None:
    client, session = make(children_handler(b"", status=500))
    target = Digest("sha256:" + "9" * 64)
    client.resolve([REF])
    for _ in range(3):
        assert reason(client.fetch_children([ChildrenRequest(REF, target)])[target]) == "http-5xx"
    assert [m for m, _, _ in session.sent] == ["HEAD", "GET"]
    client.resolve([REF])
    client.fetch_children([ChildrenRequest(REF, target)])
    assert [m for m, _, _ in session.sent] == ["HEAD", "GET", "HEAD", "GET"]


def test_children_share_the_tick_budget() -> None:
    """The registry's time in ``resolve`` counts against the fetches after it."""
    clock = Clock()
    body = index_body(D1)
    inner = children_handler(body)

    def slow(method: str, url: str, kwargs: dict[str, Any]) -> requests.Response:
        clock.now += 11
        return inner(method, url, kwargs)

    client, session = make(slow, clock=clock, budget_seconds=10)
    client.resolve([REF])
    target = digest_of(body)
    assert (
        reason(client.fetch_children([ChildrenRequest(REF, target)])[target]) == "budget-exhausted"
    )
    assert [m for m, _, _ in session.sent] == ["HEAD"]


def test_the_pass_s_own_time_between_calls_spends_no_registry_budget() -> None:
    """Issue 28: a pass that decides for long after ``resolve`` (thousands of workloads, a
    loaded CPU) has not waited for the registry; its fetches still get what is left."""
    clock = Clock()
    body = index_body(D1)
    inner = children_handler(body)

    def slow(method: str, url: str, kwargs: dict[str, Any]) -> requests.Response:
        clock.now += 4
        return inner(method, url, kwargs)

    client, session = make(slow, clock=clock, budget_seconds=10)
    client.resolve([REF])  # 4 s of the registry's time
    clock.now += 60  # the pass decides
    target = digest_of(body)
    assert client.fetch_children([ChildrenRequest(REF, target)])[target] == frozenset(
        {Digest(D1)}
    )  # 8 s
    clock.now += 60
    other = Digest("sha256:" + "7" * 64)
    # 2 s left: the GET is sent with what is left as its timeouts, and answered after it.
    assert reason(client.fetch_children([ChildrenRequest(REF, other)])[other]) == (
        "budget-exhausted"
    )
    assert [m for m, _, _ in session.sent] == ["HEAD", "GET", "GET"]


def test_budget_exhausted_refs_send_no_request() -> None:
    clock = Clock()

    def slow(method: str, url: str, kwargs: dict[str, Any]) -> requests.Response:
        clock.now += 4
        return response(200, {"Docker-Content-Digest": D1})

    client, session = make(slow, clock=clock, budget_seconds=10)
    refs = [TagRef(HOST, "team/app", f"t{i}") for i in range(5)]
    answers = client.resolve(refs)
    assert [a if isinstance(a, Digest) else a.reason for a in answers.values()] == [
        Digest(D1),
        Digest(D1),
        Digest(D1),
        "budget-exhausted",
        "budget-exhausted",
    ]
    assert len(session.sent) == 3


def test_timeouts_never_exceed_the_remaining_budget() -> None:
    clock = Clock()
    client, session = make(
        children_handler(b""), clock=clock, connect_seconds=3, read_seconds=5, budget_seconds=4
    )
    captured: list[Any] = []

    def record(method: str, url: str, kwargs: dict[str, Any]) -> requests.Response:
        captured.append(kwargs["timeout"])
        return response(200, {"Docker-Content-Digest": D1})

    session.handler = record
    clock.now = 0
    client.resolve([REF])
    assert captured == [(3, 4)]


def test_children_cache_is_bounded() -> None:
    bodies = [index_body("sha256:" + str(i) * 64) for i in range(4)]
    by_digest = {digest_of(b): b for b in bodies}

    def handle(method: str, url: str, kwargs: dict[str, Any]) -> requests.Response:
        return response(200, {}, by_digest[Digest(url.rpartition("/")[2])])

    client, _ = make(handle, children_cache_size=2)
    for target in by_digest:
        client.fetch_children([ChildrenRequest(REF, target)])
    assert list(client.known_children()) == list(by_digest)[-2:]


def test_base_url_must_be_scheme_and_host() -> None:
    for bad in ("registry.example", "ftp://registry.example", "https://registry.example/v2"):
        with pytest.raises(ValueError, match="scheme://host"):
            RegistryClient(session=requests.Session(), base_url=bad, user="u", token="t")


def test_repr_shows_no_credentials() -> None:
    client, _ = make(lambda *_: response(200))
    assert "s3cret" not in repr(client)


# -- several HEADs in flight ---------------------------------------------------------------------


def refs(count: int) -> list[TagRef]:
    return [TagRef(HOST, f"team/app-{k}", "latest") for k in range(count)]


def digest_for(url: str) -> str:
    return "sha256:" + hashlib.sha256(url.encode()).hexdigest()


def test_lookups_overlap_up_to_the_concurrency_limit() -> None:
    # Every HEAD waits until four are in flight: sent one at a time, they would all time out.
    together = threading.Barrier(4, timeout=5)

    def handler(method: str, url: str, kwargs: Any) -> requests.Response:
        together.wait()
        return response(200, {"Docker-Content-Digest": digest_for(url)})

    client, session = make(handler, lookup_concurrency=4)
    wanted = refs(8)
    answers = client.resolve(wanted)
    assert answers == {
        ref: Digest(digest_for(f"https://{HOST}/v2/{ref.repository}/manifests/latest"))
        for ref in wanted
    }
    assert len(session.sent) == 8


def test_after_a_429_only_the_requests_already_in_flight_are_sent() -> None:
    client, session = make(lambda *_: response(429, {"Retry-After": "60"}), lookup_concurrency=2)
    answers = client.resolve(refs(6))
    reasons = sorted(reason(a) for a in answers.values())
    sent = len(session.sent)
    assert 1 <= sent <= 2
    assert reasons == sorted(["rate-limited"] * sent + ["backoff"] * (6 - sent))


def test_one_lookup_at_a_time_when_the_limit_is_one() -> None:
    in_flight, most = [0], [0]
    lock = threading.Lock()

    def handler(method: str, url: str, kwargs: Any) -> requests.Response:
        with lock:
            in_flight[0] += 1
            most[0] = max(most[0], in_flight[0])
        time.sleep(0.01)
        with lock:
            in_flight[0] -= 1
        return response(200, {"Docker-Content-Digest": D1})

    client, _ = make(handler, lookup_concurrency=1)
    client.resolve(refs(5))
    assert most == [1]


def test_every_bearer_token_fetched_is_told_to_the_redactor_before_it_is_used() -> None:
    learnt: list[str] = []
    sent_with: list[str] = []

    def handle(method: str, url: str, kwargs: dict[str, Any]) -> requests.Response:
        if "/token" in url:
            return response(200, body=b'{"token":"issued-token-1"}')
        sent_with.append(kwargs["headers"]["Authorization"])
        if kwargs["headers"]["Authorization"] == "Bearer issued-token-1":
            assert learnt == ["issued-token-1"]  # known to the redactor before its first use
            return response(200, {"Docker-Content-Digest": D1})
        return response(
            401, {"WWW-Authenticate": f'Bearer realm="https://{HOST}/token",service="s"'}
        )

    session = FakeSession(handle)
    client = RegistryClient(
        session=session,
        base_url=f"https://{HOST}",
        user="robot",
        token="s3cret",
        limits=Limits(lookup_concurrency=1),
        on_secret=learnt.append,
    )
    assert client.resolve([REF])[REF] == Digest(D1)
    assert learnt == ["issued-token-1"]
