"""``python -m autoroll`` run to completion as a child process, for the tests of a command
that exits (``plan``, or ``serve`` refusing its configuration); a ``serve`` that keeps running
is ``tests.support.serve``'s."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Mapping


def run_autoroll(
    *args: str, env: Mapping[str, str], timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    """``autoroll <args>`` with exactly ``env`` (nothing inherited), its output captured as
    text; the exit code is the caller's to check."""
    return subprocess.run(
        [sys.executable, "-m", "autoroll", *args],
        env=dict(env),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
