"""The largest sizes: 50,000 workloads when measured, and a fit of memory and pass time
against size from every measured size (issue 28), stated as a fit.

``bench.run --largest --giant 50000`` grows the cluster on to 50,000 enrolled Deployments
(150,000 pods) and measures the watched cache there (``bench.tick --strategy cached``), the
control plane's memory and one serve's targeted pushes. Whether or not that ran, each
quantity is fitted with a straight line ``a + b·n`` over the measured sizes (least squares,
``n`` the enrolled Deployments), and the fit is evaluated at 50,000 and 100,000: what a
cluster of that size would need. A fit is not a measurement, and the tables say which is
which. Pure: results in, Markdown and verdicts out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

MB: Final = 1_000_000
#: The sizes the section predicts for.
PREDICTED: Final = (50_000, 100_000)
GIANT: Final = 50_000


@dataclass(frozen=True)
class Point:
    """What one measured size cost (None: not measured at that size)."""

    deployments: int
    pods: int
    sync_s: float | None
    warm_wall_s: float | None
    warm_cpu_s: float | None
    tick_peak_mb: float | None  # bench.tick --strategy cached: cache + passes, one process
    reconcile_peak_mb: float | None  # autoroll serve's reconcile process through pushes
    control_plane_mb: float | None  # etcd + kube-apiserver peak RSS


@dataclass(frozen=True)
class Line:
    """``a + b·n``, fitted over ``points`` sizes."""

    a: float
    b: float
    points: int

    def at(self, n: float) -> float:
        return self.a + self.b * n


def fit(xs: Sequence[float], ys: Sequence[float]) -> Line | None:
    """Least squares through the points; None with fewer than two distinct sizes."""
    if len(xs) != len(ys) or len(set(xs)) < 2:
        return None
    mean_x, mean_y = sum(xs) / len(xs), sum(ys) / len(ys)
    spread = sum((x - mean_x) ** 2 for x in xs)
    slope = sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys, strict=True)) / spread
    return Line(mean_y - slope * mean_x, slope, len(xs))


def _steady(passes: Sequence[Mapping[str, Any]]) -> Mapping[str, Any]:
    rest = list(passes[1:]) or list(passes)
    return sorted(rest, key=lambda p: p["wall_s"])[(len(rest) - 1) // 2]


def _mb(kib: float | None) -> float | None:
    return None if kib is None else kib * 1024 / MB


def points(results: Mapping[str, Any]) -> list[Point]:
    """Every measured size with a cached strategy, smallest first (the scale cells and the
    ``giant`` ones), one point per size (the largest image count wins)."""
    found: dict[int, Point] = {}
    pushes = results.get("push", {})
    for cell in [*results.get("scale", ()), *results.get("giant", ())]:
        cached = cell["results"].get("cached")
        if cached is None:
            continue
        size = int(cell["deployments"])
        steady = _steady(cached["passes"])
        push = cell.get("push") or pushes.get(str(size)) or {}
        serve = push.get("push_targeted", {}).get("rss_kib_by_process", {})
        plane = cell.get("control_plane_kib") or {}
        found[size] = Point(
            deployments=size,
            pods=int(cell["pods"]),
            sync_s=cached.get("cache", {}).get("sync_s"),
            warm_wall_s=steady["wall_s"],
            warm_cpu_s=steady["cpu_s"],
            tick_peak_mb=_mb(cached.get("peak_rss_kib")),
            reconcile_peak_mb=_mb(serve.get("reconcile")),
            control_plane_mb=_mb(sum(plane.values())) if plane else None,
        )
    return [found[k] for k in sorted(found)]


FIELDS: Final = (
    ("sync_s", "cache sync s", "{:.1f}"),
    ("warm_wall_s", "warm full pass wall s", "{:.2f}"),
    ("warm_cpu_s", "warm full pass CPU s", "{:.2f}"),
    ("tick_peak_mb", "cache + passes peak RSS MB (`bench.tick`)", "{:.0f}"),
    ("reconcile_peak_mb", "serve's reconcile process peak RSS MB", "{:.0f}"),
    ("control_plane_mb", "etcd + kube-apiserver peak RSS MB", "{:.0f}"),
)


def lines(found: Sequence[Point]) -> dict[str, Line | None]:
    out = {}
    for name, _, _ in FIELDS:
        measured = [(p.deployments, getattr(p, name)) for p in found]
        kept = [(x, y) for x, y in measured if y is not None]
        out[name] = fit([x for x, _ in kept], [y for _, y in kept])
    return out


def verdict(results: Mapping[str, Any]) -> tuple[str, bool | None, str]:
    """The target row: a 50,000-workload size, measured, or the fit and why."""
    found = points(results)
    name = "A 50,000-workload size (150,000 pods), or the largest that fits and a fit"
    if any(p.deployments >= GIANT for p in found):
        giant = next(p for p in found if p.deployments >= GIANT)
        return (
            name,
            True,
            f"measured at {giant.deployments:,}: warm pass {giant.warm_wall_s:.1f} s wall,"
            f" reconcile process peak {_fmt(giant.reconcile_peak_mb, '{:.0f}')} MB",
        )
    fitted = lines(found)
    rss, wall = fitted["reconcile_peak_mb"] or fitted["tick_peak_mb"], fitted["warm_wall_s"]
    if rss is None or wall is None:
        return name, None, "not measured, and fewer than two sizes to fit"
    largest = max(p.deployments for p in found)
    return (
        name,
        None,
        f"not measured (largest measured: {largest:,}); fitted over {rss.points} sizes:"
        f" {rss.at(GIANT):.0f} MB and a {wall.at(GIANT):.1f} s warm pass at 50,000, a fit",
    )


def _fmt(value: float | None, form: str) -> str:
    return "-" if value is None else form.format(value)


def section(results: Mapping[str, Any]) -> str:
    """The page's section: measured sizes, the fit at 50,000 and 100,000, and what that
    means for a 100,000-workload cluster."""
    found = points(results)
    if not found:
        return ""
    fitted = lines(found)
    head = "| Deployments | pods | source | " + " | ".join(t for _, t, _ in FIELDS) + " |\n"
    head += "|---:|---:|---|" + "---:|" * len(FIELDS) + "\n"
    rows = [
        f"| {p.deployments:,} | {p.pods:,} | measured | "
        + " | ".join(_fmt(getattr(p, n), f) for n, _, f in FIELDS)
        + " |"
        for p in found
    ]
    measured = {p.deployments for p in found}
    for n in PREDICTED:
        if n in measured:
            continue
        cells = [
            _fmt(line.at(n) if line else None, f)
            for (_, _, f), line in zip(FIELDS, fitted.values(), strict=True)
        ]
        rows.append(f"| {n:,} | {3 * n:,} | **fit** | " + " | ".join(cells) + " |")
    coefficients = "; ".join(
        f"{title}: {line.a:.3g} + {line.b * 1000:.3g} per 1,000 Deployments ({line.points} sizes)"
        for (name, title, _), line in zip(FIELDS, fitted.values(), strict=True)
        if line is not None
    )
    return (
        "## 7. The largest sizes, and a fit\n\n"
        "Each row marked *measured* is a size this run populated (the watched cache synced,"
        " its warm passes, one serve's targeted pushes); rows marked **fit** are not"
        " measured: each column is a straight line `a + b·n` fitted by least squares over the"
        f" measured sizes and evaluated there. The lines: {coefficients}.\n\n"
        + _giant_source(results)
        + head
        + "\n".join(rows)
        + "\n\n"
        + _hundred_thousand(fitted)
    )


def _giant_source(results: Mapping[str, Any]) -> str:
    """Where the sizes past 10,000 were measured, when another run than the rest measured
    them (``bench.merge --giant-from``): its date and load, so nobody reads them as this
    run's."""
    part = results.get("giant_part")
    if not part:
        return ""
    sizes = ", ".join(f"{g['deployments']:,}" for g in results.get("giant", ()))
    return (
        f"The {sizes} row comes from a separate `bench.run --largest --giant` run on"
        f" {part['date']} (load average {part['load_before']} before → {part['load_after']}"
        " after), whose other cells are not used here: every other measured cell on this"
        " page is the quiet pair's.\n\n"
    )


