"""The controller image the suite built from the Dockerfile, signed as the release workflow
signs it and verified against the local ``docker-registry`` (ADR 021)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import require_tool
from tests.support.cosign import Cosign
from tests.support.image import ControllerImage, push_image
from tests.support.registry import RegistryServer

pytestmark = pytest.mark.integration  # a real registry; skipped without podman (image tier)


def test_the_built_controller_image_is_signed_and_verified_by_digest(
    controller_image: ControllerImage, registry: RegistryServer, tmp_path: Path
) -> None:
    cosign = Cosign(require_tool("cosign"), tmp_path / "cosign")
    cosign.login(registry.host, registry.user, registry.password)
    pushed = push_image(
        controller_image, registry.url, "ops/autoroll", "0.3.0",
        user=registry.user, password=registry.password,
    )  # fmt: skip
    reference = f"{registry.host}/ops/autoroll@{pushed.digest}"
    key, other = cosign.generate_key_pair("release"), cosign.generate_key_pair("other")

    signed = cosign.sign(reference, key)
    assert signed.returncode == 0, signed.stderr
    verified = cosign.verify(reference, key)
    assert verified.returncode == 0, verified.stderr
    assert pushed.digest in verified.stdout
    assert cosign.verify(reference, other).returncode != 0
