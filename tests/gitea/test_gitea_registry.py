"""The registry client against Gitea's real container registry (what Forgejo forked).

Images are pushed with skopeo as users push them; the client reads with a read-only token
(``read:package``), as the chart's Secret holds. What Gitea does not do on its own — refuse
Basic credentials on manifests, so that a client must take its Bearer flow — comes from
``BasicWithholdingProxy``, and those tests say "stand-in" in their names.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import requests
from prometheus_client import CollectorRegistry

from autoroll.controller.reconciler import Reconciler
from autoroll.core.decide import ChildrenRequest
from autoroll.core.images import TagRef
from autoroll.core.model import (
    ContainerView,
    Digest,
    Enrolled,
)
from autoroll.instruments.metrics import Metrics
from tests.conftest import require_tool
from tests.gitea.registry_reading import client, failed_lookup, reader
from tests.support.gitea import Account, GiteaServer
from tests.support.gitea_images import Pusher
from tests.support.gitea_launch import running_gitea
from tests.support.gitea_proxy import BasicWithholdingProxy
from tests.support.reconciler_fakes import FakeCluster
from tests.support.registry import Flavour
from tests.support.registry_recorder import Recorder
from tests.support.views import deployment_view, pod_view

pytestmark = pytest.mark.gitea


# --------------------------------------------------------------------------------------------
# Digests and children


@pytest.mark.parametrize(
    "kind",
    [("oci", ("amd64", "arm64")), ("docker", ("amd64", "arm64")), ("oci", ()), ("docker", ())],
    ids=["oci-index", "docker-list", "oci-manifest", "docker-manifest"],
)
def test_a_tag_resolves_to_the_digest_gitea_stores_with_basic_straight_away(
    gitea: GiteaServer,
    gitea_pusher: Pusher,
    owner: Account,
    session: requests.Session,
    kind: tuple[Flavour, tuple[str, ...]],
) -> None:
    flavour, architectures = kind
    image = "app"  # the owner is this test's own
    pushed = gitea_pusher.push(owner, image, "latest", flavour=flavour, architectures=architectures)
    assert gitea.stored_digest(owner.name, image, "latest") == pushed.digest
    recorder = Recorder()
    registry = client(session, gitea.url, owner.user, reader(gitea, owner), observer=recorder)
    ref = TagRef(gitea.host, f"{owner.name}/{image}", "latest")
    digest = Digest(pushed.digest)

    assert registry.resolve([ref]) == {ref: digest}
    children = registry.fetch_children([ChildrenRequest(ref, digest)])

    assert children == {digest: frozenset(Digest(c) for c in pushed.children)}
    assert len(pushed.children) == len(architectures)
    # Gitea takes Basic (user + token) on the registry: no challenge, no token request.
    assert recorder.requests == Counter({"manifest-head": 1, "manifest-get": 1})
    assert recorder.errors == Counter()


def test_a_moved_tag_resolves_to_the_new_digest(
    gitea: GiteaServer, gitea_pusher: Pusher, owner: Account, image: str, session: requests.Session
) -> None:
    registry = client(session, gitea.url, owner.user, reader(gitea, owner))
    ref = TagRef(gitea.host, f"{owner.name}/{image}", "latest")
    first = gitea_pusher.push(owner, image, "latest", architectures=("amd64", "arm64"))
    assert registry.resolve([ref]) == {ref: Digest(first.digest)}
    second = gitea_pusher.push(owner, image, "latest", architectures=("amd64", "arm64"))
    assert second.digest != first.digest
    assert registry.resolve([ref]) == {ref: Digest(second.digest)}


def test_a_missing_tag_is_not_found(
    gitea: GiteaServer, gitea_pusher: Pusher, owner: Account, image: str, session: requests.Session
) -> None:
    gitea_pusher.push(owner, image, "latest")
    token = reader(gitea, owner)
    answer = failed_lookup(
        session, gitea, owner.user, token, f"{owner.name}/{image}", tag="no-such-tag"
    )
    assert answer.reason == "not-found"


# --------------------------------------------------------------------------------------------
# A whole pass: a pod on a platform child is current, a pod on an older index is stale


def running(name: str, image: str, image_id: str) -> Enrolled:
    """A one-replica Deployment whose pod reports ``image_id`` (as containerd does)."""
    created = datetime.now(UTC) - timedelta(hours=1)
    pod = pod_view(  # Ready since it started, as the kubelet reports it
        f"{name}-1", image, image_id, created=created, namespace="shop", ready_changed_at=created
    )
    deployment = deployment_view(
        namespace="shop", name=name, replicas=1, containers=(ContainerView("app", image),)
    )
    return Enrolled(deployment, (pod,))


def test_a_pod_on_a_child_of_the_index_is_current_and_one_on_an_older_index_is_stale(
    gitea: GiteaServer, gitea_pusher: Pusher, owner: Account, image: str, session: requests.Session
) -> None:
    """Gitea drops a tag's previous manifest when the tag is pushed again (GET by its digest
    answers 404), so a pod on the older index is known to run other content only because
    the controller resolved that index's configs while it was the target."""
    old = gitea_pusher.push(owner, image, "latest", architectures=("amd64", "arm64"))
    repository = f"{gitea.host}/{owner.name}/{image}"
    stale = running("stale", f"{repository}:latest", f"{repository}@{old.digest}")
    cluster = FakeCluster([stale])
    metrics = Metrics(CollectorRegistry())
    reconciler = Reconciler(
        cluster=cluster,
        registry=client(session, gitea.url, owner.user, reader(gitea, owner)),
        metrics=metrics,
        registries={gitea.host},
        dry_run=False,
    )
    assert reconciler.tick().decisions[0].containers[0].verdict.value == "current"

    new = gitea_pusher.push(owner, image, "latest", architectures=("amd64", "arm64"))
    # The runtime names the platform manifest it pulled (a child of the new index).
    cluster.items.append(
        running("child", f"{repository}:latest", f"{repository}@{new.children[1]}")
    )
    report = reconciler.tick()

    verdicts = {d.name: d.containers[0].verdict.value for d in report.decisions}
    assert verdicts == {"child": "current", "stale": "stale"}
    assert cluster.deleted == [("shop", "stale-1", "uid-stale-1")]

    # A controller started only after the push cannot resolve the dropped index: unknown.
    late = Reconciler(
        cluster=FakeCluster([stale]),
        registry=client(session, gitea.url, owner.user, reader(gitea, owner)),
        metrics=Metrics(CollectorRegistry()),
        registries={gitea.host},
        dry_run=False,
    )
    verdict = late.tick().decisions[0].containers[0]
    assert (verdict.verdict.value, verdict.reason.value) == ("skipped", "content-unknown")
    assert "not-found" in verdict.detail and "no longer holds it" in verdict.detail


