"""The registry client against a real ``docker-registry`` on 127.0.0.1 (htpasswd auth).

Faults the real registry will not produce on demand (missing or malformed digest header,
slow answers, a Bearer challenge) come from ``FaultyProxy`` in front of it
(``tests.support.faulty_proxy``).
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field

import pytest
import requests

from autoroll.core.decide import ChildrenRequest
from autoroll.core.images import TagRef
from autoroll.core.model import Digest, Unknown
from autoroll.registry import DOCKER_MANIFEST, OCI_MANIFEST, Limits, RegistryClient
from tests.support.faulty_proxy import FaultyProxy
from tests.support.registry import ImagePusher, RegistryServer
from tests.support.registry_recorder import ManualClock, Recorder

pytestmark = pytest.mark.integration


@dataclass(frozen=True)
class Rig:
    """The module's registry, a pusher into it, the test's session and its own repository;
    ``recorder`` counts what the test's clients report."""

    registry: RegistryServer
    pusher: ImagePusher
    session: requests.Session
    repository: str
    recorder: Recorder = field(default_factory=Recorder)

    def client(
        self,
        *,
        via: str | None = None,
        password: str | None = None,
        limits: Limits | None = None,
        clock: ManualClock | None = None,
    ) -> RegistryClient:
        """A client of the registry, or of the proxy at host ``via`` in front of it; with the
        registry's credentials unless ``password`` is given."""
        return RegistryClient(
            session=self.session,
            base_url=f"http://{via or self.registry.host}",
            user=self.registry.user,
            token=self.registry.password if password is None else password,
            observer=self.recorder,
            limits=limits,
            clock=clock or time.monotonic,
        )

    def ref(self, tag: str = "latest", *, via: str | None = None) -> TagRef:
        """``tag`` of the test's repository, on the registry or on the proxy at ``via``."""
        return TagRef(via or self.registry.host, self.repository, tag)


@pytest.fixture
def rig(
    registry: RegistryServer, pusher: ImagePusher, session: requests.Session, repository: str
) -> Rig:
    return Rig(registry, pusher, session, repository)


# --------------------------------------------------------------------------------------------
# The happy paths


@pytest.mark.parametrize("flavour", ["oci", "docker"])
def test_single_arch_tag_resolves_to_its_manifest_digest(rig: Rig, flavour: str) -> None:
    pushed = rig.pusher.push_image(rig.repository, "latest", flavour=flavour)  # type: ignore[arg-type]
    client = rig.client()
    target = rig.ref()
    assert client.resolve([target]) == {target: Digest(pushed.digest)}
    children = client.fetch_children([ChildrenRequest(target, Digest(pushed.digest))])
    assert children == {Digest(pushed.digest): frozenset()}
    assert rig.recorder.errors == Counter()


@pytest.mark.parametrize("flavour", ["oci", "docker"])
def test_multi_arch_tag_resolves_to_the_index_digest_and_children_are_cached(
    rig: Rig, flavour: str
) -> None:
    index = rig.pusher.push_index(rig.repository, "latest", flavour=flavour)  # type: ignore[arg-type]
    client = rig.client()
    target = rig.ref()
    digest = Digest(index.digest)
    assert client.resolve([target]) == {target: digest}

    expected = frozenset(Digest(c) for c in index.children)
    assert len(expected) == 2
    assert client.fetch_children([ChildrenRequest(target, digest)]) == {digest: expected}
    assert client.known_children() == {digest: expected}
    # Immutable by digest: asking again sends no request.
    before = rig.recorder.requests["manifest-get"]
    assert client.fetch_children([ChildrenRequest(target, digest)]) == {digest: expected}
    assert rig.recorder.requests["manifest-get"] == before == 1


def test_moved_tag_gives_the_new_digest(rig: Rig) -> None:
    client = rig.client()
    target = rig.ref()
    first = rig.pusher.push_image(rig.repository, "latest")
    assert client.resolve([target])[target] == Digest(first.digest)
    second = rig.pusher.push_image(rig.repository, "latest")
    assert second.digest != first.digest
    assert client.resolve([target])[target] == Digest(second.digest)


def test_one_head_per_unique_ref(rig: Rig) -> None:
    rig.pusher.push_image(rig.repository, "latest")
    rig.pusher.push_image(rig.repository, "stable")
    client = rig.client()
    a, b = rig.ref(), rig.ref("stable")
    answers = client.resolve([a, b, a, a, b])
    assert set(answers) == {a, b}
    assert all(isinstance(d, Digest) for d in answers.values())
    assert rig.recorder.requests == Counter({"manifest-head": 2})


