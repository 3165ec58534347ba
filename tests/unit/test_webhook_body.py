"""What a signed webhook body names: real Gitea 1.27 deliveries and one row per clause."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from autoroll.core.pushed import Pushed
from autoroll.core.webhook_body import BodyKind, BodyReading, read_body

DATA = Path(__file__).parent / "data"
DIGEST = "sha256:" + "ab" * 32


def real(name: str) -> bytes:
    """A body as Gitea 1.27.3 delivered it to a hook (captured from tests/gitea's server)."""
    return (DATA / f"gitea-1.27-package-{name}.json").read_bytes()


def test_a_real_user_hook_delivery_of_a_tag_names_the_owners_repository_and_the_tag() -> None:
    assert read_body(real("tag-user")) == BodyReading(
        BodyKind.TAG, Pushed(None, "team-owner/my-app", "latest")
    )


def test_a_real_org_hook_delivery_of_a_tag_names_the_orgs_repository() -> None:
    assert read_body(real("tag-org")) == BodyReading(
        BodyKind.TAG, Pushed(None, "my-org/svc", "v1.2")
    )


def test_a_real_delivery_of_a_platform_manifest_is_a_digest_version() -> None:
    assert read_body(real("digest-org")).kind is BodyKind.DIGEST_VERSION


def package(**fields: object) -> bytes:
    base: dict[str, object] = {
        "type": "container",
        "name": "app",
        "version": "latest",
        "owner": {"login": "team", "username": "team"},
    }
    base.update(fields)
    return json.dumps({"action": "created", "package": base}).encode()


def without(field: str) -> bytes:
    document = json.loads(package())
    del document["package"][field]
    return json.dumps(document).encode()


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (package(), Pushed(None, "team/app", "latest")),
        # Owners may be spelled with capitals in Forgejo; registry paths are lowercase.
        (package(owner={"login": "Team"}, name="App"), Pushed(None, "team/app", "latest")),
        # An owner without "login" (an older payload) is read from "username".
        (package(owner={"username": "team"}), Pushed(None, "team/app", "latest")),
        # A nested image name is part of the repository path.
        (package(name="tools/app"), Pushed(None, "team/tools/app", "latest")),
        # Tags are case-sensitive.
        (package(version="V1.2_rc-3"), Pushed(None, "team/app", "V1.2_rc-3")),
    ],
)
def test_a_container_tag_event_names_its_repository_and_tag(body: bytes, expected: Pushed) -> None:
    assert read_body(body) == BodyReading(BodyKind.TAG, expected)


@pytest.mark.parametrize(
    "body",
    [
        package(version=DIGEST),
        # Digest versions are recognised before owner and name are read.
        package(version=DIGEST, owner=None, name=None),
    ],
)
def test_a_digest_version_moves_no_tag(body: bytes) -> None:
    assert read_body(body).kind is BodyKind.DIGEST_VERSION


@pytest.mark.parametrize(
    ("body", "why"),
    [
        (b"not json", "not JSON"),
        (b"[1, 2]", "not a package event"),
        (b'{"ref": "refs/heads/main"}', "not a package event"),  # a push event
        (b'{"package": "app"}', "not a package event"),
        (package(type="npm"), "not container"),
        (without("type"), "not container"),
        (without("version"), "no version"),
        (package(version=7), "no version"),
        (package(version=DIGEST.upper()), "not an image reference"),  # no digest, no tag
        (package(version="sha256:short"), "not an image reference"),
        (package(version="-leading-dash"), "not an image reference"),
        (package(version="x" * 129), "not an image reference"),
        (without("owner"), "no owner or name"),
        (package(owner={"login": ""}), "no owner or name"),
        (package(owner="team"), "no owner or name"),
        (without("name"), "no owner or name"),
        (package(name=""), "no owner or name"),
        (package(name="my app"), "not an image reference"),
        (package(owner={"login": "te__--am"}), "not an image reference"),
    ],
)
def test_anything_else_names_nothing_and_says_why(body: bytes, why: str) -> None:
    reading = read_body(body)
    assert (reading.kind, reading.tag) == (BodyKind.NOTHING, None)
    assert why in reading.detail


@pytest.mark.parametrize(
    ("body", "detail"),
    [
        # json.loads would raise RecursionError: a body past the cap names nothing instead.
        (b'{"package": ' + b"[" * 5000 + b"]" * 5000 + b"}", "nested more than 64"),
        (b'{"x": "' + b"a" * (1024 * 1024) + b'"}', "over the cap"),
    ],
)
def test_a_body_past_the_caps_names_nothing_and_says_why(body: bytes, detail: str) -> None:
    reading = read_body(body)
    assert reading.kind is BodyKind.NOTHING
    assert detail in reading.detail
