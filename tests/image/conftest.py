"""Fixtures for the image tier: one private podman store and one image per session.

The image is built from the committed Dockerfile (or loaded from the archive cached by its
build context; see tests/support/image.py). Locally a missing podman or base image skips
the tier; with CI=true it fails.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import IN_CI, require_tool
from tests.support.image import ControllerImage, Podman, build_controller_image
from tests.support.registry_fixtures import registry

__all__ = ["controller_image", "podman", "registry"]

_timings: dict[str, str] = {}


def _require_base_image() -> None:
    rootfs = os.environ.get("AUTOROLL_BASE_ROOTFS", "")
    if rootfs and Path(rootfs).is_file() and os.environ.get("AUTOROLL_BASE_IMAGE"):
        return
    message = (
        "the Debian base image is missing (AUTOROLL_BASE_ROOTFS); run `scripts/tools.sh image`"
        " and `source .tools/env`"
    )
    if IN_CI:
        pytest.fail(message)
    pytest.skip(message)


@pytest.fixture(scope="session")
def podman() -> Iterator[Podman]:
    for tool in ("podman", "runc", "skopeo"):
        require_tool(tool)
    _require_base_image()
    with Podman.private() as store:
        yield store


@pytest.fixture(scope="session")
def controller_image(podman: Podman) -> ControllerImage:
    started = time.monotonic()
    image = build_controller_image(podman)
    size = int(podman.run("image", "inspect", "--format", "{{.Size}}", image.reference).stdout)
    how = (
        f"loaded from the cache in {time.monotonic() - started:.0f} s"
        if image.build_seconds is None
        else f"built in {image.build_seconds:.0f} s"
    )
    _timings["image"] = f"{image.reference}: {how}, {size / 1e6:.0f} MB"
    return image


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if "image" in _timings:
        terminalreporter.write_line(f"controller image {_timings['image']}")
