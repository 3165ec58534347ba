"""The registries block: REGISTRIES beside the FORGEJO_* shorthand, every mistake named."""

from __future__ import annotations

import base64
import json

import pytest

from autoroll.config import Config
from autoroll.config.choices import RegistryScheme
from autoroll.config.registries import RegistrySettings
from tests.support.mounted_secrets import reported

HOOK = "hook-secret-0123456789abcdef"
FORGEJO = {
    "FORGEJO_HOST": "Forgejo.Example:3000",
    "FORGEJO_USER": "robot",
    "FORGEJO_TOKEN": "tok-0123456789",
    "WEBHOOK_SECRET": HOOK,
}
SECRET_FILE = "/var/run/secrets/autoroll/registries/0/.dockerconfigjson"
PASSWORD = "hub-password-never-shown"


def registries(*entries: object) -> dict[str, str]:
    return {"WEBHOOK_SECRET": HOOK, "REGISTRIES": json.dumps(list(entries))}


def files(path: str) -> str:
    pair = base64.b64encode(f"hubuser:{PASSWORD}".encode()).decode()
    if path == SECRET_FILE:
        return json.dumps({"auths": {"https://index.docker.io/v1/": {"auth": pair}}})
    if path == "/bad":
        return "{not json"
    raise ValueError(f"cannot read {path!r}: No such file or directory")


def problems(env: dict[str, str]) -> dict[str, str]:
    return reported(lambda: Config.from_env(env, read_file=files))


def test_the_forgejo_shorthand_is_one_registry_with_its_token() -> None:
    config = Config.from_env(FORGEJO)
    assert config.registries == (
        RegistrySettings("forgejo.example:3000", RegistryScheme.HTTPS, forgejo=True),
    )
    assert config.registry_hosts == {"forgejo.example:3000"}
    assert config.pull_secret_hosts == frozenset()
    assert config.registries[0].credential_sources() == "FORGEJO_TOKEN"


def test_forgejo_pull_secrets_come_before_its_token() -> None:
    config = Config.from_env(FORGEJO | {"FORGEJO_PULL_SECRETS": "true"})
    assert config.pull_secret_hosts == {"forgejo.example:3000"}
    assert config.registries[0].credential_sources() == "pod imagePullSecrets, then FORGEJO_TOKEN"


def test_registries_alone_need_no_forgejo_values() -> None:
    config = Config.from_env(
        registries(
            {"host": "127.0.0.1:3000", "scheme": "http", "pullSecrets": True},
            {"host": "index.docker.io", "secretFile": SECRET_FILE, "requestsPerPass": 50},
        ),
        read_file=files,
    )
    assert config.forgejo_host is None and config.forgejo_token.reveal() == ""
    gitea, hub = config.registries
    assert (gitea.host, gitea.scheme, gitea.pull_secrets) == ("127.0.0.1:3000", "http", True)
    assert gitea.base_url == "http://127.0.0.1:3000"
    assert (hub.host, hub.base_url) == ("docker.io", "https://registry-1.docker.io")
    assert hub.realm_hosts == {"auth.docker.io"}
    assert hub.requests_per_pass == 50 and hub.concurrency == 4
    [entry] = hub.keyring.entries
    assert (entry.key, entry.credential.username) == ("index.docker.io", "hubuser")
    assert PASSWORD not in repr(config) and PASSWORD not in str(config.redacted())
    assert config.registry_hosts == {"127.0.0.1:3000", "docker.io"}


def test_the_startup_line_lists_each_registry_and_its_sources() -> None:
    config = Config.from_env(FORGEJO | {"REGISTRIES": json.dumps([{"host": "ghcr.io"}])})
    listed = json.loads(config.redacted()["REGISTRIES"])
    assert [(r["host"], r["credentials"]) for r in listed] == [
        ("forgejo.example:3000", "FORGEJO_TOKEN"),
        ("ghcr.io", "anonymous"),
    ]


@pytest.mark.parametrize(
    ("registries_value", "variable", "fragment"),
    [
        ("not json", "REGISTRIES", "is not JSON"),
        ('{"host": "a"}', "REGISTRIES", "JSON list"),
        ("[]", "REGISTRIES", "JSON list"),
        ('["ghcr.io"]', "REGISTRIES[0]", "expected an object"),
        ('[{"scheme": "https"}]', "REGISTRIES[0].host", "is required"),
        ('[{"host": "https://ghcr.io"}]', "REGISTRIES[0].host", "bare host[:port]"),
        ('[{"host": "ghcr.io", "scheme": "ftp"}]', "REGISTRIES[0].scheme", "https or http"),
        ('[{"host": "ghcr.io", "pullSecret": true}]', "REGISTRIES[0]", "unknown key(s) pullSecret"),
        (
            '[{"host": "ghcr.io", "pullSecrets": "maybe"}]',
            "REGISTRIES[0].pullSecrets",
            "true or false",
        ),
        ('[{"host": "ghcr.io", "concurrency": 0}]', "REGISTRIES[0].concurrency", "1 to 32"),
        ('[{"host": "ghcr.io", "requestsPerPass": -1}]', "REGISTRIES[0].requestsPerPass", "0 to"),
        ('[{"host": "ghcr.io", "secretFile": "relative"}]', "REGISTRIES[0].secretFile", "absolute"),
        (
            '[{"host": "ghcr.io", "secretFile": "/missing"}]',
            "REGISTRIES[0].secretFile",
            "No such file",
        ),
        ('[{"host": "ghcr.io", "secretFile": "/bad"}]', "REGISTRIES[0].secretFile", "not JSON"),
        ('[{"host": "a.io"}, {"host": "A.io"}]', "REGISTRIES", "a.io is listed twice"),
    ],
)
def test_a_mistake_in_registries_names_the_entry_and_the_key(
    registries_value: str, variable: str, fragment: str
) -> None:
    found = problems({"WEBHOOK_SECRET": HOOK, "REGISTRIES": registries_value})
    assert variable in found, found
    assert fragment in found[variable]


def test_a_registry_listed_as_forgejo_host_too_is_refused() -> None:
    found = problems(FORGEJO | {"REGISTRIES": json.dumps([{"host": "forgejo.example:3000"}])})
    assert "listed twice" in found["REGISTRIES"]


def test_without_registries_the_forgejo_values_are_required_as_before() -> None:
    found = problems({"WEBHOOK_SECRET": HOOK})
    assert set(found) == {"FORGEJO_HOST", "FORGEJO_USER", "FORGEJO_TOKEN"}
