"""The quiet run and the loaded run of the benchmark, target by target, side by side.

Issue 28: a controller shares its node with busy workloads, so ``docs/performance.md``
shows every target twice: measured on a quiet machine and measured with ``stress-ng``
beside the benchmark (``bench.run --load-cpus N``, ``bench.load``), each column headed by
the load average its run saw. A target missed in either column says so, with its reason.
Pure: rows in, Markdown out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from bench.load import describe


class Row(Protocol):
    """One target's verdict (``bench.targets.Target``)."""

    @property
    def name(self) -> str: ...

    @property
    def met(self) -> bool | None: ...

    @property
    def detail(self) -> str: ...


def run_load(results: Mapping[str, Any]) -> str:
    """What ran beside a run and the load average it saw (each part of a merged run)."""
    parts = results.get("cpu_load_parts") or (
        [results["cpu_load"]] if results.get("cpu_load") else []
    )
    if not parts:
        machine = results.get("machine", {})
        return f"load average {machine.get('load_before', '?')} before"
    names = ("--smaller", "--largest") if len(parts) == 2 else ("",) * len(parts)
    return "; ".join(
        f"{describe(part)}{f' ({name})' if name else ''}"
        for part, name in zip(parts, names, strict=True)
        if part
    )


def _cell(row: Row | None) -> str:
    if row is None or row.met is None:
        return "not measured" + (f": {row.detail}" if row is not None and row.detail else "")
    return ("met" if row.met else "**missed**") + f": {row.detail}"


def side_by_side(
    quiet: Sequence[Row],
    loaded: Sequence[Row],
    *,
    quiet_results: Mapping[str, Any],
    loaded_results: Mapping[str, Any],
) -> str:
    """The targets table with a column per run, in the quiet run's order (then the loaded
    run's own rows)."""
    by_name = {row.name: row for row in loaded}
    names = [row.name for row in quiet] + [
        r.name for r in loaded if r.name not in {q.name for q in quiet}
    ]
    quiet_by_name = {row.name: row for row in quiet}
    lines = [
        "| target | quiet run | loaded run |",
        "|---|---|---|",
        f"| *load* | {run_load(quiet_results)} | {run_load(loaded_results)} |",
    ]
    lines += [
        f"| {name} | {_cell(quiet_by_name.get(name))} | {_cell(by_name.get(name))} |"
        for name in names
    ]
    return "\n".join(lines) + "\n"
