"""``python -m bench.merge SMALLER.json LARGEST.json [--giant-from GIANT.json]
[--loaded SMALLER.json LARGEST.json]``: one report from two runs (and, with ``--loaded``,
the same pair run under a CPU load).

On a shared 2-core machine one run of every size takes longer than the time it may have, so
it can run as ``bench.run --smaller`` (every size below 10,000, one image count, the pushes at
2,058 and jobhash) and ``bench.run --largest`` (the 10,000 cell, its pushes and the webhook
load), at the same time or one after the other. This writes ``bench/results.json`` and
``docs/performance.md`` as one run would, saying under what load each part ran. With
``--loaded``, the pair run beside ``stress-ng`` (``bench.run --load-cpus N``) is merged the
same way and kept as ``loaded`` in the results; the report puts its targets beside the quiet
run's (``bench.side_by_side``). ``--giant-from`` takes the largest sizes (``--giant N``) from
another ``--largest`` run, which takes half an hour more: the report says which run, when
and under what load, and every other cell stays the quiet pair's.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.report import render

REPO_ROOT = Path(__file__).resolve().parent.parent


def merge(smaller: dict[str, Any], largest: dict[str, Any]) -> dict[str, Any]:
    """The two runs' results as one: cells and pushes of both, the rest from its owner."""
    merged = dict(smaller)
    merged["scale"] = list(smaller.get("scale", ())) + list(largest.get("scale", ()))
    merged["push"] = {**smaller.get("push", {}), **largest.get("push", {})}
    if largest.get("load"):
        merged["load"] = largest["load"]
    if largest.get("giant"):
        merged["giant"] = largest["giant"]
    # A --largest run stopped part-way leaves results.partial.json: what it measured, without
    # its sizes, times or closing load.
    partial = bool(largest.get("partial"))
    big = largest.get("sizes") or {"images": [200], "huge": [10000]}
    sizes = dict(smaller["sizes"])
    sizes["images"] = sorted(set(smaller["sizes"]["images"]) | set(big["images"]))
    sizes["deployments"] = list(smaller["sizes"]["deployments"]) + list(big.get("huge", ()))
    merged["sizes"] = sizes
    merged["elapsed_s"] = max(smaller["elapsed_s"], largest.get("elapsed_s", 0.0))
    machine = dict(smaller["machine"])
    for key in ("load_before", "load_after"):
        other = largest["machine"].get(key, "(stopped part-way: not taken)")
        machine[key] = f"{smaller['machine'][key]} (--smaller), {other} (--largest)"
    merged["machine"] = machine
    merged["largest_partial"] = partial
    if largest.get("note"):
        merged["largest_note"] = largest["note"]
    load: dict[str, Any] = next(
        (p["cpu_load"] for p in (smaller, largest) if p.get("cpu_load")), {}
    )
    flag = f" --load-cpus {load['workers']}" if load.get("workers") else ""
    merged["command"] = (
        f"python -m bench.run --smaller{flag} --json S.json; python -m bench.run --largest"
        f"{flag} --json L.json; python -m bench.merge S.json L.json"
    )
    merged["date"] = max(smaller["date"], largest.get("date", ""))
    merged["parts"] = {"smaller": smaller["date"], "largest": largest.get("date", "part-way")}
    merged["cpu_load_parts"] = [smaller.get("cpu_load"), largest.get("cpu_load")]
    merged.pop("cpu_load", None)
    return merged


def with_giant(results: dict[str, Any], giant_run: dict[str, Any]) -> dict[str, Any]:
    """``results`` with the largest sizes of ``giant_run`` (a ``--largest --giant N`` run),
    and where they came from: its date and load (``giant_part``), for the report to say."""
    if not giant_run.get("giant"):
        raise ValueError("the --giant-from run measured no giant size (run it with --giant N)")
    out = dict(results)
    out["giant"] = giant_run["giant"]
    machine = giant_run["machine"]
    out["giant_part"] = {
        "date": giant_run["date"],
        "load_before": machine["load_before"],
        "load_after": machine["load_after"],
    }
    return out


def combine(
    quiet: Sequence[dict[str, Any]],
    loaded: Sequence[dict[str, Any]],
    pace: dict[str, Any] | None,
    giant_run: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The page's results: the quiet pair merged (with ``giant_run``'s largest sizes, if
    given), the loaded pair (if any) under ``loaded``, and the real node's roll pace
    (``bench/roll_pace.json``) on the quiet run only: bench.run attaches it to every run,
    but no loaded run measured it, so its column must say so."""
    results = merge(quiet[0], quiet[1])
    if giant_run is not None:
        results = with_giant(results, giant_run)
    if loaded:
        results["loaded"] = merge(loaded[0], loaded[1])
        results["loaded"].pop("roll_pace", None)
    if pace is not None:
        results["roll_pace"] = pace
    return results


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    giant_run: dict[str, Any] | None = None
    if "--giant-from" in args:
        at = args.index("--giant-from")
        if at + 1 >= len(args):
            print("--giant-from needs a results file: --giant-from GIANT.json")
            return 2
        try:
            giant_run = json.loads(Path(args[at + 1]).read_text())
        except (OSError, ValueError) as exc:
            print(f"--giant-from {args[at + 1]}: not a bench.run results file ({exc})")
            return 2
        del args[at : at + 2]
    loaded_args = args[args.index("--loaded") + 1 :] if "--loaded" in args else []
    quiet_args = args[: args.index("--loaded")] if "--loaded" in args else args
    if len(quiet_args) != 2 or len(loaded_args) not in (0, 2):
        print(
            "usage: python -m bench.merge SMALLER.json LARGEST.json [--giant-from G.json]"
            " [--loaded S.json L.json]"
        )
        return 2
    parts = [json.loads(Path(a).read_text()) for a in quiet_args]
    loaded = [json.loads(Path(a).read_text()) for a in loaded_args]
    pace_file = REPO_ROOT / "bench" / "roll_pace.json"
    pace = json.loads(pace_file.read_text()) if pace_file.exists() else None
    try:
        results = combine(parts, loaded, pace, giant_run)
    except ValueError as exc:
        print(f"bench.merge: {exc}")
        return 2
    (REPO_ROOT / "bench" / "results.json").write_text(
        json.dumps(results, indent=2, sort_keys=True) + "\n"
    )
    (REPO_ROOT / "docs" / "performance.md").write_text(render(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
