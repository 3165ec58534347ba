"""The kubelet's registry-key matching, case for case.

The tables are the cases of k8s.io/kubernetes v1.37.2 ``pkg/credentialprovider/keyring_test.go``
(``TestURLsMatch``, ``TestDockerKeyringForGlob``, ``TestKeyringMiss``,
``TestKeyringMissWithDockerHubCredentials``, ``TestKeyringHitWith*DockerHub``,
``TestIsDefaultRegistryMatch``, ``TestDockerKeyringLookup``, ``TestIssue3797``), written again
here as data, plus the Secret formats of ``secrets.go`` and ``config.go``.
"""

from __future__ import annotations

import base64
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from autoroll.core.keyring import (
    DOCKER_CFG,
    DOCKER_CONFIG_JSON,
    Credential,
    Entry,
    Keyring,
    KeyringError,
    is_docker_hub_name,
    key_matches,
    parse_pull_secret,
    pull_name,
    registry_key,
)


@pytest.mark.parametrize(
    ("glob", "target", "expected"),
    [
        ("*.kubernetes.io", "prefix.kubernetes.io", True),
        ("prefix.*.io", "prefix.kubernetes.io", True),
        ("prefix.kubernetes.*", "prefix.kubernetes.io", True),
        ("*-good.kubernetes.io", "prefix-good.kubernetes.io", True),
        ("*.kubernetes.io/blah", "prefix.kubernetes.io/blah", True),
        ("prefix.*.io/foo", "prefix.kubernetes.io/foo/bar", True),
        ("*.kubernetes.io:1111/blah", "prefix.kubernetes.io:1111/blah", True),
        ("prefix.*.io:1111/foo", "prefix.kubernetes.io:1111/foo/bar", True),
        ("*.kubernetes.io", "kubernetes.io", False),
        ("*.*.kubernetes.io", "prefix.kubernetes.io", False),
        ("*.*.kubernetes.io", "kubernetes.io", False),
        ("*kubernetes.io", "a.kubernetes.io", False),
        ("*kubernetes.io", "kubernetes.io", True),
        ("*.*.*.kubernetes.io", "a.b.c.kubernetes.io", True),
        ("kubernetes.io", "kubernetes.com", False),
        ("k*.io", "quay.io", False),
        ("*.kubernetes.io:1234/blah", "prefix.kubernetes.io:1111/blah", False),
        ("prefix.*.io/foo", "prefix.kubernetes.io:1111/foo/bar", False),
        # Beyond the kubelet's table, the same rules: a port on one side only, IP addresses,
        # a path prefix that is a string prefix, not a path component.
        ("127.0.0.1:3000", "127.0.0.1:3000/owner/web", True),
        ("127.0.0.1", "127.0.0.1:3000/owner/web", False),
        ("127.0.0.1:3000", "127.0.0.1/owner/web", False),
        ("registry.example/team", "registry.example/teams/app", True),
        ("registry.example/team/", "registry.example/teams/app", False),
        ("Registry.example", "registry.example/app", False),  # filepath.Match is exact
        ("registr[a-z].example", "registry.example/app", True),
        ("registr[^y].example", "registry.example/app", False),
        ("registr[y.example", "registry.example/app", False),  # a bad pattern matches nothing
        # Go's URL parser reads "?" as the start of a query and "[" first as an IPv6
        # literal, so such keys never reach the glob: they match nothing.
        ("reg?stry.example", "registry.example/app", False),
        ("[a-r]egistry.example", "registry.example/app", False),
    ],
)
def test_urls_match_as_the_kubelet_does(glob: str, target: str, expected: bool) -> None:
    assert key_matches(glob, target) is expected


def secret(auths: dict[str, dict[str, str]], *, kind: str = DOCKER_CONFIG_JSON) -> bytes:
    body = {"auths": auths} if kind == DOCKER_CONFIG_JSON else auths
    return json.dumps(body).encode()


def auth(user: str = "foo", password: str = "bar") -> str:
    return base64.b64encode(f"{user}:{password}".encode()).decode()


def keyring_of(*secrets: tuple[str, dict[str, dict[str, str]]]) -> Keyring:
    """Secrets as the pod lists them: (name, auths)."""
    return Keyring.of(
        parse_pull_secret(
            DOCKER_CONFIG_JSON, {".dockerconfigjson": secret(auths)}, source=f"secret {name}"
        )
        for name, auths in secrets
    )