# --------------------------------------------------------------------------------------------
# Refusals: each an Unknown with the right reason and a detail that names the fix


def test_a_wrong_token_is_unauthorized_and_names_the_token(
    gitea: GiteaServer, gitea_pusher: Pusher, owner: Account, image: str, session: requests.Session
) -> None:
    gitea_pusher.push(owner, image, "latest")
    answer = failed_lookup(session, gitea, owner.user, "0" * 40, f"{owner.name}/{image}")
    assert answer.reason == "unauthorized"
    assert "FORGEJO_TOKEN" in answer.detail


def test_a_token_without_read_package_is_unauthorized_and_names_the_scope(
    gitea: GiteaServer, gitea_pusher: Pusher, owner: Account, image: str, session: requests.Session
) -> None:
    gitea_pusher.push(owner, image, "latest")
    token = reader(gitea, owner, scopes=("read:user",))
    answer = failed_lookup(session, gitea, owner.user, token, f"{owner.name}/{image}")
    assert answer.reason == "unauthorized"
    assert 'Basic realm="Gitea Package API"' in answer.detail
    assert "read:package scope" in answer.detail


def owner_of_kind(gitea: GiteaServer, owner: Account, kind: str) -> Account:
    """For ``kind`` "private-user" a new private user, for "private-org" a new private
    organisation that ``owner`` owns; else ``owner`` itself (a public user)."""
    if kind == "private-user":
        return gitea.create_user(f"p-{owner.name}", visibility="private")
    if kind == "private-org":
        return gitea.create_org(f"o-{owner.name}", owner=owner, visibility="private")
    return owner


