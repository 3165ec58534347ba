"""The registry client against a real ``docker-registry`` on 127.0.0.1 (htpasswd auth).

Faults the real registry will not produce on demand (missing or malformed digest header,
slow answers, a Bearer challenge) come from ``FaultyProxy`` in front of it
(``tests.support.faulty_proxy``).
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Iterator

import pytest
import requests

from autoroll.core.decide import ChildrenRequest
from autoroll.core.images import TagRef
from autoroll.core.model import Digest, Unknown
from autoroll.registry import DOCKER_MANIFEST, OCI_MANIFEST, Limits, RegistryClient
from tests.support.faulty_proxy import FaultyProxy
from tests.support.registry import ImagePusher, RegistryServer

pytestmark = pytest.mark.integration


class Recorder:
    """A hand-written observer: counts what the client reports."""

    def __init__(self) -> None:
        self.requests: Counter[str] = Counter()
        self.errors: Counter[str] = Counter()
        self._lock = threading.Lock()  # resolve() reports from several threads

    def request_sent(self, kind: str) -> None:
        with self._lock:
            self.requests[kind] += 1

    def lookup_failed(self, reason: str) -> None:
        with self._lock:
            self.errors[reason] += 1


class FakeClock:
    """A monotonic clock the test moves by hand (token expiry)."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def session() -> Iterator[requests.Session]:
    with requests.Session() as s:
        yield s


def client_for(
    host: str,
    session: requests.Session,
    *,
    user: str,
    password: str,
    observer: Recorder | None = None,
    limits: Limits | None = None,
    clock: FakeClock | None = None,
) -> RegistryClient:
    return RegistryClient(
        session=session,
        base_url=f"http://{host}",
        user=user,
        token=password,
        observer=observer,
        limits=limits,
        clock=clock or time.monotonic,
    )


def ref(host: str, repository: str, tag: str = "latest") -> TagRef:
    return TagRef(host, repository, tag)


# --------------------------------------------------------------------------------------------
# The happy paths


@pytest.mark.parametrize("flavour", ["oci", "docker"])
def test_single_arch_tag_resolves_to_its_manifest_digest(
    registry: RegistryServer,
    pusher: ImagePusher,
    session: requests.Session,
    repository: str,
    flavour: str,
) -> None:
    pushed = pusher.push_image(repository, "latest", flavour=flavour)  # type: ignore[arg-type]
    recorder = Recorder()
    client = client_for(
        registry.host, session, user=registry.user, password=registry.password, observer=recorder
    )
    target = ref(registry.host, repository)
    assert client.resolve([target]) == {target: Digest(pushed.digest)}
    children = client.fetch_children([ChildrenRequest(target, Digest(pushed.digest))])
    assert children == {Digest(pushed.digest): frozenset()}
    assert recorder.errors == Counter()


@pytest.mark.parametrize("flavour", ["oci", "docker"])
def test_multi_arch_tag_resolves_to_the_index_digest_and_children_are_cached(
    registry: RegistryServer,
    pusher: ImagePusher,
    session: requests.Session,
    repository: str,
    flavour: str,
) -> None:
    index = pusher.push_index(repository, "latest", flavour=flavour)  # type: ignore[arg-type]
    recorder = Recorder()
    client = client_for(
        registry.host, session, user=registry.user, password=registry.password, observer=recorder
    )
    target = ref(registry.host, repository)
    digest = Digest(index.digest)
    assert client.resolve([target]) == {target: digest}

    expected = frozenset(Digest(c) for c in index.children)
    assert len(expected) == 2
    assert client.fetch_children([ChildrenRequest(target, digest)]) == {digest: expected}
    assert client.known_children() == {digest: expected}
    # Immutable by digest: asking again sends no request.
    before = recorder.requests["manifest-get"]
    assert client.fetch_children([ChildrenRequest(target, digest)]) == {digest: expected}
    assert recorder.requests["manifest-get"] == before == 1


def test_moved_tag_gives_the_new_digest(
    registry: RegistryServer, pusher: ImagePusher, session: requests.Session, repository: str
) -> None:
    client = client_for(registry.host, session, user=registry.user, password=registry.password)
    target = ref(registry.host, repository)
    first = pusher.push_image(repository, "latest")
    assert client.resolve([target])[target] == Digest(first.digest)
    second = pusher.push_image(repository, "latest")
    assert second.digest != first.digest
    assert client.resolve([target])[target] == Digest(second.digest)


def test_one_head_per_unique_ref(
    registry: RegistryServer, pusher: ImagePusher, session: requests.Session, repository: str
) -> None:
    pusher.push_image(repository, "latest")
    pusher.push_image(repository, "stable")
    recorder = Recorder()
    client = client_for(
        registry.host, session, user=registry.user, password=registry.password, observer=recorder
    )
    a, b = ref(registry.host, repository), ref(registry.host, repository, "stable")
    answers = client.resolve([a, b, a, a, b])
    assert set(answers) == {a, b}
    assert all(isinstance(d, Digest) for d in answers.values())
    assert recorder.requests == Counter({"manifest-head": 2})


