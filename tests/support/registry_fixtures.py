"""Pytest fixtures for a real ``docker-registry``; import them into a ``conftest.py``.

``registry`` is one registry (htpasswd auth) shared by a whole test module; tests push to
their own repository names (``repository``), so they do not see each other's tags.
``fresh_registry`` is a private one for tests that stop it. ``pusher`` pushes images
through the registry's HTTP API. ``tls_registry`` is one served over HTTPS by ``pki``, a
private CA made for the module (a self-hosted Forgejo behind a company CA). Both integration
and end-to-end suites use them::

    from tests.support.registry_fixtures import fresh_registry, pusher, registry, repository
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.conftest import require_tool
from tests.support.pki import PrivateCA, make_private_ca
from tests.support.registry import ImagePusher, RegistryServer, running_registry

__all__ = [
    "fresh_registry",
    "pki",
    "pusher",
    "registry",
    "registry_for_tests",
    "repository",
    "tls_registry",
]


@contextmanager
def registry_for_tests(root: Path, *, tls: PrivateCA | None = None) -> Iterator[RegistryServer]:
    """A registry in ``root`` for a fixture (HTTPS with ``tls``'s certificate when given):
    skips locally (fails in CI) without the tools."""
    require_tool("htpasswd")
    binary = require_tool("docker-registry")
    with running_registry(binary, root, tls=tls) as server:
        yield server


@pytest.fixture(scope="module")
def registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RegistryServer]:
    with registry_for_tests(tmp_path_factory.mktemp("registry")) as server:
        yield server


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> PrivateCA:
    return make_private_ca(tmp_path_factory.mktemp("pki"))


@pytest.fixture(scope="module")
def tls_registry(
    pki: PrivateCA, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RegistryServer]:
    with registry_for_tests(tmp_path_factory.mktemp("tls-registry"), tls=pki) as server:
        yield server


@pytest.fixture
def fresh_registry(tmp_path: Path) -> Iterator[RegistryServer]:
    with registry_for_tests(tmp_path / "registry") as server:
        yield server


@pytest.fixture
def pusher(registry: RegistryServer) -> ImagePusher:
    return ImagePusher(registry)


@pytest.fixture
def repository() -> str:
    """A repository name no other test uses."""
    return f"team/app-{secrets.token_hex(4)}"
