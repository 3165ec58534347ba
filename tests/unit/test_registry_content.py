"""``fetch_content``: the image configs a manifest or index digest stands for.

A pod's imageID may name another repository than the enrolled one (containerd reports the
alphabetically first reference recorded for the config), so these GETs go to the repository
the request names. The happy paths against a real docker-registry are in
``tests/integration/test_foreign_reference.py``; these pin the edge cases with a fake.
"""

from __future__ import annotations

import json
import threading
from typing import Any

import requests

from autoroll.core.decide import ChildrenRequest, ContentRequest
from autoroll.core.images import TagRef
from autoroll.core.model import Digest, ImageContent
from autoroll.registry import (
    DOCKER_LIST,
    DOCKER_MANIFEST,
    MAX_MANIFEST_BYTES,
    OCI_INDEX,
    OCI_MANIFEST,
)
from tests.support.registry_fakes import (
    BASIC,
    HOST,
    Clock,
    Handler,
    digest_of,
    make,
    reason,
    response,
)
from tests.support.registry_time import taking

MIRROR = "aaa/mirror"
ENROLLED = TagRef(HOST, "team/app", "latest")
CFG_AMD = Digest("sha256:" + "a" * 64)
CFG_ARM = Digest("sha256:" + "b" * 64)
CFG_ATTEST = Digest("sha256:" + "e" * 64)


def manifest(config: Digest | None, media_type: str = OCI_MANIFEST) -> bytes:
    document: dict[str, Any] = {"schemaVersion": 2, "mediaType": media_type, "layers": []}
    if config is not None:
        document["config"] = {"mediaType": "application/json", "digest": str(config), "size": 1}
    return json.dumps(document).encode()


def index(*entries: dict[str, Any], media_type: str = OCI_INDEX) -> bytes:
    return json.dumps({"schemaVersion": 2, "mediaType": media_type, "manifests": entries}).encode()


def entry(body: bytes, platform: str | None = None, **extra: Any) -> dict[str, Any]:
    found: dict[str, Any] = {"digest": str(digest_of(body)), "size": len(body), **extra}
    if platform is not None:
        os_name, arch, *variant = platform.split("/")
        found["platform"] = {"os": os_name, "architecture": arch}
        if variant:
            found["platform"]["variant"] = variant[0]
    return found


def serve(*bodies: bytes, status: int = 200) -> Handler:
    """GET by digest answers the body of that digest; anything else is a 404."""
    by_digest = {str(digest_of(b)): b for b in bodies}

    def handle(method: str, url: str, kwargs: dict[str, Any]) -> requests.Response:
        if method == "HEAD":
            return response(200, {"Docker-Content-Digest": str(digest_of(bodies[0]))})
        body = by_digest.get(url.rpartition("/")[2])
        if body is None:
            return response(404)
        return response(status, {}, body)

    return handle


def want(body: bytes | Digest, repository: str = MIRROR, host: str = HOST) -> ContentRequest:
    digest = body if isinstance(body, Digest) else digest_of(body)
    return ContentRequest(host, repository, digest)


def gets(session: Any) -> list[str]:
    return [
        url.removeprefix(f"https://{HOST}") for method, url, _ in session.sent if method == "GET"
    ]


AMD = manifest(CFG_AMD)
ARM = manifest(CFG_ARM)
ATTEST = manifest(CFG_ATTEST)
BUILD = index(
    entry(AMD, "linux/amd64"),
    entry(ARM, "linux/arm64/v8"),
    entry(
        ATTEST,
        "unknown/unknown",
        annotations={"vnd.docker.reference.type": "attestation-manifest"},
    ),
)


# --------------------------------------------------------------------------------------------


def test_a_manifest_stands_for_its_config_fetched_from_the_repository_named() -> None:
    client, session = make(serve(AMD))
    answer = client.fetch_content([want(AMD)])
    assert answer == {digest_of(AMD): ImageContent(frozenset({CFG_AMD}))}
    ((method, url, headers),) = session.sent
    assert (method, url) == ("GET", f"https://{HOST}/v2/{MIRROR}/manifests/{digest_of(AMD)}")
    assert headers["Authorization"] == BASIC
    assert OCI_MANIFEST in headers["Accept"] and DOCKER_MANIFEST in headers["Accept"]
    assert client.known_content() == answer


def test_an_index_stands_for_its_runnable_childrens_configs_by_platform() -> None:
    client, session = make(serve(BUILD, AMD, ARM, ATTEST))
    target = digest_of(BUILD)
    assert client.fetch_content([want(BUILD)]) == {
        target: ImageContent(
            frozenset({CFG_AMD, CFG_ARM}),
            (("linux/amd64", CFG_AMD), ("linux/arm64/v8", CFG_ARM)),
        )
    }
    # The index and its two images; the attestation is never fetched.
    assert gets(session) == [
        f"/v2/{MIRROR}/manifests/{target}",
        f"/v2/{MIRROR}/manifests/{digest_of(AMD)}",
        f"/v2/{MIRROR}/manifests/{digest_of(ARM)}",
    ]
    # The GET also told the index's children, for free.
    assert client.known_children()[target] == frozenset(
        {digest_of(AMD), digest_of(ARM), digest_of(ATTEST)}
    )


