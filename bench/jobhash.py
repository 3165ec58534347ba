"""Measurement 4: ``jobhash names`` against ``helm template`` on the same values.

The comparison itself is ``bench/jobhash_names.py`` from the jobs branch (issue 3); this
module only runs it and reports its numbers. Until that script is on this branch the
measurement is reported as pending.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

SCRIPT = Path(__file__).resolve().parent / "jobhash_names.py"


def measure_jobhash(jobs: Sequence[int], *, say: Callable[[str], None]) -> dict[str, Any]:
    if not SCRIPT.exists():
        say("jobhash: bench/jobhash_names.py is not merged yet; measurement 4 pending")
        return {
            "pending": "Pending: `bench/jobhash_names.py` (the jobs branch, issue 3) is not"
            " merged into this branch yet, so `jobhash names` was not measured.",
            "rows": [],
        }
    raise NotImplementedError("wire bench/jobhash_names.py in")
