"""Configuration from the environment: defaults, every problem at once, no secret echoed.

The guardrails' variables are in ``test_config_guardrails.py``, the notifications' in
``test_config_notifications.py``; the base environment in ``tests.support.config_env``.
"""

from __future__ import annotations

import dataclasses

import pytest

from autoroll.config import Config
from autoroll.config.choices import LogFormat, LogLevel, RegistryScheme, RolloutMethod
from autoroll.config.errors import ConfigError, Secret
from autoroll.core.model import WorkloadKind
from tests.support.config_env import BASE, HOOK, TOKEN, problems


def test_defaults() -> None:
    cfg = Config.from_env(BASE)
    assert cfg.forgejo_host == "forgejo.example:3000"
    assert cfg.forgejo_user == "robot"
    assert cfg.forgejo_token.reveal() == TOKEN
    assert cfg.webhook_secret.reveal_bytes() == HOOK.encode()
    assert cfg.poll_interval_seconds == 120
    assert cfg.label_selector == "aethnet.se/autoroll=true"
    assert (cfg.listen_host, cfg.listen_port, cfg.listen_addr) == ("0.0.0.0", 8080, "0.0.0.0:8080")
    assert cfg.dry_run is False
    assert cfg.log_level is LogLevel.INFO
    assert cfg.log_format is LogFormat.TEXT
    assert cfg.rollout_method is RolloutMethod.DELETE
    assert cfg.emit_events is True  # once per roll, never per pass (issue 26)
    assert cfg.registry_url == "https://forgejo.example:3000"
    assert (cfg.watch_cache, cfg.cache_resync_seconds) == (True, 1800)
    assert cfg.workload_kinds == tuple(WorkloadKind)  # all three


def test_every_variable_parsed() -> None:
    cfg = Config.from_env(
        BASE
        | {
            "POLL_INTERVAL_SECONDS": "30",
            "LABEL_SELECTOR": "team=a,autoroll in (yes)",
            "LISTEN_ADDR": "[::]:9090",
            "DRY_RUN": "TRUE",
            "LOG_LEVEL": "DEBUG",
            "LOG_FORMAT": "json",
            "ROLLOUT_METHOD": "evict",
            "EMIT_EVENTS": "yes",
            "REGISTRY_SCHEME": "http",
            "WATCH_CACHE": "false",
            "CACHE_RESYNC_SECONDS": "600",
            "WORKLOAD_KINDS": "DaemonSet, deployment",
            "TAG_PASS_INTERVAL_SECONDS": "0",
        }
    )
    assert (cfg.watch_cache, cfg.cache_resync_seconds) == (False, 600)
    assert cfg.tag_pass_interval_seconds == 0
    assert cfg.poll_interval_seconds == 30
    # Any case and spacing; one order (the kinds' own) whatever the order given.
    assert cfg.workload_kinds == (WorkloadKind.DEPLOYMENT, WorkloadKind.DAEMONSET)
    assert cfg.label_selector == "team=a,autoroll in (yes)"
    assert (cfg.listen_host, cfg.listen_port) == ("[::]", 9090)
    assert cfg.dry_run is True
    assert cfg.log_level is LogLevel.DEBUG
    assert cfg.log_format is LogFormat.JSON
    assert cfg.rollout_method is RolloutMethod.EVICT
    assert cfg.emit_events is True
    assert cfg.registry_scheme is RegistryScheme.HTTP
    assert cfg.registry_url == "http://forgejo.example:3000"


def test_all_missing_required_reported_at_once() -> None:
    found = problems({})
    assert set(found) == {"FORGEJO_HOST", "FORGEJO_USER", "FORGEJO_TOKEN", "WEBHOOK_SECRET"}
    assert all("required" in m for m in found.values())


def test_empty_required_is_missing() -> None:
    assert "required" in problems(BASE | {"FORGEJO_TOKEN": ""})["FORGEJO_TOKEN"]


