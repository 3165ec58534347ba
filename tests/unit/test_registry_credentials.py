"""The registry client with a chain of credentials, its per-pass request budget and backoff, and
the pool of registries: cases a real registry will not produce on demand, over a scripted
session (the live paths run against docker-registry and Gitea in the integration, Gitea and
e2e tiers)."""

from __future__ import annotations

import base64
import json
import threading
from typing import Any

import requests

from autoroll.core.images import TagRef
from autoroll.core.keyring import Credential, Keyring, parse_pull_secret
from autoroll.core.lookups import ANONYMOUS, Answer, Lookup
from autoroll.core.model import Digest, Unknown
from autoroll.registry import Limits, RegistryClient
from autoroll.registry.pool import RegistryPool
from tests.support.registry_fakes import HOST, REF, Clock, FakeSession, response

D1 = "sha256:" + "1" * 64
D2 = "sha256:" + "2" * 64
OK = {"Docker-Content-Digest": D1}


def basic(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


def pull(user: str, password: str, name: str) -> Credential:
    return Credential(user, password, f"imagePullSecret shop/{name}", HOST)


def client_for(
    session: FakeSession, *, clock: Clock | None = None, **limits: Any
) -> RegistryClient:
    limits.setdefault("lookup_concurrency", 1)
    return RegistryClient(
        session=session, base_url=f"https://{HOST}", limits=Limits(**limits), clock=clock or Clock()
    )


def accepting(*good: str) -> FakeSession:
    """A registry that answers 200 to the Basic credentials ``good`` and 401 (Basic) to the rest."""

    def handler(method: str, url: str, kwargs: dict[str, Any]) -> requests.Response:
        auth = (kwargs.get("headers") or {}).get("Authorization", "")
        if auth in good:
            return response(200, OK)
        return response(401, {"WWW-Authenticate": 'Basic realm="registry"'})

    return FakeSession(handler)


def test_the_credentials_are_tried_in_order_and_the_one_that_answers_is_named() -> None:
    session = accepting(basic("new", "right"))
    client = client_for(session)
    lookup = Lookup(REF, (pull("old", "stale", "old"), pull("new", "right", "new")))
    assert client.lookup([lookup]) == {lookup: Answer(Digest(D1), "imagePullSecret shop/new")}
    assert [h["Authorization"] for _, _, h in session.sent] == [
        basic("old", "stale"),
        basic("new", "right"),
    ]


def test_the_first_credential_that_works_ends_the_chain() -> None:
    session = accepting(basic("a", "1"), basic("b", "2"))
    client = client_for(session)
    lookup = Lookup(REF, (pull("a", "1", "first"), pull("b", "2", "second")))
    assert client.lookup([lookup])[lookup].source == "imagePullSecret shop/first"
    assert len(session.sent) == 1


def test_every_credential_refused_is_unknown_naming_each_secret_never_a_password() -> None:
    client = client_for(accepting())
    lookup = Lookup(REF, (pull("a", "pw-one", "first"), pull("b", "pw-two", "second")))
    answer = client.lookup([lookup])[lookup]
    assert isinstance(answer.value, Unknown) and answer.value.reason == "unauthorized"
    assert "imagePullSecret shop/first" in answer.value.detail
    assert "imagePullSecret shop/second" in answer.value.detail
    assert "pw-one" not in answer.value.detail and "pw-two" not in answer.value.detail
    assert answer.source == ""


def test_without_any_credential_the_registry_is_asked_anonymously() -> None:
    session = FakeSession(lambda *_: response(200, OK))
    client = client_for(session)
    assert client.lookup([Lookup(REF)]) == {Lookup(REF): Answer(Digest(D1), ANONYMOUS)}
    assert "Authorization" not in session.sent[0][2]


def test_a_refused_anonymous_request_says_how_to_give_credentials() -> None:
    client = client_for(accepting())
    answer = client.lookup([Lookup(REF)])[Lookup(REF)].value
    assert isinstance(answer, Unknown) and "imagePullSecret" in answer.detail


def test_the_registrys_own_secret_follows_the_pods_credentials() -> None:
    """The pods' pull secrets first, then the registry's own Secret (the node's keyring)."""
    pair = base64.b64encode(b"robot:own").decode()
    own = parse_pull_secret(
        "kubernetes.io/dockerconfigjson",
        {".dockerconfigjson": json.dumps({"auths": {HOST: {"auth": pair}}}).encode()},
        source="registry Secret /run/own",
    )
    session = accepting(basic("robot", "own"))
    client = RegistryClient(
        session=session,
        base_url=f"https://{HOST}",
        keyring=Keyring(tuple(own)),
        limits=Limits(lookup_concurrency=1),
        clock=Clock(),
    )
    lookup = Lookup(REF, (pull("pod", "wrong", "pods"),))
    assert client.lookup([lookup])[lookup].source == "registry Secret /run/own"


def bearer_registry(tokens: list[str], *, expires_in: int = 300) -> FakeSession:
    """A registry behind a token service: Basic gets a challenge; the realm issues tokens."""
    issued = iter(tokens)

    def handler(method: str, url: str, kwargs: dict[str, Any]) -> requests.Response:
        auth = (kwargs.get("headers") or {}).get("Authorization", "")
        if url.startswith(f"https://{HOST}/token"):
            body = json.dumps({"token": next(issued), "expires_in": expires_in}).encode()
            return response(200, {}, body)
        if auth.startswith("Bearer "):
            return response(200, OK)
        challenge = f'Bearer realm="https://{HOST}/token",service="{HOST}",scope="x"'
        return response(401, {"WWW-Authenticate": challenge})

    return FakeSession(handler)


def test_a_token_is_kept_per_credential_until_it_expires_then_fetched_again() -> None:
    clock = Clock()
    session = bearer_registry(["t1", "t2", "t3"], expires_in=100)
    client = client_for(session, clock=clock)
    a = Lookup(REF, (pull("a", "1", "a"),))
    b = Lookup(REF, (pull("b", "2", "b"),))

    def tokens_fetched() -> int:
        return sum(1 for _, url, _ in session.sent if "/token" in url)

    client.lookup([a])
    client.lookup([a])
    assert tokens_fetched() == 1  # the second pass uses the cached token
    client.lookup([b])
    assert tokens_fetched() == 2  # another credential, a token of its own
    clock.now += 95  # past expires_in less its margin (10 s)
    client.lookup([a])
    assert tokens_fetched() == 3
    assert session.sent[-1][2]["Authorization"] == "Bearer t3"


def test_an_anonymous_token_is_fetched_without_credentials() -> None:
    session = bearer_registry(["anon"])
    client = client_for(session)
    assert client.lookup([Lookup(REF)])[Lookup(REF)].value == Digest(D1)
    [token_request] = [h for _, url, h in session.sent if "/token" in url]
    assert "Authorization" not in token_request


def test_the_requests_per_pass_budget_makes_the_rest_unknown_never_stale() -> None:
    session = FakeSession(lambda *_: response(200, OK))
    client = client_for(session, requests_per_pass=2)
    refs = [TagRef(HOST, f"team/app{i}", "latest") for i in range(4)]
    answers = client.resolve(refs)
    assert [answers[r] for r in refs[:2]] == [Digest(D1), Digest(D1)]
    assert {a.reason for a in (answers[r] for r in refs[2:]) if isinstance(a, Unknown)} == {
        "budget-exhausted"
    }
    assert len(session.sent) == 2
    # A new pass, a new budget.
    assert client.resolve(refs[2:3]) == {refs[2]: Digest(D1)}


def test_repeated_429s_without_retry_after_wait_longer_each_time() -> None:
    clock = Clock()
    session = FakeSession(lambda *_: response(429))
    client = client_for(session, clock=clock, default_backoff_seconds=10, max_backoff_seconds=300)
    quiet: list[float] = []
    for _ in range(4):
        client.resolve([REF])
        sent = len(session.sent)
        waited = 0.0
        while True:  # step the clock until the registry is asked again
            waited += 1
            clock.now += 1
            client.resolve([REF])
            if len(session.sent) > sent:
                break
        quiet.append(waited)
        session.sent.clear()
    assert quiet == [10, 20, 40, 80]  # doubled each time, asked again the moment it ends


# --- the pool ---------------------------------------------------------------------------------

OTHER = "other.example"


def test_one_registry_quiet_after_a_429_holds_no_other_registry_back() -> None:
    slow_started = threading.Event()

    def throttled(method: str, url: str, kwargs: dict[str, Any]) -> requests.Response:
        slow_started.set()
        return response(429, {"Retry-After": "120"})

    busy = RegistryClient(
        session=FakeSession(throttled), base_url=f"https://{HOST}", limits=Limits(), clock=Clock()
    )
    fine_session = FakeSession(lambda *_: response(200, {"Docker-Content-Digest": D2}))
    fine = RegistryClient(
        session=fine_session, base_url=f"https://{OTHER}", limits=Limits(), clock=Clock()
    )
    pool = RegistryPool({HOST: busy, OTHER: fine})
    theirs = TagRef(OTHER, "team/side", "latest")
    first = pool.resolve([REF, theirs])
    assert first[theirs] == Digest(D2)
    refused = first[REF]
    assert isinstance(refused, Unknown) and refused.reason == "rate-limited"
    again = pool.resolve([REF, theirs])
    assert again[theirs] == Digest(D2)
    quiet = again[REF]
    assert isinstance(quiet, Unknown) and quiet.reason == "backoff"
    assert len(fine_session.sent) == 2


def test_a_tag_on_a_host_no_registry_serves_is_other_host() -> None:
    pool = RegistryPool({})
    answer = pool.resolve([REF])[REF]
    assert isinstance(answer, Unknown) and answer.reason == "other-host"


def test_docker_hub_aliases_reach_one_client() -> None:
    session = FakeSession(lambda *_: response(200, OK))
    hub = RegistryClient(
        session=session, base_url="https://registry-1.docker.io", limits=Limits(), clock=Clock()
    )
    pool = RegistryPool({"docker.io": hub})
    ref = TagRef("docker.io", "library/nginx", "1.27")
    assert pool.resolve([ref]) == {ref: Digest(D1)}
    assert session.sent[0][1] == "https://registry-1.docker.io/v2/library/nginx/manifests/1.27"
    assert pool.client("index.docker.io") is hub
