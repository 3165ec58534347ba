"""A measurement in a process of its own: ``python -m bench.<module> --flag=...`` prints its
result as one JSON line last, and the parent reads it. A fresh interpreter per measurement
keeps one strategy's memory and threads from colouring the next one's figures."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent

#: The interpreter the controller's own processes run on (``autoroll serve``, its reconcile
#: process, ``bench.tick``): ``make bench`` points it at a venv holding only the image's
#: dependency set (requirements/runtime.txt), so their memory is what the image's would be;
#: the dev venv also holds the test and lint tools, and some of those change what the
#: runtime libraries import (structlog loads ``rich`` when it is installed: about 3 MB).
CONTROLLER_PYTHON_ENV = "AUTOROLL_BENCH_PYTHON"


def controller_python() -> str:
    """The controller processes' interpreter (``CONTROLLER_PYTHON_ENV``, else this one)."""
    return os.environ.get(CONTROLLER_PYTHON_ENV) or sys.executable


def controller_deps() -> str:
    """Which dependency set the controller processes ran with, for the report."""
    if os.environ.get(CONTROLLER_PYTHON_ENV):
        return "the image's dependency set (requirements/runtime.txt)"
    return "the dev venv (requirements/dev.txt)"


def run_module(
    module: str,
    flags: Sequence[str],
    *,
    timeout: float,
    defaults: Mapping[str, str] | None = None,
    python: str = sys.executable,
) -> dict[str, Any]:
    """Run ``python -m <module> <flags>`` from the checkout; its last stdout line, parsed
    (raise with the tail of its stderr when it fails). ``defaults`` are environment
    variables the child gets unless this process's environment sets them."""
    done = subprocess.run(
        [python, "-m", module, *flags],
        cwd=REPO_ROOT,
        env={**(defaults or {}), **os.environ, "PYTHONPATH": str(REPO_ROOT)},
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"{module} failed ({flags[0]}):\n{done.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def print_result(result: Mapping[str, Any]) -> int:
    """The child's side: the result as the last line of stdout; exit status 0."""
    json.dump(result, sys.stdout)
    sys.stdout.write("\n")
    return 0
