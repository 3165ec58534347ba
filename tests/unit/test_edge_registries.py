"""The configured registries wired to their clients, as ``serve`` and ``plan`` both build them."""

from __future__ import annotations

import json

from autoroll.config import Config
from autoroll.edge.registries import pull_credentials, registry_pool, registry_secrets

HOOK = "hook-secret-0123456789abcdef"


def config(**env: str) -> Config:
    return Config.from_env({"WEBHOOK_SECRET": HOOK, **env})


def test_each_registry_gets_a_client_and_only_the_forgejo_one_the_token() -> None:
    cfg = config(
        FORGEJO_HOST="git.example.org",
        FORGEJO_USER="robot",
        FORGEJO_TOKEN="tok-0123456789",
        REGISTRIES=json.dumps(
            [
                {"host": "index.docker.io", "concurrency": 2},
                {"host": "ghcr.io", "pullSecrets": True},
            ]
        ),
    )
    pool = registry_pool(cfg)
    assert pool.hosts == {"git.example.org", "docker.io", "ghcr.io"}
    hub = pool.client("docker.io")
    assert (
        hub is not None and repr(hub) == "RegistryClient(base_url='https://registry-1.docker.io')"
    )
    # The Forgejo token is the Forgejo registry's own credential, and no other's.
    forgejo, ghcr = pool.client("git.example.org"), pool.client("ghcr.io")
    assert forgejo is not None and ghcr is not None
    assert [c.source for c in forgejo._own("team/app")] == ["FORGEJO_TOKEN"]
    assert ghcr._own("team/app") == ()


def test_pull_credentials_only_when_a_registry_reads_them() -> None:
    assert pull_credentials(config(REGISTRIES='[{"host": "ghcr.io"}]')) is None
    found = pull_credentials(config(REGISTRIES='[{"host": "ghcr.io", "pullSecrets": true}]'))
    assert found is not None and found.hosts == {"ghcr.io"}


def test_a_registry_secrets_passwords_are_given_to_the_redactor() -> None:
    cfg = config(REGISTRIES='[{"host": "ghcr.io"}]')
    assert registry_secrets(cfg) == []