@pytest.mark.parametrize(
    ("key", "target"),
    [
        ("https://hello.kubernetes.io", "hello.kubernetes.io"),
        ("https://*.docker.io", "prefix.docker.io"),
        ("https://prefix.*.io", "prefix.docker.io"),
        ("https://prefix.docker.*", "prefix.docker.io"),
        ("https://*.docker.io/path", "prefix.docker.io/path"),
        ("https://prefix.*.io/path", "prefix.docker.io/path/subpath"),
        ("https://prefix.docker.*/path", "prefix.docker.io/path"),
        ("https://*.docker.io:8888", "prefix.docker.io:8888"),
        ("https://prefix.*.io:8888", "prefix.docker.io:8888"),
        ("https://prefix.docker.*:8888", "prefix.docker.io:8888"),
        ("https://*.docker.io/path:1111", "prefix.docker.io/path:1111"),
        ("https://*.docker.io/v1/", "prefix.docker.io/path:1111"),
        ("https://*.docker.io/v2/", "prefix.docker.io/path:1111"),
        ("https://prefix.docker.*/path:1111", "prefix.docker.io/path:1111"),
        ("prefix.docker.io:1111", "prefix.docker.io:1111/path"),
        ("*.docker.io:1111", "prefix.docker.io:1111/path"),
    ],
)
def test_a_glob_key_serves_the_image(key: str, target: str) -> None:
    keyring = keyring_of(("regcred", {key: {"email": "foo@bar.baz", "auth": auth()}}))
    [found] = keyring.lookup(target + "/foo/bar")
    assert (found.username, found.password) == ("foo", "bar")


@pytest.mark.parametrize(
    ("key", "target"),
    [
        ("https://hello.kubernetes.io", "world.mesos.org/foo/bar"),
        ("https://*.docker.com", "prefix.docker.io"),
        ("https://suffix.*.io", "prefix.docker.io"),
        ("https://prefix.docker.c*", "prefix.docker.io"),
        ("https://prefix.*.io/path:1111", "prefix.docker.io/path/subpath:1111"),
        ("suffix.*.io", "prefix.docker.io"),
    ],
)
def test_a_key_that_does_not_match_serves_nothing(key: str, target: str) -> None:
    keyring = keyring_of(("regcred", {key: {"auth": auth()}}))
    assert keyring.lookup(target + "/foo/bar") == ()


def test_docker_hub_credentials_serve_docker_hub_names_only() -> None:
    keyring = keyring_of(("hub", {"https://index.docker.io/v1/": {"auth": auth()}}))
    assert keyring.lookup("world.mesos.org/foo/bar") == ()
    for image in ("google/docker-registry", "jenkins", "index.docker.io/google/docker-registry"):
        [found] = keyring.lookup(image)
        assert (found.username, found.password) == ("foo", "bar")
    # What the kubelet looks up is the normalised name: Docker Hub's, library/ filled in.
    [found] = keyring.lookup(pull_name("nginx:1.27"))
    assert found.source == "secret hub"


@pytest.mark.parametrize(
    ("image", "expected"),
    [
        ("foo/bar", True),
        ("docker.io/foo/bar", True),
        ("index.docker.io/foo/bar", True),
        ("foo", True),
        ("", False),
        ("registry.tld/foo/bar", False),
        ("registry:5000/foo/bar", False),
        ("myhostdocker.io/foo/bar", False),
    ],
)
def test_which_names_are_docker_hubs(image: str, expected: bool) -> None:
    assert is_docker_hub_name(image) is expected


def test_the_most_specific_key_comes_first_then_the_host() -> None:
    """``TestDockerKeyringLookup``: keys reverse-sorted, so a path key before its host."""
    keyring = keyring_of(
        (
            "both",
            {
                "bar.example.com/pong": {"username": "grace", "password": "squash"},
                "bar.example.com": {"username": "ada", "password": "smash"},
            },
        )
    )

    def users(image: str) -> list[str]:
        return [c.username for c in keyring.lookup(image)]

    assert users("bar.example.com") == ["ada"]
    assert users("bar.example.com/pong") == ["grace", "ada"]
    assert users("bar.example.com/ping") == ["ada"]
    assert users("bar.example.com/pongz") == ["grace", "ada"]  # a string prefix
    assert users("bar.example.com/pong/pang") == ["grace", "ada"]
    assert users("example.com") == []
    assert users("foo.example.com") == []


def test_a_v1_path_is_the_bare_host() -> None:
    """``TestIssue3797``: ``https://quay.io/v1/`` serves every quay.io image."""
    keyring = keyring_of(("rex", {"https://quay.io/v1/": {"username": "rex", "password": "t"}}))
    for image in ("quay.io", "quay.io/foo", "quay.io/foo/bar"):
        assert [c.username for c in keyring.lookup(image)] == ["rex"]


def test_two_secrets_for_one_registry_are_tried_in_the_pods_order() -> None:
    """Two pull secrets with the same key: both serve, the pod's first listed first (the
    kubelet appends each Secret's credentials under the key as it adds them)."""
    keyring = keyring_of(
        ("old", {"127.0.0.1:3000": {"username": "old", "password": "p1"}}),
        ("new", {"127.0.0.1:3000": {"username": "new", "password": "p2"}}),
    )
    assert [c.source for c in keyring.lookup("127.0.0.1:3000/owner/web")] == [
        "secret old",
        "secret new",
    ]


