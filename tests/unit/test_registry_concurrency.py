"""Several HEADs in flight: the registry client's concurrency limit, a 429 stopping new requests,
and every bearer token told to the redactor before it is used.
"""

from __future__ import annotations

import hashlib
import threading
import time
from typing import Any

import requests

from autoroll.core.model import Digest
from autoroll.registry import Limits, RegistryClient
from tests.support.registry_fakes import D1, HOST, REF, FakeSession, make, reason, refs, response

# -- several HEADs in flight ---------------------------------------------------------------------


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
