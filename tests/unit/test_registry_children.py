"""The registry client's children of an index against a fake registry: list and index bodies,
digests checked, failures remembered for the tick, the tick's budget and timeouts, the cache
bound.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
import requests

from autoroll.core.decide import ChildrenRequest
from autoroll.core.images import TagRef
from autoroll.core.model import Digest
from autoroll.registry import DOCKER_LIST, MAX_MANIFEST_BYTES, OCI_INDEX
from tests.support.registry_fakes import (
    D1,
    HOST,
    REF,
    Clock,
    Handler,
    digest_of,
    index_body,
    make,
    reason,
    response,
)
from tests.support.registry_time import taking

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
    client, session = make(
        taking(11, clock, children_handler(body)), clock=clock, budget_seconds=10
    )
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
    client, session = make(taking(4, clock, children_handler(body)), clock=clock, budget_seconds=10)
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