@pytest.mark.parametrize("flavour", ["oci", "docker"])
def test_accept_list_matters_for_a_multi_arch_tag(
    registry: RegistryServer,
    pusher: ImagePusher,
    session: requests.Session,
    repository: str,
    flavour: str,
) -> None:
    """Without the index types the registry never answers with the index digest runtimes record.

    docker-registry 2.8 answers 404 for an OCI index and silently substitutes the amd64
    child for a Docker manifest list; either way a naive client would see a "change".
    """
    index = pusher.push_index(repository, "latest", flavour=flavour)  # type: ignore[arg-type]
    naive = session.head(
        f"{registry.url}/v2/{repository}/manifests/latest",
        headers={
            "Authorization": registry.authorization,
            "Accept": f"{OCI_MANIFEST}, {DOCKER_MANIFEST}",
        },
        timeout=10,
    )
    naive_answer = (naive.status_code, naive.headers.get("Docker-Content-Digest"))
    assert naive_answer[1] != index.digest
    if flavour == "oci":
        assert naive_answer[0] == 404
    else:
        assert naive_answer == (200, index.children[0])  # the amd64 child

    client = client_for(registry.host, session, user=registry.user, password=registry.password)
    target = ref(registry.host, repository)
    assert client.resolve([target])[target] == Digest(index.digest)


# --------------------------------------------------------------------------------------------
# Every failure is Unknown, with a reason


def test_wrong_credentials_are_unknown_unauthorized(
    registry: RegistryServer, pusher: ImagePusher, session: requests.Session, repository: str
) -> None:
    pusher.push_image(repository, "latest")
    recorder = Recorder()
    client = client_for(
        registry.host, session, user=registry.user, password="wrong", observer=recorder
    )
    target = ref(registry.host, repository)
    answer = client.resolve([target])[target]
    assert isinstance(answer, Unknown) and answer.reason == "unauthorized"
    assert recorder.errors == Counter({"unauthorized": 1})


def test_missing_tag_is_unknown_not_found(
    registry: RegistryServer, pusher: ImagePusher, session: requests.Session, repository: str
) -> None:
    pusher.push_image(repository, "latest")
    client = client_for(registry.host, session, user=registry.user, password=registry.password)
    missing_tag = ref(registry.host, repository, "nope")
    missing_repo = ref(registry.host, "team/does-not-exist")
    answers = client.resolve([missing_tag, missing_repo])
    assert answers == {
        missing_tag: Unknown("not-found", answers[missing_tag].detail),  # type: ignore[union-attr]
        missing_repo: Unknown("not-found", answers[missing_repo].detail),  # type: ignore[union-attr]
    }


def test_stopped_registry_is_unknown_network_and_fast(
    fresh_registry: RegistryServer, session: requests.Session, repository: str
) -> None:
    ImagePusher(fresh_registry).push_image(repository, "latest")
    client = client_for(
        fresh_registry.host, session, user=fresh_registry.user, password=fresh_registry.password
    )
    target = ref(fresh_registry.host, repository)
    assert isinstance(client.resolve([target])[target], Digest)
    fresh_registry.stop()
    started = time.monotonic()
    answer = client.resolve([target])[target]
    elapsed = time.monotonic() - started
    assert isinstance(answer, Unknown) and answer.reason == "network"
    assert elapsed < 2.0


@pytest.mark.parametrize(
    ("mode", "reason"),
    [("drop-digest", "missing-digest"), ("malformed-digest", "malformed-digest")],
)
def test_missing_or_malformed_digest_header_is_unknown(
    registry: RegistryServer, session: requests.Session, repository: str, mode: str, reason: str
) -> None:
    ImagePusher(registry).push_image(repository, "latest")
    with FaultyProxy(registry, mode=mode) as proxy:  # type: ignore[arg-type]
        recorder = Recorder()
        client = client_for(
            proxy.host, session, user=registry.user, password=registry.password, observer=recorder
        )
        target = ref(proxy.host, repository)
        answer = client.resolve([target])[target]
    assert isinstance(answer, Unknown) and answer.reason == reason
    assert recorder.errors == Counter({reason: 1})


def test_ref_on_another_host_is_never_asked(
    registry: RegistryServer, session: requests.Session
) -> None:
    recorder = Recorder()
    client = client_for(
        registry.host, session, user=registry.user, password=registry.password, observer=recorder
    )
    other = TagRef("elsewhere.example", "team/app", "latest")
    answer = client.resolve([other])[other]
    assert isinstance(answer, Unknown) and answer.reason == "other-host"
    assert recorder.requests == Counter()