def _hundred_thousand(fitted: Mapping[str, Line | None]) -> str:
    """What a 100,000-workload cluster would need, from the fit (or why it cannot say)."""
    n = 100_000
    rss = fitted["reconcile_peak_mb"] or fitted["tick_peak_mb"]
    wall, cpu, sync = fitted["warm_wall_s"], fitted["warm_cpu_s"], fitted["sync_s"]
    plane = fitted["control_plane_mb"]
    if rss is None or wall is None or cpu is None:
        return "*100,000 workloads:* fewer than two measured sizes; nothing to fit.\n"
    parts = [
        f"*What 100,000 workloads (300,000 pods) would need, from the fit:* the reconcile"
        f" process peaks near **{rss.at(n):.0f} MB** (set the pod's memory limit with room"
        f" above that, for the transient of a resync's list), a warm full pass (the poll's)"
        f" takes about {wall.at(n):.0f} s wall and {cpu.at(n):.0f} s of CPU, so the poll"
        " interval must stay well above it"
        + (
            " (the default 120 s does)"
            if wall.at(n) * 2 < 120
            else f" (the default 120 s does not: set POLL_INTERVAL_SECONDS to {wall.at(n) * 3:.0f}"
            " or more)"
        )
        + "; targeted passes (webhooks, roll pace) do not grow with the cluster",
    ]
    if sync is not None:
        parts.append(f"; the cache's first sync takes about {sync.at(n):.0f} s at each start")
    if plane is not None:
        parts.append(
            f"; the API server and etcd hold about {plane.at(n) / 1000:.1f} GB for the"
            " objects (theirs, not autoroll's)"
        )
    return "".join(parts) + ". A fit, not a measurement.\n"
