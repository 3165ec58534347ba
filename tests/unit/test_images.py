"""Image references and imageID strings: the forms runtimes and users actually write."""

from __future__ import annotations

import pytest

from autoroll.core.images import (
    ImageRef,
    ImageRefError,
    RunningImage,
    TagRef,
    canonical_repository,
    host_matches,
    parse_image,
    parse_image_id,
    parse_running_image,
    registry_host,
)
from autoroll.core.model import Digest, Unknown, is_digest

D = "sha256:" + "ab" * 32


@pytest.mark.parametrize(
    ("reference", "expected"),
    [
        ("nginx", ImageRef("docker.io", "library/nginx", None, None)),
        ("nginx:1.27", ImageRef("docker.io", "library/nginx", "1.27", None)),
        ("team/app", ImageRef("docker.io", "team/app", None, None)),
        ("forgejo.example/team/app", ImageRef("forgejo.example", "team/app", None, None)),
        (
            "forgejo.example:3000/team/app:latest",
            ImageRef("forgejo.example:3000", "team/app", "latest", None),
        ),
        ("localhost/app:v1", ImageRef("localhost", "app", "v1", None)),
        ("localhost:5000/a/b/c:v1", ImageRef("localhost:5000", "a/b/c", "v1", None)),
        ("127.0.0.1:5000/app", ImageRef("127.0.0.1:5000", "app", None, None)),
        ("Forgejo.Example/team/app", ImageRef("forgejo.example", "team/app", None, None)),
        (f"forgejo.example/team/app@{D}", ImageRef("forgejo.example", "team/app", None, D)),
        (f"forgejo.example/team/app:v1@{D}", ImageRef("forgejo.example", "team/app", "v1", D)),
        (
            "forgejo.example/my_team/app-x.y:v1_2-rc.3",
            ImageRef("forgejo.example", "my_team/app-x.y", "v1_2-rc.3", None),
        ),
    ],
)
def test_parse_image(reference: str, expected: ImageRef) -> None:
    assert parse_image(reference) == expected


@pytest.mark.parametrize(
    ("reference", "ref"),
    [
        ("forgejo.example/team/app", TagRef("forgejo.example", "team/app", "latest")),
        ("forgejo.example/team/app:v2", TagRef("forgejo.example", "team/app", "v2")),
        (f"forgejo.example/team/app@{D}", None),
        (f"forgejo.example/team/app:v2@{D}", None),
    ],
)
def test_tag_ref_defaults_to_latest_and_is_none_when_pinned(
    reference: str, ref: TagRef | None
) -> None:
    image = parse_image(reference)
    assert image.tag_ref == ref
    assert image.is_pinned is (ref is None)


def test_tag_ref_str() -> None:
    assert str(TagRef("h:1", "a/b", "latest")) == "h:1/a/b:latest"


@pytest.mark.parametrize(
    ("reference", "fragment"),
    [
        ("", "empty"),
        (" nginx", "whitespace"),
        ("forgejo.example/Team/app", "component 'Team'"),
        ("forgejo.example/team//app", "component ''"),
        ("forgejo.example/team/app:", "malformed tag"),
        ("forgejo.example/team/app:-x", "malformed tag"),
        # the grammar's tag is ASCII [A-Za-z0-9_.-]; Python's \w would also take these
        ("forgejo.example/team/app:vérsion", "malformed tag"),
        ("forgejo.example/team/app:été", "malformed tag"),
        ("forgejo.example/team/app:١٢", "malformed tag"),  # Arabic-Indic digits
        ("forgejo.example/team/app:v1\u200b", "malformed tag"),  # zero-width space
        ("forgejo.example/team/app@sha256:xyz", "malformed digest"),
        ("forge_jo.example/team/app", "malformed registry host"),
        ("app/", "component ''"),
    ],
)
def test_parse_image_rejects_with_the_fault_named(reference: str, fragment: str) -> None:
    with pytest.raises(ImageRefError, match=fragment):
        parse_image(reference)


