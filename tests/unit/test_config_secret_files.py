"""Secrets from mounted files: ``<NAME>_FILE`` first, ``<NAME>`` as the fallback, never both."""

from __future__ import annotations

from pathlib import Path

import pytest

from autoroll.config import Config
from autoroll.config.reader import MAX_SECRET_FILE_BYTES, SecretFileError, read_secret_file
from tests.support.config_env import HOOK, TOKEN
from tests.support.mounted_secrets import mounted, reported

HOST_AND_USER = {"FORGEJO_HOST": "forgejo.example:3000", "FORGEJO_USER": "robot"}
FILES = {
    "/run/secrets/token": TOKEN,
    "/run/secrets/hook": HOOK,
    "/run/secrets/empty": "",
    "/run/secrets/short": "short",
}


def config(env: dict[str, str]) -> Config:
    return Config.from_env(HOST_AND_USER | env, read_file=mounted(FILES))


def problems(env: dict[str, str]) -> dict[str, str]:
    # A secret is never echoed, not even a bad one.
    return reported(lambda: config(env), never_echoed=(TOKEN, HOOK, "short"))


@pytest.mark.parametrize(
    "env",
    [
        {"FORGEJO_TOKEN_FILE": "/run/secrets/token", "WEBHOOK_SECRET_FILE": "/run/secrets/hook"},
        {"FORGEJO_TOKEN_FILE": "/run/secrets/token", "WEBHOOK_SECRET": HOOK},  # mixed
        {"FORGEJO_TOKEN": TOKEN, "WEBHOOK_SECRET_FILE": "/run/secrets/hook"},
        {"FORGEJO_TOKEN": TOKEN, "WEBHOOK_SECRET": HOOK},  # the env vars: the fallback
    ],
)
def test_each_secret_comes_from_its_file_or_else_its_variable(env: dict[str, str]) -> None:
    cfg = config(env)
    assert (cfg.forgejo_token.reveal(), cfg.webhook_secret.reveal()) == (TOKEN, HOOK)
    assert TOKEN not in str(cfg.redacted()) and HOOK not in str(cfg.redacted())


@pytest.mark.parametrize(
    ("env", "variable", "fragment"),
    [
        (
            {"FORGEJO_TOKEN": TOKEN, "FORGEJO_TOKEN_FILE": "/run/secrets/token"},
            "FORGEJO_TOKEN",
            "so is FORGEJO_TOKEN_FILE; set only one",
        ),
        (
            {"FORGEJO_TOKEN_FILE": "/run/secrets/missing"},
            "FORGEJO_TOKEN_FILE",
            "cannot read '/run/secrets/missing'",
        ),
        ({"FORGEJO_TOKEN_FILE": "/run/secrets/empty"}, "FORGEJO_TOKEN_FILE", "is empty"),
        ({"FORGEJO_TOKEN_FILE": ""}, "FORGEJO_TOKEN_FILE", "set but empty"),
        ({"FORGEJO_TOKEN": ""}, "FORGEJO_TOKEN", "required but not set (nor FORGEJO_TOKEN_FILE"),
        # The file's content is checked as the variable's would be, under the file's name.
        ({"WEBHOOK_SECRET_FILE": "/run/secrets/short"}, "WEBHOOK_SECRET_FILE", "at least 16"),
    ],
)
def test_a_bad_secret_source_names_the_variable_and_the_fix(
    env: dict[str, str], variable: str, fragment: str
) -> None:
    defaults = {"FORGEJO_TOKEN": TOKEN, "WEBHOOK_SECRET": HOOK}
    # Every secret not under test comes from its variable.
    base = {k: v for k, v in defaults.items() if not any(e.startswith(k) for e in env)}
    found = problems(base | env)
    assert fragment in found[variable], found


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (b"secret\n", "secret"),  # echo adds a newline; no token ends in one
        (b"secret\r\n\n", "secret"),
        (b"  spaced secret", "  spaced secret"),  # anything else is kept exactly
        (b"", ""),
    ],
)
def test_read_secret_file_drops_trailing_newlines_only(
    tmp_path: Path, content: bytes, expected: str
) -> None:
    path = tmp_path / "secret"
    path.write_bytes(content)
    assert read_secret_file(str(path)) == expected


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        (None, "cannot read"),
        (b"x" * (MAX_SECRET_FILE_BYTES + 1), f"over {MAX_SECRET_FILE_BYTES} bytes"),
        (b"\xff\xfe", "not UTF-8"),
    ],
)
def test_read_secret_file_refuses_what_cannot_be_a_secret(
    tmp_path: Path, content: bytes | None, fragment: str
) -> None:
    path = tmp_path / "secret"
    if content is not None:
        path.write_bytes(content)
    with pytest.raises(SecretFileError, match=fragment):
        read_secret_file(str(path))


def test_a_real_mounted_file_is_read_by_default(tmp_path: Path) -> None:
    (tmp_path / "token").write_text(TOKEN + "\n")
    cfg = Config.from_env(
        HOST_AND_USER | {"FORGEJO_TOKEN_FILE": str(tmp_path / "token"), "WEBHOOK_SECRET": HOOK}
    )
    assert cfg.forgejo_token.reveal() == TOKEN