def test_all_bad_values_reported_at_once_with_value_and_expected_form() -> None:
    found = problems(
        BASE
        | {
            "FORGEJO_HOST": "https://forgejo.example",
            "POLL_INTERVAL_SECONDS": "2m",
            "LISTEN_ADDR": "8080",
            "DRY_RUN": "maybe",
            "LOG_LEVEL": "loud",
            "LOG_FORMAT": "xml",
            "ROLLOUT_METHOD": "patch",
            "EMIT_EVENTS": "2",
            "LABEL_SELECTOR": "a=b,,c=d",
            "REGISTRY_SCHEME": "ftp",
            "WATCH_CACHE": "sometimes",
            "CACHE_RESYNC_SECONDS": "59",
            "WORKLOAD_KINDS": "deployment,replicaset",
            "TAG_PASS_INTERVAL_SECONDS": "301",
        }
    )
    assert "0 (off) to 300" in found["TAG_PASS_INTERVAL_SECONDS"]
    assert (
        "'59'" in found["CACHE_RESYNC_SECONDS"] and "60 to 86400" in found["CACHE_RESYNC_SECONDS"]
    )
    assert "true or false" in found["WATCH_CACHE"]
    assert set(found) == {
        "TAG_PASS_INTERVAL_SECONDS",
        "WATCH_CACHE",
        "CACHE_RESYNC_SECONDS",
        "FORGEJO_HOST",
        "POLL_INTERVAL_SECONDS",
        "LISTEN_ADDR",
        "DRY_RUN",
        "LOG_LEVEL",
        "LOG_FORMAT",
        "ROLLOUT_METHOD",
        "EMIT_EVENTS",
        "LABEL_SELECTOR",
        "REGISTRY_SCHEME",
        "WORKLOAD_KINDS",
    }
    assert "'https://forgejo.example'" in found["FORGEJO_HOST"]
    assert "bare host[:port]" in found["FORGEJO_HOST"]
    assert "'2m'" in found["POLL_INTERVAL_SECONDS"] and "seconds" in found["POLL_INTERVAL_SECONDS"]
    assert "host:port" in found["LISTEN_ADDR"]
    assert "true or false" in found["DRY_RUN"]
    assert "debug|info|warning|error" in found["LOG_LEVEL"]
    assert "text|json" in found["LOG_FORMAT"]
    assert "delete|evict" in found["ROLLOUT_METHOD"]
    assert "'replicaset' is not a workload kind" in found["WORKLOAD_KINDS"]
    assert "deployment,statefulset,daemonset" in found["WORKLOAD_KINDS"]


@pytest.mark.parametrize(
    ("raw", "fragment"),
    [
        ("deployment,Deployment", "deployment is listed twice"),
        ("statefulset,", "'' is not a workload kind"),
        ("", "set but empty; unset it for the default deployment,statefulset,daemonset"),
        ("deployments", "'deployments' is not a workload kind"),
    ],
)
def test_workload_kinds_errors_name_the_fix(raw: str, fragment: str) -> None:
    assert fragment in problems(BASE | {"WORKLOAD_KINDS": raw})["WORKLOAD_KINDS"]


def test_workload_kinds_are_logged_in_the_effective_config() -> None:
    view = Config.from_env(BASE | {"WORKLOAD_KINDS": "statefulset"}).redacted()
    assert view["WORKLOAD_KINDS"] == "statefulset"


@pytest.mark.parametrize(
    "host",
    ["forgejo.example/path", "forgejo.example:99999", "forge jo", "-bad.example", "a:b:c"],
)
def test_forgejo_host_must_be_bare(host: str) -> None:
    assert "FORGEJO_HOST" in problems(BASE | {"FORGEJO_HOST": host})


@pytest.mark.parametrize(
    "host", ["forgejo.example", "localhost:3000", "127.0.0.1:5000", "Git.Example"]
)
def test_forgejo_host_accepted(host: str) -> None:
    assert Config.from_env(BASE | {"FORGEJO_HOST": host}).forgejo_host == host.lower()


@pytest.mark.parametrize("value", ["0", "4", "86401", "-1", "1.5"])
def test_poll_interval_bounds(value: str) -> None:
    assert "POLL_INTERVAL_SECONDS" in problems(BASE | {"POLL_INTERVAL_SECONDS": value})


def test_rollout_halted_after_defaults_to_ten_minutes_and_is_bounded() -> None:
    assert Config.from_env(BASE).rollout_halted_after_seconds == 600
    assert (
        Config.from_env(BASE | {"ROLLOUT_HALTED_AFTER_SECONDS": "30"}).rollout_halted_after_seconds
        == 30
    )
    message = problems(BASE | {"ROLLOUT_HALTED_AFTER_SECONDS": "2m"})[
        "ROLLOUT_HALTED_AFTER_SECONDS"
    ]
    assert "'2m'" in message and "5 to 86400" in message


@pytest.mark.parametrize("value", ["0", "4", "3601", "-1", "1.5", "5m"])
def test_pass_timeout_bounds(value: str) -> None:
    message = problems(BASE | {"PASS_TIMEOUT_SECONDS": value})["PASS_TIMEOUT_SECONDS"]
    assert "5 to 3600" in message


