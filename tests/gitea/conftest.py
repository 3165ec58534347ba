"""The live Forgejo-family server tier: one real Gitea for the whole session, torn down after.

Owners are made per test (``owner``), so user- and organisation-level hooks of one test
never see another test's pushes. Image names are unique per test too.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import require_tool
from tests.support.gitea import Account, GiteaServer, Pusher, running_gitea


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
def pusher(gitea: GiteaServer, skopeo: str, tmp_path: Path) -> Pusher:
    return Pusher(gitea, skopeo, tmp_path)


@pytest.fixture
def owner(gitea: GiteaServer) -> Account:
    """A public user of its own, with a token that may push (write:package)."""
    return gitea.create_user(f"u-{secrets.token_hex(4)}")


@pytest.fixture
def image() -> str:
    return f"app-{secrets.token_hex(3)}"