@pytest.fixture(params=["private-user", "private-org"])
def private_owner(request: pytest.FixtureRequest, gitea: GiteaServer, owner: Account) -> Account:
    """A private user, or a private organisation that ``owner`` owns."""
    return owner_of_kind(gitea, owner, request.param)


@pytest.fixture
def private_org(gitea: GiteaServer, gitea_pusher: Pusher, owner: Account, image: str) -> Account:
    """A private organisation that ``owner`` owns, ``image:latest`` pushed to it."""
    org = owner_of_kind(gitea, owner, "private-org")
    gitea_pusher.push(org, image, "latest")
    return org


def test_a_wrong_token_for_a_private_owner_is_unauthorized_not_a_bad_challenge(
    gitea: GiteaServer,
    gitea_pusher: Pusher,
    private_owner: Account,
    image: str,
    session: requests.Session,
) -> None:
    # Gitea answers with two challenges here (Bearer and Basic in one 401); the realm is
    # the Bearer one's, whatever stands after it.
    gitea_pusher.push(private_owner, image, "latest")
    repository = f"{private_owner.name}/{image}"
    answer = failed_lookup(session, gitea, private_owner.user, "0" * 40, repository)
    assert answer.reason == "unauthorized", answer
    assert "token endpoint refused" in answer.detail
    assert "FORGEJO_TOKEN" in answer.detail


def test_a_user_outside_a_private_org_is_unauthorized_and_told_about_membership(
    gitea: GiteaServer, owner: Account, private_org: Account, image: str, session: requests.Session
) -> None:
    org = private_org
    outsider = gitea.create_user(f"x-{owner.name}")
    token = reader(gitea, outsider)
    answer = failed_lookup(session, gitea, outsider.user, token, f"{org.name}/{image}")
    # Gitea answers Basic realm="Gitea Package API", as to a token without the scope.
    assert answer.reason == "unauthorized", answer
    assert f"must see {org.name!r}'s packages" in answer.detail
    assert "member of its organisation" in answer.detail


def test_a_public_only_token_on_a_private_org_is_forbidden_and_says_why(
    gitea: GiteaServer, owner: Account, private_org: Account, image: str, session: requests.Session
) -> None:
    org = private_org
    token = reader(gitea, owner, scopes=("read:package", "public-only"))
    answer = failed_lookup(session, gitea, owner.user, token, f"{org.name}/{image}")
    assert answer.reason == "forbidden", answer
    assert "limited to public packages" in answer.detail


# --------------------------------------------------------------------------------------------
# The Bearer flow, through Gitea's own token endpoint (stand-in: Basic withheld on manifests)


@pytest.fixture(params=["public-user", "private-user", "private-org"])
def any_owner(request: pytest.FixtureRequest, gitea: GiteaServer, owner: Account) -> Account:
    """``owner`` itself (one challenge), a private user or a private org (two challenges)."""
    return owner_of_kind(gitea, owner, request.param)