# --------------------------------------------------------------------------------------------
# Bounded time


def test_slow_registry_cannot_stall_a_tick(
    registry: RegistryServer, pusher: ImagePusher, session: requests.Session, repository: str
) -> None:
    """Each answer takes 0.6 s; with a 1 s budget, ten refs finish in about a second.

    With four lookups in flight, the first four are answered, the next four run out of
    budget while waiting (a read timeout capped by what is left), the last two are never sent.
    """
    tags = [f"t{i}" for i in range(1, 11)]
    for tag in tags:
        pusher.push_image(repository, tag)
    with FaultyProxy(registry, mode="slow", delay_seconds=0.6) as proxy:
        client = client_for(
            proxy.host,
            session,
            user=registry.user,
            password=registry.password,
            limits=Limits(connect_seconds=1, read_seconds=2, budget_seconds=1.0),
        )
        refs = [ref(proxy.host, repository, tag) for tag in tags]
        started = time.monotonic()
        answers = client.resolve(refs)
        elapsed = time.monotonic() - started
    reasons = Counter(a.reason if isinstance(a, Unknown) else "ok" for a in answers.values())
    assert elapsed < 2.0, elapsed
    assert 1 <= reasons["ok"] <= 4, reasons
    assert reasons["budget-exhausted"] + reasons["timeout"] == 10 - reasons["ok"], reasons
    assert reasons["budget-exhausted"] >= 1, reasons


def test_read_timeout_is_unknown_timeout(
    registry: RegistryServer, pusher: ImagePusher, session: requests.Session, repository: str
) -> None:
    pusher.push_image(repository, "latest")
    with FaultyProxy(registry, mode="slow", delay_seconds=1.5) as proxy:
        client = client_for(
            proxy.host,
            session,
            user=registry.user,
            password=registry.password,
            limits=Limits(connect_seconds=1, read_seconds=0.3, budget_seconds=5),
        )
        target = ref(proxy.host, repository)
        answer = client.resolve([target])[target]
    assert isinstance(answer, Unknown) and answer.reason == "timeout"


# --------------------------------------------------------------------------------------------
# Bearer challenge


def test_bearer_challenge_gets_a_token_caches_it_and_retries_once(
    registry: RegistryServer, pusher: ImagePusher, session: requests.Session, repository: str
) -> None:
    pushed = pusher.push_image(repository, "latest")
    clock = FakeClock()
    recorder = Recorder()
    with FaultyProxy(registry, mode="bearer", token_lifetime_seconds=60) as proxy:
        client = client_for(
            proxy.host,
            session,
            user=registry.user,
            password=registry.password,
            observer=recorder,
            clock=clock,
        )
        target = ref(proxy.host, repository)
        assert client.resolve([target]) == {target: Digest(pushed.digest)}
        # Basic first, challenged, token fetched, retried with Bearer.
        assert [r[2] for r in proxy.requests] == ["Basic", "Basic", "Bearer"]
        assert proxy.tokens_issued == 1

        # Cached: the next tick goes straight to Bearer.
        clock.now += 30
        assert client.resolve([target]) == {target: Digest(pushed.digest)}
        assert proxy.tokens_issued == 1
        assert proxy.requests[-1][2] == "Bearer"

        # Expired: Basic again, challenged, a new token.
        clock.now += 60
        assert client.resolve([target]) == {target: Digest(pushed.digest)}
        assert proxy.tokens_issued == 2
    assert recorder.requests == Counter({"manifest-head": 5, "token": 2})
    assert recorder.errors == Counter()


def test_bearer_with_wrong_credentials_is_unknown_unauthorized(
    registry: RegistryServer, pusher: ImagePusher, session: requests.Session, repository: str
) -> None:
    pusher.push_image(repository, "latest")
    with FaultyProxy(registry, mode="bearer") as proxy:
        client = client_for(proxy.host, session, user=registry.user, password="wrong")
        target = ref(proxy.host, repository)
        answer = client.resolve([target])[target]
        assert proxy.tokens_issued == 0
    assert isinstance(answer, Unknown) and answer.reason == "unauthorized"


def test_bearer_realm_on_another_host_gets_no_credentials(
    registry: RegistryServer, pusher: ImagePusher, session: requests.Session, repository: str
) -> None:
    pusher.push_image(repository, "latest")
    with FaultyProxy(registry, mode="bearer-foreign-realm") as proxy:
        client = client_for(proxy.host, session, user=registry.user, password=registry.password)
        target = ref(proxy.host, repository)
        answer = client.resolve([target])[target]
        assert not any(path.startswith("/token") for _, path, _ in proxy.requests)
    assert isinstance(answer, Unknown) and answer.reason == "bad-challenge"