def test_a_docker_list_and_an_index_entry_without_a_platform() -> None:
    amd = manifest(CFG_AMD, DOCKER_MANIFEST)
    listed = index(entry(amd), media_type=DOCKER_LIST)
    client, _ = make(serve(listed, amd))
    assert client.fetch_content([want(listed)]) == {
        digest_of(listed): ImageContent(frozenset({CFG_AMD}))
    }


def test_content_is_cached_by_digest_children_included() -> None:
    client, session = make(serve(BUILD, AMD, ARM))
    client.fetch_content([want(BUILD)])
    sent = len(session.sent)
    # Again, from another repository, and a child on its own: digests are immutable.
    again = client.fetch_content([want(BUILD, "team/app"), want(AMD), want(ARM, "team/other")])
    assert len(session.sent) == sent
    assert again[digest_of(AMD)] == ImageContent(frozenset({CFG_AMD}))


def test_the_content_cache_is_bounded() -> None:
    bodies = [manifest(Digest("sha256:" + str(i) * 64)) for i in range(4)]
    client, _ = make(serve(*bodies), content_cache_size=2)
    for body in bodies:
        client.fetch_content([want(body)])
    assert list(client.known_content()) == [digest_of(b) for b in bodies[-2:]]


def test_a_bearer_token_is_asked_for_the_other_repositorys_scope() -> None:
    scopes: list[str] = []

    def handle(method: str, url: str, kwargs: dict[str, Any]) -> requests.Response:
        path = url.removeprefix(f"https://{HOST}")
        if path.startswith("/token"):
            scope = kwargs["params"]["scope"]
            scopes.append(scope)
            return response(200, body=json.dumps({"token": f"t:{scope}"}).encode())
        repository = path.removeprefix("/v2/").partition("/manifests/")[0]
        scope = f"repository:{repository}:pull"
        if kwargs["headers"]["Authorization"] == f"Bearer t:{scope}":
            if method == "HEAD":
                return response(200, {"Docker-Content-Digest": str(digest_of(AMD))})
            return response(200, {}, AMD)
        challenge = f'Bearer realm="https://{HOST}/token",service="s",scope="{scope}"'
        return response(401, {"WWW-Authenticate": challenge})

    client, _ = make(handle)
    assert client.resolve([ENROLLED]) == {ENROLLED: digest_of(AMD)}
    assert client.fetch_content([want(AMD)]) == {digest_of(AMD): ImageContent(frozenset({CFG_AMD}))}
    # The enrolled repository's token is not the mirror's: each repository gets its own.
    assert scopes == ["repository:team/app:pull", f"repository:{MIRROR}:pull"]


def test_a_body_that_does_not_hash_to_its_digest_is_rejected_and_not_cached() -> None:
    client, _ = make(lambda *_: response(200, {}, AMD))
    wrong = Digest("sha256:" + "9" * 64)
    assert reason(client.fetch_content([want(wrong)])[wrong]) == "digest-mismatch"
    assert client.known_content() == {}


def test_a_child_that_does_not_hash_to_its_digest_leaves_the_index_unknown() -> None:
    def handle(method: str, url: str, kwargs: dict[str, Any]) -> requests.Response:
        asked = url.rpartition("/")[2]
        return response(200, {}, BUILD if asked == str(digest_of(BUILD)) else AMD)

    client, _ = make(handle)
    target = digest_of(BUILD)
    assert reason(client.fetch_content([want(BUILD)])[target]) == "digest-mismatch"
    assert target not in client.known_content()


def test_unknown_reasons() -> None:
    nested = index(entry(BUILD, "linux/amd64"))
    only_attestation = index(entry(ATTEST, "unknown/unknown"))
    no_config = manifest(None)
    cases = {
        "not-found": (serve(AMD), want(ARM)),
        "forbidden": (serve(AMD, status=403), want(AMD)),
        "bad-manifest": (serve(no_config), want(no_config)),
        "too-large": (lambda *_: response(200, {}, b"x" * (MAX_MANIFEST_BYTES + 1)), want(AMD)),
    }
    for expected, (handler, wanted) in cases.items():
        client, _ = make(handler)
        assert reason(client.fetch_content([wanted])[wanted.digest]) == expected
    deep = manifest(CFG_AMD)[:-1] + b', "x": ' + b"[" * 1500 + b"]" * 1500 + b"}"
    for body in (nested, only_attestation, deep):
        client, _ = make(serve(body, BUILD, ATTEST, AMD, ARM))
        assert reason(client.fetch_content([want(body)])[digest_of(body)]) == "bad-manifest"
        assert client.known_content().get(digest_of(body)) is None


def test_a_manifest_nested_past_the_cap_is_bad_manifest_never_a_crash() -> None:
    # 1,500 arrays deep: json.loads would raise RecursionError out of fetch_content.
    deep = manifest(CFG_AMD)[:-1] + b', "x": ' + b"[" * 1500 + b"]" * 1500 + b"}"
    client, _ = make(serve(deep))
    answer = client.fetch_content([want(deep)])[digest_of(deep)]
    assert reason(answer) == "bad-manifest"
    assert "nested more than 64" in str(answer)
    children = client.fetch_children([ChildrenRequest(ENROLLED, digest_of(deep))])
    assert reason(children[digest_of(deep)]) == "bad-manifest"


