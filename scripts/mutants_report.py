#!/usr/bin/env python3
"""The kill rate of the last ``mutmut run`` (``make mutants``), per mutated module and in all.

Reads mutmut's own records (``mutants/<path>.meta``: each mutant's exit code from the tests
that reach it). A mutant is *killed* when a test failed (or timed out) with it in place,
*survived* when every test that reaches it passed, *no tests* when no selected test reaches
the mutated function. The kill rate is killed / (killed + survived + no tests); mutants not
run yet (an interrupted run) are counted apart and left out of the rate.

Usage: python3 scripts/mutants_report.py [--survivors] [MUTANTS_DIR]
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

KILLED = "killed"
SURVIVED = "survived"
NO_TESTS = "no tests"
NOT_RUN = "not run"
OTHER = "other"

#: mutmut's exit codes (mutmut/stats.py): a failing test run (1), pytest's internal error
#: (3), a timeout (36, or the CPU limit's signal) and the type checker's catch all kill.
_BY_EXIT_CODE: Mapping[int | None, str] = {
    1: KILLED,
    3: KILLED,
    36: KILLED,
    37: KILLED,
    24: KILLED,
    -24: KILLED,
    152: KILLED,
    255: KILLED,
    0: SURVIVED,
    5: NO_TESTS,
    33: NO_TESTS,
    None: NOT_RUN,
}


def outcome(exit_code: int | None) -> str:
    return _BY_EXIT_CODE.get(exit_code, OTHER)


def tally(exit_codes: Iterable[int | None]) -> Counter[str]:
    return Counter(outcome(code) for code in exit_codes)


def kill_rate(counts: Mapping[str, int]) -> float | None:
    """Killed among the mutants that were run and judged; None when there are none."""
    judged = counts.get(KILLED, 0) + counts.get(SURVIVED, 0) + counts.get(NO_TESTS, 0)
    return counts.get(KILLED, 0) / judged if judged else None


def records(mutants: Path) -> dict[str, dict[str, int | None]]:
    """Source path → {mutant name: exit code}, from mutmut's ``.meta`` files."""
    found = {}
    for meta in sorted(mutants.rglob("*.py.meta")):
        data = json.loads(meta.read_text())
        found[meta.relative_to(mutants).as_posix().removesuffix(".meta")] = data["exit_code_by_key"]
    return found


def _row(name: str, counts: Mapping[str, int]) -> str:
    rate = kill_rate(counts)
    shown = "-" if rate is None else f"{rate:.1%}"
    return (
        f"{name:<28} {counts.get(KILLED, 0):>7} {counts.get(SURVIVED, 0):>8}"
        f" {counts.get(NO_TESTS, 0):>8} {counts.get(NOT_RUN, 0) + counts.get(OTHER, 0):>9}"
        f" {shown:>9}"
    )


def report(found: Mapping[str, Mapping[str, int | None]]) -> str:
    head = ("killed", 7), ("survived", 8), ("no tests", 8), ("not run", 9), ("kill rate", 9)
    lines = [f"{'module':<28}" + "".join(f" {title:>{width}}" for title, width in head)]
    overall: Counter[str] = Counter()
    for path, codes in found.items():
        counts = tally(codes.values())
        overall += counts
        lines.append(_row(path, counts))
    lines.append(_row("all", overall))
    return "\n".join(lines)


def survivors(found: Mapping[str, Mapping[str, int | None]]) -> list[str]:
    """Every mutant that survived or that no test reaches (``mutmut show NAME`` shows it)."""
    return [
        f"{outcome(code)}: {name}"
        for codes in found.values()
        for name, code in codes.items()
        if outcome(code) in (SURVIVED, NO_TESTS)
    ]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mutants", nargs="?", type=Path, default=Path("mutants"))
    parser.add_argument("--survivors", action="store_true", help="also list them")
    args = parser.parse_args(argv)
    found = records(args.mutants)
    if not found:
        print(f"no mutmut records under {args.mutants}: run `make mutants` first")
        return 1
    print(report(found))
    if args.survivors:
        print("\n".join(survivors(found)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
