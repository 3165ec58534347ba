"""The pull credentials of a workload, read as the kubelet and ServiceAccount admission read them,
and merged per tag and per workload (``autoroll.controller.credentials``, ``core.lookups``)."""

from __future__ import annotations

import base64
import json
from dataclasses import replace

import pytest

from autoroll.controller.credentials import PullCredentials
from autoroll.core.images import TagRef
from autoroll.core.keyring import DOCKER_CFG, DOCKER_CONFIG_JSON, Credential, PullSecret
from autoroll.core.lookups import Answer, Lookup, Resolution, merge_answers
from autoroll.core.model import ContainerView, Digest, Unknown, WorkloadView
from autoroll.kube.errors import ClusterForbiddenError
from tests.support.views import deployment_view

GITEA = "127.0.0.1:3000"
DISTRIBUTION = "127.0.0.1:5000"
REF = TagRef(GITEA, "owner/web", "latest")
SIDE = TagRef(DISTRIBUTION, "e2e/side", "latest")
OLD = Digest("sha256:" + "a" * 64)
NEW = Digest("sha256:" + "b" * 64)


def dockerconfig(host: str, user: str, password: str) -> dict[str, bytes]:
    pair = base64.b64encode(f"{user}:{password}".encode()).decode()
    return {".dockerconfigjson": json.dumps({"auths": {host: {"auth": pair}}}).encode()}


class Secrets:
    """A SecretPort over a dict; counts reads; ``refuse`` names what answers 403."""

    def __init__(self) -> None:
        self.secrets: dict[tuple[str, str], PullSecret] = {}
        self.accounts: dict[tuple[str, str], tuple[str, ...]] = {}
        self.refuse: set[tuple[str, str]] = set()
        self.reads: list[tuple[str, str, str]] = []

    def add(
        self, name: str, data: dict[str, bytes], *, kind: str = DOCKER_CONFIG_JSON, rv: str = "1"
    ) -> None:
        self.secrets[("shop", name)] = PullSecret("shop", name, kind, data, f"uid-{name}", rv)

    def pull_secret(self, namespace: str, name: str) -> PullSecret | None:
        self.reads.append(("secret", namespace, name))
        if (namespace, name) in self.refuse:
            raise ClusterForbiddenError(
                f"get secret {namespace}/{name}: 403 Forbidden; the ClusterRole must grant"
                " secrets: get",
                status=403,
            )
        return self.secrets.get((namespace, name))

    def service_account(self, namespace: str, name: str) -> tuple[str, ...] | None:
        self.reads.append(("serviceaccount", namespace, name))
        return self.accounts.get((namespace, name))


def app(
    *, pull_secrets: tuple[str, ...] = (), account: str = "", name: str = "web"
) -> WorkloadView:
    view = deployment_view(
        "shop",
        name,
        2,
        (
            ContainerView("web", f"{GITEA}/owner/web:latest", "Always"),
            ContainerView("side", f"{DISTRIBUTION}/e2e/side:latest", "Always"),
        ),
    )
    return replace(view, pull_secrets=pull_secrets, service_account=account)


def credentials(
    secrets: Secrets,
    *,
    hosts: frozenset[str] = frozenset({GITEA, DISTRIBUTION}),
    told: list[str] | None = None,
) -> PullCredentials:
    return PullCredentials(
        secrets=secrets, hosts=hosts, on_secret=(told.append if told is not None else None)
    )


REGISTRIES = frozenset({GITEA, DISTRIBUTION})