def test_pass_timeout_defaults_to_five_minutes() -> None:
    assert Config.from_env(BASE).pass_timeout_seconds == 300
    assert Config.from_env(BASE | {"PASS_TIMEOUT_SECONDS": "60"}).pass_timeout_seconds == 60


def test_set_but_empty_optional_is_an_error_not_a_default() -> None:
    message = problems(BASE | {"DRY_RUN": ""})["DRY_RUN"]
    assert "empty" in message


def test_short_webhook_secret_rejected_without_echo() -> None:
    short = "fifteen-bytes!!"
    assert len(short) == 15
    with pytest.raises(ConfigError) as info:
        Config.from_env(BASE | {"WEBHOOK_SECRET": short})
    text = str(info.value)
    assert "WEBHOOK_SECRET" in text and "15 bytes" in text and "at least 16" in text
    assert short not in text


def test_webhook_secret_length_counts_bytes() -> None:
    # Eight two-byte characters are 16 bytes.
    assert Config.from_env(BASE | {"WEBHOOK_SECRET": "é" * 8}).webhook_secret.reveal() == "é" * 8


def test_secret_with_trailing_newline_rejected_without_echo() -> None:
    with pytest.raises(ConfigError) as info:
        Config.from_env(BASE | {"FORGEJO_TOKEN": TOKEN + "\n"})
    assert "FORGEJO_TOKEN" in str(info.value)
    assert TOKEN not in str(info.value)


def test_secrets_never_in_repr_str_or_redacted_view() -> None:
    cfg = Config.from_env(BASE)
    for text in (repr(cfg), str(cfg), str(cfg.redacted()), repr(dataclasses.astuple(cfg))):
        assert TOKEN not in text
        assert HOOK not in text
    assert cfg.redacted()["FORGEJO_TOKEN"] == "<redacted>"
    assert cfg.redacted()["WEBHOOK_SECRET"] == "<redacted>"
    assert str(Secret("x")) == "<redacted>"


def test_redacted_names_every_variable() -> None:
    view = Config.from_env(BASE).redacted()
    assert view["FORGEJO_HOST"] == "forgejo.example:3000"
    assert view["LISTEN_ADDR"] == "0.0.0.0:8080"
    assert view["DRY_RUN"] == "false"
    # LEADER_ELECTION=false (its details only when on), 9 ROLL_*, PLATFORM_AWARE, WATCH_CACHE,
    # CACHE_RESYNC_SECONDS, REGISTRY_CA_FILE, the namespaces rolled and their share of
    # registry lookups, PROBE_ADDR, TAG_PASS_INTERVAL_SECONDS, REGISTRIES, NOTIFY_URLS,
    # NOTIFY_EVENTS, NOTIFY_THROTTLE_SECONDS, QUARANTINE_CONFIGMAP, QUARANTINE_NAMESPACE,
    # PINNING=false (its details only when on)
    assert len(view) == 41
    assert view["PINNING"] == "false"
    assert view["PROBE_ADDR"] == "0.0.0.0:8081"
    assert (view["WATCH_CACHE"], view["CACHE_RESYNC_SECONDS"]) == ("true", "1800")
    assert view["PASS_TIMEOUT_SECONDS"] == "300"
    assert view["ROLLOUT_HALTED_AFTER_SECONDS"] == "600"
    assert view["WORKLOAD_KINDS"] == "deployment,statefulset,daemonset"


def test_config_is_frozen() -> None:
    cfg = Config.from_env(BASE)
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.dry_run = True  # type: ignore[misc]


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({}, ("0.0.0.0", 8081)),
        ({"PROBE_ADDR": "127.0.0.1:9000"}, ("127.0.0.1", 9000)),
        ({"PROBE_ADDR": "[::]:9000"}, ("[::]", 9000)),
    ],
)
def test_probe_addr(env: dict[str, str], expected: tuple[str, int]) -> None:
    cfg = Config.from_env(BASE | env)
    assert (cfg.probe_host, cfg.probe_port) == expected


@pytest.mark.parametrize(
    ("env", "fragment"),
    [
        ({"PROBE_ADDR": "8081"}, "expected host:port"),
        ({"PROBE_ADDR": ""}, "set but empty; unset it for the default 0.0.0.0:8081"),
        ({"PROBE_ADDR": "0.0.0.0:8080"}, "uses LISTEN_ADDR's port 8080"),
        ({"LISTEN_ADDR": "0.0.0.0:8081"}, "uses LISTEN_ADDR's port 8081"),
    ],
)
def test_probe_addr_problems(env: dict[str, str], fragment: str) -> None:
    assert fragment in problems(BASE | env)["PROBE_ADDR"]
