"""Fixtures for the integration suite: real services on 127.0.0.1, always torn down."""

from __future__ import annotations

from tests.support.registry_fixtures import (
    fresh_registry,
    pki,
    pusher,
    registry,
    repository,
    tls_registry,
)
from tests.support.registry_recorder import session

__all__ = ["fresh_registry", "pki", "pusher", "registry", "repository", "session", "tls_registry"]
