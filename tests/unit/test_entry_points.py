"""The console scripts and ``python -m`` entry points start and report their version."""

from __future__ import annotations

import subprocess
import sys

import pytest

from autoroll.edge import cli as autoroll_cli
from jobhash import cli as jobhash_cli


@pytest.mark.parametrize("module", ["autoroll", "jobhash"])
def test_python_dash_m_prints_version(module: str) -> None:
    out = subprocess.run(
        [sys.executable, "-m", module, "--version"], capture_output=True, text=True, check=True
    )
    assert out.stdout.startswith(f"{module} ")


def test_autoroll_without_command_is_a_usage_error() -> None:
    assert autoroll_cli.main([]) == 2


def test_jobhash_without_command_is_a_usage_error() -> None:
    assert jobhash_cli.main([]) == 2
