"""A signature made as the release workflow makes it verifies, and only for what was signed.

An image the suite builds (``ImagePusher``: its config and layer, pushed to the real
``docker-registry``) is signed by digest with a key pair made here, then verified against the
registry: by digest and by its tag, with the right key only. A tag moved to other content
afterwards, and an image nobody signed, fail verification. The image tier does the same with
the controller image built from the Dockerfile (tests/image/test_signature.py).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import require_tool
from tests.support.cosign import Cosign
from tests.support.registry import ImagePusher, RegistryServer

pytestmark = pytest.mark.integration


@pytest.fixture
def cosign(registry: RegistryServer, tmp_path: Path) -> Cosign:
    tool = Cosign(require_tool("cosign"), tmp_path / "cosign")
    tool.login(registry.host, registry.user, registry.password)
    return tool


def test_a_signed_image_verifies_by_digest_and_tag_with_its_key_only(
    cosign: Cosign, registry: RegistryServer, pusher: ImagePusher, repository: str
) -> None:
    pushed = pusher.push_image(repository, "1.0.0")
    by_digest = f"{registry.host}/{repository}@{pushed.digest}"
    key, other = cosign.generate_key_pair("release"), cosign.generate_key_pair("other")

    signed = cosign.sign(by_digest, key)
    assert signed.returncode == 0, signed.stderr

    verified = cosign.verify(by_digest, key)
    assert verified.returncode == 0, verified.stderr
    assert pushed.digest in verified.stdout  # the payload names the signed digest
    by_tag = cosign.verify(f"{registry.host}/{repository}:1.0.0", key)
    assert by_tag.returncode == 0, by_tag.stderr
    assert cosign.verify(by_digest, other).returncode != 0


def test_a_tag_moved_to_other_content_or_an_unsigned_image_fails_verification(
    cosign: Cosign, registry: RegistryServer, pusher: ImagePusher, repository: str
) -> None:
    key = cosign.generate_key_pair("release")
    first = pusher.push_image(repository, "latest")
    assert cosign.sign(f"{registry.host}/{repository}@{first.digest}", key).returncode == 0
    moved = pusher.push_image(repository, "latest")  # retagged by someone without the key
    assert moved.digest != first.digest
    refused = cosign.verify(f"{registry.host}/{repository}:latest", key)
    assert refused.returncode != 0
    assert "no signatures found" in refused.stderr.lower() or "no matching" in refused.stderr