@pytest.mark.parametrize("flavour", ["oci", "docker"])
def test_accept_list_matters_for_a_multi_arch_tag(rig: Rig, flavour: str) -> None:
    """Without the index types the registry never answers with the index digest runtimes record.

    docker-registry 2.8 answers 404 for an OCI index and silently substitutes the amd64
    child for a Docker manifest list; either way a naive client would see a "change".
    """
    index = rig.pusher.push_index(rig.repository, "latest", flavour=flavour)  # type: ignore[arg-type]
    naive = rig.session.head(
        f"{rig.registry.url}/v2/{rig.repository}/manifests/latest",
        headers={
            "Authorization": rig.registry.authorization,
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

    target = rig.ref()
    assert rig.client().resolve([target])[target] == Digest(index.digest)


# --------------------------------------------------------------------------------------------
# Every failure is Unknown, with a reason


def test_wrong_credentials_are_unknown_unauthorized(rig: Rig) -> None:
    rig.pusher.push_image(rig.repository, "latest")
    client = rig.client(password="wrong")
    target = rig.ref()
    answer = client.resolve([target])[target]
    assert isinstance(answer, Unknown) and answer.reason == "unauthorized"
    assert rig.recorder.errors == Counter({"unauthorized": 1})


def test_missing_tag_is_unknown_not_found(rig: Rig) -> None:
    rig.pusher.push_image(rig.repository, "latest")
    client = rig.client()
    missing_tag = rig.ref("nope")
    missing_repo = TagRef(rig.registry.host, "team/does-not-exist", "latest")
    answers = client.resolve([missing_tag, missing_repo])
    assert answers == {
        missing_tag: Unknown("not-found", answers[missing_tag].detail),  # type: ignore[union-attr]
        missing_repo: Unknown("not-found", answers[missing_repo].detail),  # type: ignore[union-attr]
    }


def test_stopped_registry_is_unknown_network_and_fast(
    fresh_registry: RegistryServer, session: requests.Session, repository: str
) -> None:
    rig = Rig(fresh_registry, ImagePusher(fresh_registry), session, repository)
    rig.pusher.push_image(repository, "latest")
    client = rig.client()
    target = rig.ref()
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
def test_missing_or_malformed_digest_header_is_unknown(rig: Rig, mode: str, reason: str) -> None:
    rig.pusher.push_image(rig.repository, "latest")
    with FaultyProxy(rig.registry, mode=mode) as proxy:  # type: ignore[arg-type]
        client = rig.client(via=proxy.host)
        target = rig.ref(via=proxy.host)
        answer = client.resolve([target])[target]
    assert isinstance(answer, Unknown) and answer.reason == reason
    assert rig.recorder.errors == Counter({reason: 1})


def test_ref_on_another_host_is_never_asked(rig: Rig) -> None:
    client = rig.client()
    other = TagRef("elsewhere.example", "team/app", "latest")
    answer = client.resolve([other])[other]
    assert isinstance(answer, Unknown) and answer.reason == "other-host"
    assert rig.recorder.requests == Counter()


# --------------------------------------------------------------------------------------------
# Bounded time


def test_slow_registry_cannot_stall_a_tick(rig: Rig) -> None:
    """Each answer takes 0.6 s; with a 1 s budget, ten refs finish in about a second.

    With four lookups in flight, the first four are answered, the next four run out of
    budget while waiting (a read timeout capped by what is left), the last two are never sent.
    """
    tags = [f"t{i}" for i in range(1, 11)]
    for tag in tags:
        rig.pusher.push_image(rig.repository, tag)
    with FaultyProxy(rig.registry, mode="slow", delay_seconds=0.6) as proxy:
        client = rig.client(
            via=proxy.host, limits=Limits(connect_seconds=1, read_seconds=2, budget_seconds=1.0)
        )
        refs = [rig.ref(tag, via=proxy.host) for tag in tags]
        started = time.monotonic()
        answers = client.resolve(refs)
        elapsed = time.monotonic() - started
    reasons = Counter(a.reason if isinstance(a, Unknown) else "ok" for a in answers.values())
    assert elapsed < 2.0, elapsed
    assert 1 <= reasons["ok"] <= 4, reasons
    assert reasons["budget-exhausted"] + reasons["timeout"] == 10 - reasons["ok"], reasons
    assert reasons["budget-exhausted"] >= 1, reasons


def test_read_timeout_is_unknown_timeout(rig: Rig) -> None:
    rig.pusher.push_image(rig.repository, "latest")
    with FaultyProxy(rig.registry, mode="slow", delay_seconds=1.5) as proxy:
        client = rig.client(
            via=proxy.host, limits=Limits(connect_seconds=1, read_seconds=0.3, budget_seconds=5)
        )
        target = rig.ref(via=proxy.host)
        answer = client.resolve([target])[target]
    assert isinstance(answer, Unknown) and answer.reason == "timeout"


# --------------------------------------------------------------------------------------------
# Bearer challenge


def test_bearer_challenge_gets_a_token_caches_it_and_retries_once(rig: Rig) -> None:
    pushed = rig.pusher.push_image(rig.repository, "latest")
    clock = ManualClock()
    with FaultyProxy(rig.registry, mode="bearer", token_lifetime_seconds=60) as proxy:
        client = rig.client(via=proxy.host, clock=clock)
        target = rig.ref(via=proxy.host)
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
    assert rig.recorder.requests == Counter({"manifest-head": 5, "token": 2})
    assert rig.recorder.errors == Counter()


def test_bearer_with_wrong_credentials_is_unknown_unauthorized(rig: Rig) -> None:
    rig.pusher.push_image(rig.repository, "latest")
    with FaultyProxy(rig.registry, mode="bearer") as proxy:
        client = rig.client(via=proxy.host, password="wrong")
        target = rig.ref(via=proxy.host)
        answer = client.resolve([target])[target]
        assert proxy.tokens_issued == 0
    assert isinstance(answer, Unknown) and answer.reason == "unauthorized"


def test_bearer_realm_on_another_host_gets_no_credentials(rig: Rig) -> None:
    rig.pusher.push_image(rig.repository, "latest")
    with FaultyProxy(rig.registry, mode="bearer-foreign-realm") as proxy:
        client = rig.client(via=proxy.host)
        target = rig.ref(via=proxy.host)
        answer = client.resolve([target])[target]
        assert not any(path.startswith("/token") for _, path, _ in proxy.requests)
    assert isinstance(answer, Unknown) and answer.reason == "bad-challenge"
