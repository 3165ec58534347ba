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


def run_module(
    module: str, flags: Sequence[str], *, timeout: float, defaults: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """Run ``python -m <module> <flags>`` from the checkout; its last stdout line, parsed
    (raise with the tail of its stderr when it fails). ``defaults`` are environment
    variables the child gets unless this process's environment sets them."""
    done = subprocess.run(
        [sys.executable, "-m", module, *flags],
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
