"""What every bench report table shares: the statistics its cells are made of, and one way
of writing a Markdown table, so ``report``, ``cache_report`` and ``cache_memory`` print
their figures the same way. Pure.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

MB = 1_000_000

#: How a column lines up (one letter a column): numbers to the right, words to the left.
ALIGN = {"r": "---:", "l": "---"}


def percentile(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile (``q`` in 0..100): a value that was actually observed."""
    if not values:
        raise ValueError("percentile of no values")
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[rank - 1]


def steady(passes: Sequence[Mapping[str, Any]]) -> Mapping[str, Any]:
    """The steady-state pass: the median-wall one after the first (cold) pass."""
    rest = list(passes[1:]) or list(passes)
    return sorted(rest, key=lambda p: p["wall_s"])[(len(rest) - 1) // 2]


def lists(counts: Mapping[str, int]) -> int:
    """The list requests among counts by request kind (``"list pods"``, ...)."""
    return sum(v for k, v in counts.items() if k.startswith("list "))


def total(counts: Mapping[str, int]) -> int:
    return sum(counts.values())


def row(cells: Iterable[object]) -> str:
    """One table row; a ``None`` cell is left blank (``| |``)."""
    return "|" + "|".join(" " if cell is None else f" {cell} " for cell in cells) + "|"


def header(titles: str, align: str) -> str:
    """The title row and the alignment row, each ended by a newline: ``titles`` separated by
    ``|``, ``align`` one letter a column (``r`` right, ``l`` left)."""
    names = [t.strip() for t in titles.split("|")]
    if len(names) != len(align):
        raise ValueError(f"{len(names)} titles, {len(align)} alignments: {titles!r}")
    return row(names) + "\n|" + "|".join(ALIGN[a] for a in align) + "|\n"


def table(titles: str, align: str, rows: Iterable[Sequence[object] | str]) -> str:
    """A whole Markdown table: the header, then a row per item (a ready row as text, or its
    cells), and a newline after the last row (two when there is none)."""
    lines = [item if isinstance(item, str) else row(item) for item in rows]
    return header(titles, align) + "\n".join(lines) + "\n"


def push_cells(p: Mapping[str, Any]) -> list[str]:
    """A push measurement's latency cells: p50, p95, max, webhook answer p95, mean pass."""
    return [
        f"{percentile(p['latency_s'], 50):.3f}",
        f"{percentile(p['latency_s'], 95):.3f}",
        f"{max(p['latency_s']):.3f}",
        f"{percentile(p['webhook_ms'], 95):.1f}",
        f"{p['tick_s']:.2f}",
    ]


def latency_cells(latencies: Sequence[float]) -> list[str]:
    """p50, p95 and max of webhook answer times in ms."""
    return [
        f"{percentile(latencies, 50):.1f}",
        f"{percentile(latencies, 95):.1f}",
        f"{max(latencies):.1f}",
    ]


def counted(counts: Mapping[str, int], *, nonzero: bool = False) -> str:
    """``"key: count, ..."``, in the order counted (with ``nonzero``, the zeros left out)."""
    return ", ".join(f"{k}: {v}" for k, v in counts.items() if v or not nonzero)


def webhook_cells(what: str, record: Mapping[str, Any], last: object) -> list[object]:
    """A load table's row for one kind of webhook request: how many and ``what``, their
    answers, latencies, window and the passes they caused, then the ``last`` cell."""
    lat = record["latencies_ms"]
    return [
        f"{len(lat)} {what}",
        counted(record["statuses"]),
        *latency_cells(lat),
        f"{record['window_s']:.2f}",
        record["ticks_caused"],
        last,
    ]
