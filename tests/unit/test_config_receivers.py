"""The receivers' settings: on exactly when a secret is set, from a file or the environment."""

from __future__ import annotations

import pytest

from autoroll.config import Config
from autoroll.core.receivers.sources import RECEIVERS, Source
from tests.support.config_env import BASE
from tests.support.mounted_secrets import mounted, reported

TOKEN = "0123456789abcdef0123456789abcdef"
FILES = {"/run/secrets/autoroll/harbor": TOKEN, "/run/secrets/autoroll/empty": ""}


def config(env: dict[str, str]) -> Config:
    return Config.from_env(BASE | env, read_file=mounted(FILES))


def problems(env: dict[str, str]) -> dict[str, str]:
    return reported(lambda: config(env), never_echoed=[TOKEN])


def test_every_receiver_is_off_by_default() -> None:
    assert config({}).receivers.on == ()


@pytest.mark.parametrize("source", list(RECEIVERS))
def test_a_receiver_is_on_when_its_secret_is_set(source: Source) -> None:
    receivers = config({RECEIVERS[source].variable: TOKEN}).receivers
    assert receivers.on == (source,)
    secret = receivers.secret(source)
    assert secret is not None and secret.reveal() == TOKEN


def test_a_receivers_secret_comes_from_its_file() -> None:
    receivers = config({"HARBOR_WEBHOOK_TOKEN_FILE": "/run/secrets/autoroll/harbor"}).receivers
    secret = receivers.secret(Source.HARBOR)
    assert receivers.on == (Source.HARBOR,) and secret is not None and secret.reveal() == TOKEN


def test_several_receivers_are_on_together() -> None:
    env = {"DISTRIBUTION_WEBHOOK_TOKEN": TOKEN, "GITHUB_WEBHOOK_SECRET": TOKEN + "x"}
    assert set(config(env).receivers.on) == {Source.DISTRIBUTION, Source.GITHUB}


@pytest.mark.parametrize(
    ("env", "variable", "says"),
    [
        ({"QUAY_WEBHOOK_TOKEN": ""}, "QUAY_WEBHOOK_TOKEN", "is set but empty"),
        ({"QUAY_WEBHOOK_TOKEN": "short"}, "QUAY_WEBHOOK_TOKEN", "expected at least 16"),
        (
            {"DOCKERHUB_WEBHOOK_TOKEN": "a/b?c=0123456789abcdef"},
            "DOCKERHUB_WEBHOOK_TOKEN",
            "a token in a URL path may hold only",
        ),
        (
            {"HARBOR_WEBHOOK_TOKEN": "two words 0123456789abcdef"},
            "HARBOR_WEBHOOK_TOKEN",
            "only visible ASCII",
        ),
        (
            {"GITLAB_WEBHOOK_TOKEN": TOKEN, "GITLAB_WEBHOOK_TOKEN_FILE": "/x"},
            "GITLAB_WEBHOOK_TOKEN",
            "set only one",
        ),
        (
            {"CLOUDEVENTS_WEBHOOK_TOKEN_FILE": "/run/secrets/autoroll/empty"},
            "CLOUDEVENTS_WEBHOOK_TOKEN_FILE",
            "is empty",
        ),
        (
            {"GENERIC_WEBHOOK_SECRET_FILE": "/run/secrets/autoroll/missing"},
            "GENERIC_WEBHOOK_SECRET_FILE",
            "No such file",
        ),
        ({"GITHUB_WEBHOOK_SECRET": TOKEN + "\n"}, "GITHUB_WEBHOOK_SECRET", "whitespace"),
    ],
)
def test_a_bad_receiver_secret_names_its_variable_and_never_its_value(
    env: dict[str, str], variable: str, says: str
) -> None:
    found = problems(env)
    assert says in found[variable], found


def test_an_hmac_secret_may_hold_any_visible_character() -> None:
    # Only tokens travel in a header or a path; an HMAC key never leaves the two ends.
    secret = "a key with spaces & symbols !"
    assert config({"GENERIC_WEBHOOK_SECRET": secret}).receivers.on == (Source.GENERIC,)


def test_the_startup_line_names_the_receivers_that_are_on_and_never_their_secrets() -> None:
    view = config({"DOCKERHUB_WEBHOOK_TOKEN": TOKEN}).redacted()
    assert view["DOCKERHUB_WEBHOOK_TOKEN"] == "<redacted>"
    assert "QUAY_WEBHOOK_TOKEN" not in view
    assert TOKEN not in str(view)
    assert TOKEN not in repr(config({"DOCKERHUB_WEBHOOK_TOKEN": TOKEN}))
