"""Benchmark: `jobhash names` against `helm template` for 50 and 500 jobs.

Both are run as a user runs them (a fresh process each time, the chart from
charts/autoroll), best of several runs, on the same generated values file: groups of 10 jobs,
each with an image, a command, a few env variables (numbers and strings), a task and pod
annotations. Prints a small table; the acceptance bar is 500 jobs in under 1 s for jobhash.

Usage:  source .tools/env && .venv/bin/python -m bench.jobhash_names [--runs N]
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CHART = ROOT / "charts" / "autoroll"
RELEASE = "bench"


def values_for(jobs: int) -> dict[str, object]:
    """A values document with ``jobs`` entries, 10 per group."""
    groups: dict[str, object] = {}
    for index in range(jobs):
        group = groups.setdefault(
            f"group-{index // 10:03d}",
            {
                "image": {"repository": "registry.example/app/migrator", "tag": "v1.2.3"},
                "env": {"LOG_LEVEL": "info", "PORT": 8080},
                "jobs": {},
            },
        )
        assert isinstance(group, dict)
        group["jobs"][f"job-{index:04d}"] = {
            "command": ["./run.sh", f"--step={index}"],
            "env": {"STEP": index, "RATIO": 0.5, "NAME": f"step <{index}> & more"},
            "tasks": [{"name": "prepare", "command": "./prepare.sh"}],
            "podAnnotations": {"team": "data"},
            "backoffLimit": 2,
        }
    return {"controller": {"enabled": False}, "jobGroups": groups}


def best_of(command: list[str], runs: int) -> tuple[float, str]:
    best = float("inf")
    output = ""
    for _ in range(runs):
        start = time.perf_counter()
        result = subprocess.run(command, capture_output=True, text=True, check=True)
        best = min(best, time.perf_counter() - start)
        output = result.stdout
    return best, output


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="runs per measurement (best of)")
    args = parser.parse_args(argv)
    helm = shutil.which("helm")
    if helm is None:
        print("helm is not on PATH: source .tools/env first", file=sys.stderr)
        return 2
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for jobs in (50, 500):
            values = Path(tmp) / f"values-{jobs}.json"
            values.write_text(json.dumps(values_for(jobs)), encoding="utf-8")
            ours, out = best_of(
                [sys.executable, "-m", "jobhash", "names", "--release", RELEASE,
                 "--chart", str(CHART), "-f", str(values), "-o", "json"],
                args.runs,
            )  # fmt: skip
            theirs, rendered = best_of(
                [helm, "template", RELEASE, str(CHART), "-f", str(values)], args.runs
            )
            names = {row["name"] for row in json.loads(out)}
            assert len(names) == jobs, len(names)
            assert all(f"name: {name}" in rendered for name in names), "names differ from helm"
            rows.append((jobs, ours, theirs))
    print(f"{'jobs':>5}  {'jobhash names':>14}  {'helm template':>14}  {'ratio':>6}")
    for jobs, ours, theirs in rows:
        print(
            f"{jobs:>5}  {ours * 1000:>11.0f} ms  {theirs * 1000:>11.0f} ms  {ours / theirs:>5.2f}x"
        )
    slow = [jobs for jobs, ours, _ in rows if jobs == 500 and ours >= 1.0]
    if slow:
        print("FAIL: jobhash names took 1 s or more for 500 jobs", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