@pytest.mark.parametrize(
    ("image_id", "expected"),
    [
        (f"docker-pullable://forgejo.example/team/app@{D}", Digest(D)),
        (f"docker://forgejo.example/team/app@{D}", Digest(D)),
        (f"forgejo.example:3000/team/app@{D}", Digest(D)),
        (f"  forgejo.example/team/app@{D} ", Digest(D)),
        (D, Unknown("image-config-id")),
        (f"docker://{D}", Unknown("image-config-id")),
        ("", Unknown("no-image-id")),
        ("docker-pullable://", Unknown("no-image-id")),
        ("forgejo.example/team/app@sha256:short", Unknown("malformed-image-id")),
        ("forgejo.example/team/app@sha512:" + "a" * 128, Unknown("malformed-image-id")),
        ("forgejo.example/team/app:latest", Unknown("malformed-image-id")),
        ("SHA256:" + "AB" * 32, Unknown("malformed-image-id")),
    ],
)
def test_parse_image_id(image_id: str, expected: Digest | Unknown) -> None:
    got = parse_image_id(image_id)
    if isinstance(expected, Unknown):
        assert isinstance(got, Unknown) and got.reason == expected.reason
    else:
        assert got == expected


@pytest.mark.parametrize(
    "text",
    [
        "",
        "sha256:",
        "sha256:" + "a" * 63,
        "sha256:" + "a" * 65,
        "sha256:" + "A" * 64,
        "md5:" + "a" * 64,
    ],
)
def test_digest_rejects_malformed(text: str) -> None:
    assert not is_digest(text)
    with pytest.raises(ValueError, match="not a digest"):
        Digest(text)


def test_digest_short_and_order() -> None:
    low, high = Digest("sha256:" + "0" * 64), Digest("sha256:" + "f" * 64)
    assert low.short == "sha256:000000000000"
    assert sorted([high, low]) == [low, high]


def test_host_matches_ignores_case_but_not_port() -> None:
    assert host_matches("forgejo.example:3000", "Forgejo.Example:3000")
    assert not host_matches("forgejo.example", "forgejo.example:3000")


@pytest.mark.parametrize(
    ("image_id", "expected"),
    [
        (
            f"forgejo.example:3000/team/app@{D}",
            RunningImage(Digest(D), "forgejo.example:3000", "team/app"),
        ),
        (
            f"docker-pullable://Forgejo.Example/aaa/mirror@{D}",
            RunningImage(Digest(D), "forgejo.example", "aaa/mirror"),
        ),
        # containerd names images fully; a short name is read as the runtimes read it.
        (f"nginx@{D}", RunningImage(Digest(D), "docker.io", "library/nginx")),
        # The digest is known, the repository to ask is not.
        (f"forgejo.example/Team/App@{D}", RunningImage(Digest(D))),
        (f"forgejo.example/team/app:v1@{D}", RunningImage(Digest(D))),
        (D, RunningImage(Digest(D), is_config=True)),
        (f"docker://{D}", Unknown("image-config-id")),
        (f"docker-pullable://{D}", Unknown("image-config-id")),
        ("", Unknown("no-image-id")),
        ("forgejo.example/team/app@sha256:short", Unknown("malformed-image-id")),
    ],
)
def test_parse_running_image(image_id: str, expected: RunningImage | Unknown) -> None:
    got = parse_running_image(image_id)
    if isinstance(expected, Unknown):
        assert isinstance(got, Unknown) and got.reason == expected.reason
    else:
        assert got == expected


def test_running_image_reference_is_the_name_the_runtime_gave() -> None:
    named = RunningImage(Digest(D), "forgejo.example", "aaa/mirror")
    assert named.reference == f"forgejo.example/aaa/mirror@{D}"
    assert RunningImage(Digest(D), is_config=True).reference == D


@pytest.mark.parametrize(
    ("host", "expected"),
    [
        ("docker.io", "docker.io"),
        ("index.docker.io", "docker.io"),
        ("registry-1.docker.io", "docker.io"),
        ("Index.Docker.IO", "docker.io"),
        ("Forgejo.Example:3000", "forgejo.example:3000"),
        ("ghcr.io", "ghcr.io"),
        ("docker.io:443", "docker.io:443"),  # another port is another registry
    ],
)
def test_registry_host_names_one_registry_once(host: str, expected: str) -> None:
    assert registry_host(host) == expected


@pytest.mark.parametrize(
    "reference",
    [
        "nginx",
        "library/nginx",
        "docker.io/nginx",
        "index.docker.io/library/nginx",
        "registry-1.docker.io/nginx",
    ],
)
def test_every_spelling_of_an_official_image_is_one_ref(reference: str) -> None:
    assert parse_image(reference).tag_ref == TagRef("docker.io", "library/nginx", "latest")


def test_library_is_implied_on_docker_hub_only() -> None:
    assert canonical_repository("docker.io", "nginx") == "library/nginx"
    assert canonical_repository("ghcr.io", "nginx") == "nginx"
    assert canonical_repository("index.docker.io", "team/app") == "team/app"
