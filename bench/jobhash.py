"""Measurement 4: ``jobhash names`` against ``helm template`` on the same values.

The comparison is ``bench/jobhash_names.py`` from the jobs branch (issue 3): its values
generator and its best-of-N process timing are reused here, so both reports measure the
same thing; this module only collects the numbers for ``docs/performance.md`` and checks
that both tools produced the same Job names. Until that script is on this branch the
measurement is reported as pending.
"""

from __future__ import annotations

import importlib
import json
import shutil
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

SCRIPT = Path(__file__).resolve().parent / "jobhash_names.py"
RUNS = 3


def measure_jobhash(jobs: Sequence[int], *, say: Callable[[str], None]) -> dict[str, Any]:
    if not SCRIPT.exists():
        say("jobhash: bench/jobhash_names.py is not merged yet; measurement 4 pending")
        return {
            "pending": "Pending: `bench/jobhash_names.py` (the jobs branch, issue 3) is not"
            " merged into this branch yet, so `jobhash names` was not measured.",
            "rows": [],
        }
    helm = shutil.which("helm")
    if helm is None:
        return {"pending": "Not measured: helm is not on PATH (`source .tools/env`).", "rows": []}
    script: Any = importlib.import_module("bench.jobhash_names")
    rows = []
    # What a fresh jobhash process pays before it reads a values file.
    startup, _ = script.best_of([sys.executable, "-c", "import jobhash.cli"], RUNS)
    with tempfile.TemporaryDirectory() as tmp:
        for count in jobs:
            values = Path(tmp) / f"values-{count}.json"
            values.write_text(json.dumps(script.values_for(count)), encoding="utf-8")
            ours, out = script.best_of(
                [sys.executable, "-m", "jobhash", "names", "--release", script.RELEASE,
                 "--chart", str(script.CHART), "-f", str(values), "-o", "json"],
                RUNS,
            )  # fmt: skip
            theirs, rendered = script.best_of(
                [helm, "template", script.RELEASE, str(script.CHART), "-f", str(values)], RUNS
            )
            names = {row["name"] for row in json.loads(out)}
            same = len(names) == count and all(f'name: "{n}"' in rendered for n in names)
            rows.append(
                {
                    "jobs": count,
                    "jobhash_s": ours,
                    "helm_s": theirs,
                    "startup_s": startup,
                    "same_names": same,
                }
            )
            say(f"jobhash: {count} jobs: jobhash {ours:.3f}s, helm {theirs:.3f}s, same={same}")
    return {
        "method": "Each tool run as a user runs it: a fresh process per run, best of"
        f" {RUNS}, on the same generated values file (`bench/jobhash_names.py`: groups of 10"
        " jobs with image, command, env, a task and pod annotations) and the chart in"
        " `charts/autoroll`; `jobhash names -o json` against `helm template`, and every name"
        " jobhash printed is checked to appear in helm's output.",
        "rows": rows,
    }