def test_stand_in_bearer_only_registry_gets_a_token_from_gitea_and_caches_it(
    gitea: GiteaServer,
    gitea_pusher: Pusher,
    owner: Account,
    any_owner: Account,
    session: requests.Session,
) -> None:
    image = "app"
    pushed = gitea_pusher.push(any_owner, image, "latest", architectures=("amd64", "arm64"))
    with BasicWithholdingProxy(gitea) as proxy:
        recorder = Recorder()
        registry = client(
            session, proxy.url, any_owner.user, reader(gitea, any_owner), observer=recorder
        )
        ref = TagRef(proxy.host, f"{any_owner.name}/{image}", "latest")
        digest = Digest(pushed.digest)

        assert registry.resolve([ref]) == {ref: digest}
        children = registry.fetch_children([ChildrenRequest(ref, digest)])
        assert registry.resolve([ref]) == {ref: digest}

        assert children == {digest: frozenset(Digest(c) for c in pushed.children)}
        # Gitea's own answer to the withheld credentials: its realm follows the Host it was
        # asked on, and a private owner gets a Basic challenge after the Bearer one.
        assert proxy.challenges[0].startswith(f'Bearer realm="{proxy.url}/v2/token"')
        private = any_owner is not owner
        assert ('Basic realm="Gitea Container Registry"' in proxy.challenges[0]) is private
        # One token, then reused (Gitea names no lifetime; the client keeps it 54 s).
        assert proxy.token_requests == 1
        assert recorder.requests["token"] == 1
        assert [s.auth_scheme for s in proxy.seen if "/manifests/" in s.path] == [
            "Basic",
            "Bearer",
            "Bearer",
            "Bearer",
        ]


def test_stand_in_lookups_at_once_fetch_one_token_per_scope(
    gitea: GiteaServer,
    gitea_pusher: Pusher,
    any_owner: Account,
    image: str,
    session: requests.Session,
) -> None:
    for tag in ("latest", "stable"):
        gitea_pusher.push(any_owner, image, tag)
    # Both HEADs are refused before either lookup can ask for a token.
    with BasicWithholdingProxy(gitea, hold=2) as proxy:
        registry = client(
            session, proxy.url, any_owner.user, reader(gitea, any_owner), concurrency=2
        )
        refs = [TagRef(proxy.host, f"{any_owner.name}/{image}", t) for t in ("latest", "stable")]
        answers: Mapping[TagRef, object] = registry.resolve(refs)
        assert all(isinstance(a, Digest) for a in answers.values()), answers
        assert proxy.token_requests == 1


def test_stand_in_a_wrong_token_through_the_bearer_flow_is_unauthorized(
    gitea: GiteaServer,
    gitea_pusher: Pusher,
    any_owner: Account,
    image: str,
    session: requests.Session,
) -> None:
    gitea_pusher.push(any_owner, image, "latest")
    with BasicWithholdingProxy(gitea) as proxy:
        repository = f"{any_owner.name}/{image}"
        answer = failed_lookup(session, proxy, any_owner.user, "0" * 40, repository)
        assert answer.reason == "unauthorized"
        assert "token endpoint refused" in answer.detail
        assert proxy.token_requests == 1


# --------------------------------------------------------------------------------------------
# REQUIRE_SIGNIN_VIEW: every owner answers with both challenges


@pytest.fixture(scope="module")
def signin_gitea() -> Iterator[GiteaServer]:
    """A second Gitea with ``[service] REQUIRE_SIGNIN_VIEW = true``."""
    with running_gitea(require_tool("gitea"), require_signin=True) as server:
        yield server


def test_under_require_signin_view_a_public_owner_gets_both_challenges_and_both_flows_work(
    signin_gitea: GiteaServer, skopeo: str, tmp_path: Path, session: requests.Session
) -> None:
    public = signin_gitea.create_user("signin-user")
    pushed = Pusher(signin_gitea, skopeo, tmp_path).push(public, "app", "latest")
    token = reader(signin_gitea, public)

    wrong = failed_lookup(session, signin_gitea, public.user, "0" * 40, "signin-user/app")
    assert wrong.reason == "unauthorized"
    ref = TagRef(signin_gitea.host, "signin-user/app", "latest")
    basic = client(session, signin_gitea.url, public.user, token)
    assert basic.resolve([ref]) == {ref: Digest(pushed.digest)}
    with BasicWithholdingProxy(signin_gitea) as proxy:
        bearer = client(session, proxy.url, public.user, token)
        via = TagRef(proxy.host, "signin-user/app", "latest")
        assert bearer.resolve([via]) == {via: Digest(pushed.digest)}
        assert 'Basic realm="Gitea Container Registry"' in proxy.challenges[0]
        assert proxy.token_requests == 1