def test_a_longer_key_of_a_later_secret_still_comes_first() -> None:
    keyring = keyring_of(
        ("host", {"registry.example": {"username": "a", "password": "1"}}),
        ("team", {"registry.example/team": {"username": "b", "password": "2"}}),
    )
    assert [c.username for c in keyring.lookup("registry.example/team/app")] == ["b", "a"]


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("https://index.docker.io/v1/", "index.docker.io"),
        ("http://registry.example:5000", "registry.example:5000"),
        ("registry.example:5000/v2/team", "registry.example:5000/team"),
        ("registry.example/", "registry.example"),
        ("registry.example/team", "registry.example/team"),
        ("registry.example:port", None),
    ],
)
def test_keys_are_indexed_without_scheme_or_api_version(raw: str, expected: str | None) -> None:
    assert registry_key(raw) == expected


def test_a_dockercfg_secret_is_the_map_itself() -> None:
    entries = parse_pull_secret(
        DOCKER_CFG,
        {".dockercfg": secret({"127.0.0.1:5000": {"auth": auth("u", "p:w")}}, kind=DOCKER_CFG)},
        source="imagePullSecret shop/old",
    )
    assert entries == [
        Entry(
            "127.0.0.1:5000", Credential("u", "p:w", "imagePullSecret shop/old", "127.0.0.1:5000")
        )
    ]


def test_auth_wins_over_username_and_password_padded_or_not() -> None:
    unpadded = base64.b64encode(b"user:pw").decode().rstrip("=")
    for value in (auth("user", "pw"), unpadded):
        [entry] = parse_pull_secret(
            DOCKER_CONFIG_JSON,
            {".dockerconfigjson": secret({"h": {"username": "x", "password": "y", "auth": value}})},
            source="s",
        )
        assert (entry.credential.username, entry.credential.password) == ("user", "pw")


def test_field_names_match_without_case_as_go_decodes_them() -> None:
    [entry] = parse_pull_secret(
        DOCKER_CONFIG_JSON,
        {".dockerconfigjson": secret({"h": {"Username": "u", "Password": "p"}})},
        source="s",
    )
    assert (entry.credential.username, entry.credential.password) == ("u", "p")


@pytest.mark.parametrize(
    ("kind", "data"),
    [
        ("Opaque", {".dockerconfigjson": b"{}"}),  # another type: skipped, as the kubelet does
        (DOCKER_CONFIG_JSON, {}),  # the type without its key
        (DOCKER_CONFIG_JSON, {".dockerconfigjson": b""}),
        (DOCKER_CONFIG_JSON, {".dockerconfigjson": b"{}"}),  # no auths: nothing
        (DOCKER_CFG, {".dockerconfigjson": b'{"h": {}}'}),  # dockercfg reads .dockercfg only
    ],
)
def test_what_the_kubelet_skips_adds_nothing(kind: str, data: dict[str, bytes]) -> None:
    assert parse_pull_secret(kind, data, source="s") == []


@pytest.mark.parametrize(
    "raw",
    [
        b"not json",
        b'{"auths": []}',
        b'{"auths": {"h": "text"}}',
        b'{"auths": {"h": {"auth": "!!!"}}}',
        b'{"auths": {"h": {"auth": "' + base64.b64encode(b"no-colon") + b'"}}}',
        b'{"auths": {"h": {"username": 3}}}',
    ],
)
def test_a_secret_the_kubelet_refuses_is_an_error_naming_it_never_its_content(raw: bytes) -> None:
    with pytest.raises(KeyringError) as caught:
        parse_pull_secret(
            DOCKER_CONFIG_JSON, {".dockerconfigjson": raw}, source="imagePullSecret shop/bad"
        )
    assert "imagePullSecret shop/bad" in str(caught.value)
    assert "no-colon" not in str(caught.value)


@pytest.mark.parametrize(
    ("image", "expected"),
    [
        ("nginx", "docker.io/library/nginx"),
        ("nginx:1.27", "docker.io/library/nginx"),
        ("team/app:v1", "docker.io/team/app"),
        ("127.0.0.1:3000/owner/web:latest", "127.0.0.1:3000/owner/web"),
        ("127.0.0.1:3000/owner/web@sha256:" + "a" * 64, "127.0.0.1:3000/owner/web"),
        ("localhost/app", "localhost/app"),
    ],
)
def test_the_name_looked_up_is_the_kubelets(image: str, expected: str) -> None:
    assert pull_name(image) == expected


def test_a_credential_never_shows_its_password() -> None:
    credential = Credential("user", "s3cr3t-value", "imagePullSecret shop/regcred", "h")
    assert "s3cr3t-value" not in repr(credential)
    assert "s3cr3t-value" not in str(credential)
    assert str(credential) == "imagePullSecret shop/regcred (user 'user')"


@given(
    host=st.from_regex(r"[a-z]{1,8}(\.[a-z]{1,8}){0,3}", fullmatch=True),
    port=st.one_of(st.just(""), st.integers(1, 65535).map(lambda p: f":{p}")),
    path=st.from_regex(r"(/[a-z]{1,6}){0,3}", fullmatch=True),
)
def test_a_key_always_serves_its_own_host_and_every_path_under_it(
    host: str, port: str, path: str
) -> None:
    key = f"{host}{port}{path}"
    assert key_matches(key, f"{key}/app")
    assert key_matches(f"{host}{port}", f"{host}{port}{path}/app")
    assert not key_matches(f"x{host}{port}", f"{host}{port}{path}/app")