def test_each_image_gets_the_pull_secret_whose_key_serves_it() -> None:
    secrets = Secrets()
    secrets.add("gitea-pull", dockerconfig(GITEA, "owner", "token-1"))
    secrets.add("registry-pull", dockerconfig(DISTRIBUTION, "e2e", "pw-2"))
    asked, notes = credentials(secrets).lookups(
        [app(pull_secrets=("gitea-pull", "registry-pull"))], registries=REGISTRIES
    )
    web, side = asked["shop/deployment/web"][REF], asked["shop/deployment/web"][SIDE]
    assert isinstance(web, Lookup) and isinstance(side, Lookup)
    assert [(c.username, c.source) for c in web.credentials] == [
        ("owner", "imagePullSecret shop/gitea-pull")
    ]
    assert [c.source for c in side.credentials] == ["imagePullSecret shop/registry-pull"]
    assert notes == {}
    # Each Secret read once, the ServiceAccount not at all: the pod lists its own.
    assert sorted(secrets.reads) == [
        ("secret", "shop", "gitea-pull"),
        ("secret", "shop", "registry-pull"),
    ]


def test_a_pod_without_pull_secrets_gets_its_service_accounts_as_admission_copies_them() -> None:
    secrets = Secrets()
    secrets.add("sa-pull", dockerconfig(GITEA, "owner", "t"))
    secrets.accounts[("shop", "builder")] = ("sa-pull",)
    asked, _ = credentials(secrets).lookups([app(account="builder")], registries=REGISTRIES)
    lookup = asked["shop/deployment/web"][REF]
    assert isinstance(lookup, Lookup)
    assert [c.source for c in lookup.credentials] == [
        "ServiceAccount shop/builder's imagePullSecret shop/sa-pull"
    ]


def test_an_unnamed_service_account_is_default() -> None:
    secrets = Secrets()
    secrets.accounts[("shop", "default")] = ()
    credentials(secrets).lookups([app()], registries=REGISTRIES)
    assert ("serviceaccount", "shop", "default") in secrets.reads


def test_pod_pull_secrets_win_over_the_service_accounts() -> None:
    """Admission adds the ServiceAccount's only to a pod that lists none."""
    secrets = Secrets()
    secrets.add("mine", dockerconfig(GITEA, "me", "1"))
    secrets.accounts[("shop", "builder")] = ("theirs",)
    asked, _ = credentials(secrets).lookups(
        [app(pull_secrets=("mine",), account="builder")], registries=REGISTRIES
    )
    assert ("serviceaccount", "shop", "builder") not in secrets.reads
    lookup = asked["shop/deployment/web"][REF]
    assert isinstance(lookup, Lookup) and lookup.credentials[0].username == "me"


def test_a_missing_secret_is_skipped_and_noted_by_name() -> None:
    secrets = Secrets()
    asked, notes = credentials(secrets).lookups(
        [app(pull_secrets=("gone",))], registries=REGISTRIES
    )
    lookup = asked["shop/deployment/web"][REF]
    assert lookup == Lookup(REF, ())  # asked anonymously, as the kubelet would pull
    assert notes["shop/deployment/web"] == (
        "imagePullSecret shop/gone not found (the kubelet skips it too)",
    )


def test_a_secret_the_kubelet_refuses_makes_the_workloads_images_unknown_naming_it() -> None:
    secrets = Secrets()
    secrets.add("broken", {".dockerconfigjson": b"{not json"})
    asked, _ = credentials(secrets).lookups([app(pull_secrets=("broken",))], registries=REGISTRIES)
    for ref in (REF, SIDE):
        value = asked["shop/deployment/web"][ref]
        assert isinstance(value, Unknown) and value.reason == "pull-secret-invalid"
        assert "imagePullSecret shop/broken" in value.detail


def test_a_secret_autoroll_may_not_read_is_unknown_naming_it_and_the_rule() -> None:
    secrets = Secrets()
    secrets.refuse.add(("shop", "locked"))
    asked, _ = credentials(secrets).lookups([app(pull_secrets=("locked",))], registries=REGISTRIES)
    value = asked["shop/deployment/web"][REF]
    assert isinstance(value, Unknown) and value.reason == "pull-secret-unreadable"
    assert "shop/locked" in value.detail and "secrets: get" in value.detail