def test_a_basic_challenge_is_unauthorized() -> None:
    client, _ = make(lambda *_: response(401, {"WWW-Authenticate": 'Basic realm="x"'}))
    assert reason(client.fetch_content([want(AMD)])[digest_of(AMD)]) == "unauthorized"


def test_a_manifest_on_another_host_is_never_asked_for() -> None:
    client, session = make(serve(AMD))
    answer = client.fetch_content([want(AMD, host="docker.io")])
    assert reason(answer[digest_of(AMD)]) == "other-host"
    assert session.sent == []


def test_content_shares_the_tick_budget() -> None:
    """The registry's time in ``resolve`` counts against the fetches after it."""
    clock = Clock()
    client, session = make(
        taking(11, clock, serve(BUILD, AMD, ARM)), clock=clock, budget_seconds=10
    )
    client.resolve([ENROLLED])
    assert reason(client.fetch_content([want(BUILD)])[digest_of(BUILD)]) == "budget-exhausted"
    assert [m for m, _, _ in session.sent] == ["HEAD"]


def test_the_targets_configs_are_fetched_after_a_long_pass() -> None:
    """Issue 28: the end of a pass asks for each new target's configs; the minutes the pass
    spent deciding (a loaded CPU) are not the registry's, so the GETs go in that pass and
    are never asked again."""
    clock = Clock()
    client, session = make(serve(AMD), clock=clock, budget_seconds=10)
    client.resolve([ENROLLED])
    clock.now += 600
    assert client.fetch_content([want(AMD)]) == {digest_of(AMD): ImageContent(frozenset({CFG_AMD}))}
    client.resolve([ENROLLED])
    clock.now += 600
    assert client.known_content() == {digest_of(AMD): ImageContent(frozenset({CFG_AMD}))}
    assert client.fetch_content([want(AMD)])[digest_of(AMD)] == ImageContent(frozenset({CFG_AMD}))
    assert len(gets(session)) == 1


def test_distinct_digests_are_fetched_a_few_at_once() -> None:
    """Each target's configs: with ``lookup_concurrency`` 4, four GETs are in flight together
    (one slow registry round trip per four targets, not per target)."""
    bodies = [manifest(Digest("sha256:" + f"{i:x}" * 64)) for i in range(8)]
    inner = serve(*bodies)
    in_flight = 0
    most = 0
    lock = threading.Lock()
    four = threading.Barrier(4, timeout=5)

    def handler(method: str, url: str, kwargs: dict[str, Any]) -> requests.Response:
        nonlocal in_flight, most
        with lock:
            in_flight += 1
            most = max(most, in_flight)
        four.wait()  # only returns once four requests are in flight at once
        with lock:
            in_flight -= 1
        return inner(method, url, kwargs)

    client, _ = make(handler, lookup_concurrency=4)
    answers = client.fetch_content([want(b) for b in bodies])
    assert all(isinstance(a, ImageContent) for a in answers.values())
    assert list(answers) == sorted(digest_of(b) for b in bodies)
    assert most == 4
    assert len(client.known_content()) == 8


def test_a_budget_spent_among_the_children_leaves_the_index_unknown() -> None:
    clock = Clock()
    client, session = make(
        taking(3.5, clock, serve(BUILD, AMD, ARM)), clock=clock, budget_seconds=10
    )
    client.resolve([ENROLLED])  # 3.5 s
    assert reason(client.fetch_content([want(BUILD)])[digest_of(BUILD)]) == "budget-exhausted"
    # The index (7 s) and its first child, whose answer came after the budget (10.5 s).
    assert gets(session) == [
        f"/v2/{MIRROR}/manifests/{digest_of(BUILD)}",
        f"/v2/{MIRROR}/manifests/{digest_of(AMD)}",
    ]
    assert client.known_content() == {}


def test_a_failure_is_not_asked_again_from_that_repository_until_the_next_tick() -> None:
    client, session = make(serve(AMD))
    missing = want(ARM)
    client.resolve([ENROLLED])
    for _ in range(3):
        assert reason(client.fetch_content([missing])[missing.digest]) == "not-found"
    assert len(gets(session)) == 1
    # Another repository may hold the digest: it is asked.
    client.fetch_content([want(ARM, "team/app")])
    assert len(gets(session)) == 2
    client.resolve([ENROLLED])
    client.fetch_content([missing])
    assert len(gets(session)) == 3


def test_the_same_digest_from_a_second_repository_answers_when_the_first_fails() -> None:
    def handle(method: str, url: str, kwargs: dict[str, Any]) -> requests.Response:
        return response(200, {}, AMD) if "/team/app/" in url else response(404)

    client, _ = make(handle)
    answer = client.fetch_content([want(AMD, MIRROR), want(AMD, "team/app")])
    assert answer == {digest_of(AMD): ImageContent(frozenset({CFG_AMD}))}
