"""``autoroll serve`` and ``autoroll plan`` as a user runs them: exit codes and messages.

Each test runs the real console entry point in a subprocess with a hand-made environment,
so nothing from the developer's shell (a real kubeconfig, real tokens) leaks in.
"""

from __future__ import annotations

import os
import socket
import subprocess
from pathlib import Path

import pytest

from tests.support.autoroll_cli import run_autoroll

pytestmark = pytest.mark.integration

REQUIRED = ("FORGEJO_HOST", "FORGEJO_USER", "FORGEJO_TOKEN", "WEBHOOK_SECRET")
TOKEN = "tok-never-print-me-7f3a9c"
SHORT_SECRET = "hush-7f3a"  # too short: invalid, and still never printed


def run(args: list[str], env: dict[str, str], tmp: Path) -> subprocess.CompletedProcess[str]:
    base = {"PATH": os.environ.get("PATH", ""), "HOME": str(tmp)}
    return run_autoroll(*args, env={**base, **env})


def test_serve_with_nothing_set_exits_2_naming_every_missing_variable(tmp_path: Path) -> None:
    result = run(["serve"], {}, tmp_path)
    assert result.returncode == 2
    for name in REQUIRED:
        assert f"{name}: is required but not set" in result.stderr
    assert "Traceback" not in result.stderr
    assert result.stdout == ""


def test_serve_reports_all_problems_at_once_and_prints_no_secret(tmp_path: Path) -> None:
    env = {
        "FORGEJO_TOKEN": TOKEN,
        "WEBHOOK_SECRET": SHORT_SECRET,
        "POLL_INTERVAL_SECONDS": "soon",
        "LISTEN_ADDR": "127.0.0.1:1",  # valid; the server must never get as far as binding
    }
    result = run(["serve"], env, tmp_path)
    output = result.stdout + result.stderr
    assert result.returncode == 2
    assert "FORGEJO_HOST: is required but not set" in output
    assert "FORGEJO_USER: is required but not set" in output
    assert "WEBHOOK_SECRET" in output
    assert "POLL_INTERVAL_SECONDS" in output
    assert TOKEN not in output
    assert SHORT_SECRET not in output
    assert "Traceback" not in output


def test_serve_with_one_missing_variable_names_just_that_one(tmp_path: Path) -> None:
    env = {
        "FORGEJO_HOST": "git.example.org",
        "FORGEJO_USER": "autoroll",
        "FORGEJO_TOKEN": TOKEN,
    }
    result = run(["serve"], env, tmp_path)
    assert result.returncode == 2
    assert "WEBHOOK_SECRET: is required but not set" in result.stderr
    assert "FORGEJO_HOST" not in result.stderr
    assert TOKEN not in result.stderr


def _plan_env(tmp: Path, kubeconfig: Path) -> dict[str, str]:
    return {
        "FORGEJO_HOST": "127.0.0.1:9",
        "REGISTRY_SCHEME": "http",
        "FORGEJO_USER": "autoroll",
        "FORGEJO_TOKEN": TOKEN,
        "KUBECONFIG": str(kubeconfig),
    }


def test_plan_without_a_kubeconfig_is_a_clear_usage_error(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-kubeconfig"
    result = run(["plan"], _plan_env(tmp_path, missing), tmp_path)
    assert result.returncode == 2
    assert "no Kubernetes configuration" in result.stderr
    assert str(missing) in result.stderr
    assert "Traceback" not in result.stderr
    assert TOKEN not in result.stderr


def test_plan_against_an_unreachable_api_exits_1_with_a_clear_message(tmp_path: Path) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        dead_port = sock.getsockname()[1]
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\n"
        f'clusters: [{{name: c, cluster: {{server: "https://127.0.0.1:{dead_port}"}}}}]\n'
        "users: [{name: u, user: {token: t}}]\n"
        "contexts: [{name: x, context: {cluster: c, user: u}}]\ncurrent-context: x\n"
    )
    result = run(
        ["plan", "--kubeconfig", str(kubeconfig)], _plan_env(tmp_path, tmp_path / "x"), tmp_path
    )
    assert result.returncode == 1
    assert "cannot reach the Kubernetes API" in result.stderr
    assert "Traceback" not in result.stderr


def test_plan_with_missing_registry_settings_exits_2(tmp_path: Path) -> None:
    result = run(["plan"], {}, tmp_path)
    assert result.returncode == 2
    assert "FORGEJO_HOST: is required but not set" in result.stderr
    # plan serves no webhook, so it does not ask for WEBHOOK_SECRET
    assert "WEBHOOK_SECRET" not in result.stderr