def test_a_registry_without_pull_secrets_is_asked_with_its_own_only() -> None:
    secrets = Secrets()
    asked, _ = credentials(secrets, hosts=frozenset({GITEA})).lookups(
        [app(pull_secrets=("gitea-pull",))], registries=REGISTRIES
    )
    assert asked["shop/deployment/web"][SIDE] == Lookup(SIDE)


def test_a_secret_is_parsed_once_per_resource_version_and_its_password_redacted() -> None:
    secrets = Secrets()
    secrets.add("pull", dockerconfig(GITEA, "owner", "first-password"))
    told: list[str] = []
    reader = credentials(secrets, told=told)
    for _ in range(3):
        reader.lookups([app(pull_secrets=("pull",))], registries=REGISTRIES)
    assert told.count("first-password") == 1  # parsed (and told) once for one resourceVersion
    assert base64.b64encode(b"owner:first-password").decode() in told
    secrets.add("pull", dockerconfig(GITEA, "owner", "second-password"), rv="2")
    asked, _ = reader.lookups([app(pull_secrets=("pull",))], registries=REGISTRIES)
    lookup = asked["shop/deployment/web"][REF]
    assert isinstance(lookup, Lookup) and lookup.credentials[0].password == "second-password"
    assert "second-password" in told


def test_a_dockercfg_secret_serves_too() -> None:
    secrets = Secrets()
    pair = base64.b64encode(b"old:style").decode()
    secrets.add(
        "legacy", {".dockercfg": json.dumps({GITEA: {"auth": pair}}).encode()}, kind=DOCKER_CFG
    )
    asked, _ = credentials(secrets).lookups([app(pull_secrets=("legacy",))], registries=REGISTRIES)
    lookup = asked["shop/deployment/web"][REF]
    assert isinstance(lookup, Lookup) and lookup.credentials[0].username == "old"


# --- merging the answers ---------------------------------------------------------------------

GOOD = Lookup(REF, (Credential("owner", "t", "imagePullSecret shop/good", GITEA),))
BAD = Lookup(REF, (Credential("owner", "wrong", "imagePullSecret shop/bad", GITEA),))


def test_a_tag_is_the_digest_any_workload_got_and_each_workload_keeps_its_own_failure() -> None:
    refused = Unknown("unauthorized", "HTTP 401: the registry refused imagePullSecret shop/bad")
    resolution = merge_answers(
        {"shop/deployment/a": {REF: BAD}, "shop/deployment/b": {REF: GOOD}},
        {BAD: Answer(refused), GOOD: Answer(NEW, "imagePullSecret shop/good")},
    )
    assert resolution.by_ref == {REF: NEW}
    assert resolution.for_workload("shop/deployment/a")[REF] == refused
    assert resolution.for_workload("shop/deployment/b")[REF] == NEW
    assert resolution.sources == {
        "shop/deployment/b": {REF: f"{GITEA} · imagePullSecret shop/good"}
    }


@pytest.mark.parametrize(
    ("asked", "answers", "expected"),
    [
        ({"k": {REF: Lookup(REF)}}, {Lookup(REF): Answer(OLD, "anonymous")}, {REF: OLD}),
        (
            {"k": {REF: Unknown("pull-secret-invalid", "x")}},
            {},
            {REF: Unknown("pull-secret-invalid", "x")},
        ),
        ({"k": {REF: Lookup(REF)}}, {}, {}),  # not asked this pass: nothing said
    ],
)
def test_merging_cases(
    asked: dict[str, dict[TagRef, Lookup | Unknown]],
    answers: dict[Lookup, Answer],
    expected: dict[TagRef, Digest | Unknown],
) -> None:
    assert merge_answers(asked, answers).by_ref == expected


def test_a_tag_left_for_a_later_pass_is_its_unknown_everywhere() -> None:
    later = Unknown("namespace-share", "over the share")
    resolution = merge_answers({"k": {REF: Lookup(REF)}}, {}, unasked={REF: later})
    assert resolution.by_ref == {REF: later}
    assert resolution == Resolution({REF: later}, {}, {})
