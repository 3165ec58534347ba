"""Pytest fixtures for a real Gitea; import them into a ``conftest.py``.

``gitea`` is one server for the whole session (a throw-away directory, removed after);
``owner`` is a public user of the test's own, with a token that may push; ``gitea_pusher``
pushes images to it with skopeo. ``tests/gitea`` uses them, and so can a suite that needs
Gitea next to a cluster (the end-to-end push → delivery → roll scenario)::

    from tests.support.gitea_fixtures import gitea, gitea_pusher, image, owner, skopeo
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import require_tool
from tests.support.gitea import Account, GiteaServer
from tests.support.gitea_images import Pusher
from tests.support.gitea_launch import running_gitea

__all__ = ["gitea", "gitea_pusher", "image", "owner", "skopeo"]


@pytest.fixture(scope="session")
def gitea() -> Iterator[GiteaServer]:
    binary = require_tool("gitea")
    require_tool("git")  # Gitea checks for it at start
    with running_gitea(binary) as server:
        yield server


@pytest.fixture(scope="session")
def skopeo() -> str:
    return require_tool("skopeo")


@pytest.fixture
def gitea_pusher(gitea: GiteaServer, skopeo: str, tmp_path: Path) -> Pusher:
    return Pusher(gitea, skopeo, tmp_path)


@pytest.fixture
def owner(gitea: GiteaServer) -> Account:
    """A public user of this test's own, with a token that may push (write:package).

    User and organisation hooks fire for every package of their owner, so a test that owns
    its owner sees only its own deliveries.
    """
    return gitea.create_user(f"u-{secrets.token_hex(4)}")


@pytest.fixture
def image() -> str:
    return f"app-{secrets.token_hex(3)}"
