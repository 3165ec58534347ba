"""The issue-17 part of ``docs/performance.md``: the watched cache and targeted passes.

Pure, like ``bench.report``: results in, target verdicts and markdown out. The numbers come
from the same run as the rest of the page: the ``cached`` strategy of ``bench.tick`` (a
synced cache, its full passes and one targeted pass), ``autoroll serve`` with and without
the cache (push to first deletion, webhook load, peak RSS), and, when it was measured on
the real node, the roll pace (``roll_pace``: tests/e2e/test_roll_pace.py).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from bench.tables import (
    MB,
    lists,
    percentile,
    push_cells,
    row,
    steady,
    table,
    total,
    webhook_cells,
)


@dataclass(frozen=True)
class Verdict:
    name: str
    met: bool | None  # None: not measured in this run
    detail: str


def _cell(results: Mapping[str, Any], deployments: int) -> Mapping[str, Any] | None:
    found = [
        c
        for c in results.get("scale", ())
        if c["deployments"] == deployments and "cached" in c["results"]
    ]
    return max(found, key=lambda c: c["images"]) if found else None


def _push(results: Mapping[str, Any], near: int) -> tuple[int, Mapping[str, Any]] | None:
    """The push measurements of the enrolled size closest to ``near``."""
    sizes = {int(k): v for k, v in results.get("push", {}).items()}
    if not sizes:
        return None
    size = min(sizes, key=lambda s: abs(s - near))
    return size, sizes[size]


def memory_section(memory: Sequence[Mapping[str, Any]] | None) -> str:
    """Bytes the cache retains per cached object (``bench.cache_memory``), at each size."""
    if not memory:
        return (
            "Not measured in this run (`python -m bench.cache_memory` measures it;"
            " `tests/bench/test_cache_memory.py` holds it at 1,000 B or less).\n"
        )
    return table(*MEMORY_COLUMNS, (memory_row(m) for m in memory))


MEMORY_COLUMNS = (
    "Deployments | workloads | pods | B per workload | B per pod | B per object",
    "rrrrrr",
)


def memory_row(m: Mapping[str, Any]) -> list[str]:
    """One size's bytes per cached object, from ``bench.cache_memory.CacheMemory`` as a dict
    (``python -m bench.cache_memory`` prints the same rows)."""
    objects = m["workloads"] + m["pods"]
    per_object = (m["workload_bytes"] * m["workloads"] + m["pod_bytes"] * m["pods"]) / objects
    return [
        f"{m['deployments']:,}",
        f"{m['workloads']:,}",
        f"{m['pods']:,}",
        f"{m['workload_bytes']:.0f}",
        f"{m['pod_bytes']:.0f}",
        f"{per_object:.0f}",
    ]


def cache_cost(cached: Mapping[str, Any]) -> tuple[float, float]:
    """(MB the synced cache added, bytes per cached object)."""
    sync = cached["cache"]
    added = (sync["rss_synced_kib"] - sync["rss_before_kib"]) * 1024
    objects = sync["workloads"] + sync["pods"]
    return added / MB, added / objects if objects else 0.0


def verdicts(results: Mapping[str, Any], violations: Sequence[str]) -> list[Verdict]:
    """One row per target of issue 17, each met, missed or not measured, with its size."""
    out: list[Verdict] = []
    pace = results.get("roll_pace")
    # One name whether measured or not, so the side-by-side table keeps it on one row.
    roll_target = (
        "Push to roll complete (settled 3-replica app, default 120 s poll, real node)"
        " under 3 x (pull + readiness) + 1 s"
    )
    if pace:
        limit = 3 * pace["pull_ready_s"] + 1.0
        out.append(
            Verdict(
                roll_target,
                pace["roll_s"] < limit,
                f"{pace['roll_s']:.1f} s against {limit:.1f} s (pull + readiness"
                f" {pace['pull_ready_s']:.1f} s, the slowest replacement;"
                f" {pace['full_passes']} poll passes during the roll)",
            )
        )
    else:
        out.append(
            Verdict(
                roll_target,
                None,
                "not measured in this run (needs the real node: tests/e2e/test_roll_pace.py)",
            )
        )
    for near, limit in ((2058, 0.25), (10058, 0.5)):
        found = _push(results, near)
        if found is None or "push_targeted" not in found[1]:
            out.append(Verdict(f"Push-to-first-deletion p95 under {limit} s", None, "not measured"))
            continue
        _, pushes = found
        t = pushes["push_targeted"]
        p95 = percentile(t["latency_s"], 95)
        full = pushes.get("push_full")
        against = (
            "; the full-pass design on the same objects:"
            f" p95 {percentile(full['latency_s'], 95):.2f} s"
            if full
            else ""
        )
        out.append(
            Verdict(
                f"Push-to-first-deletion p95 under {limit} s ({t['enrolled']:,} enrolled,"
                " signed package webhook)",
                p95 < limit,
                f"p95 {p95:.3f} s over {t['pushes']} pushes{against}"
                + ("" if p95 < limit else f": {p95 - limit:.2f} s over"),
            )
        )
    big = _cell(results, 10000)
    if big is None:
        out += [
            Verdict("Full pass at 10,000 Deployments under 7 s wall", None, "not measured"),
            Verdict("Controller peak RSS ≤ 150 MB at 10,000", None, "not measured"),
            Verdict("Idle poll at 10,000: 0 list requests with the cache warm", None, "-"),
        ]
    else:
        cached = big["results"]["cached"]
        listed = steady(big["results"]["autoroll"]["passes"])
        wall = steady(cached["passes"])["wall_s"]
        out.append(
            Verdict(
                "Full pass at 10,000 Deployments under 7 s wall",
                wall < 7.0,
                f"{wall:.2f} s on the warm cache (the poll's pass); {listed['wall_s']:.2f} s"
                f" listed from the API (`WATCH_CACHE=false`), {big['images']} images"
                + ("" if wall < 7.0 else f": {wall / 7.0:.1f}x the target"),
            )
        )
        serve = (_push(results, 10058) or (0, {}))[1].get("push_targeted", {})
        rss_kib = serve.get("peak_rss_kib") or cached["peak_rss_kib"]
        added, per_object = cache_cost(cached)
        by_process = serve.get("rss_kib_by_process") or {}
        over = "" if rss_kib * 1024 <= 150 * MB else f": {rss_kib * 1024 / MB - 150:.0f} MB over"
        processes = (
            " ("
            + ", ".join(f"{k} {v * 1024 / MB:.0f}" for k, v in sorted(by_process.items()))
            + " MB: the largest process counts; shared pages count in each)"
            if by_process
            else ""
        )
        out.append(
            Verdict(
                "Controller peak RSS ≤ 150 MB at 10,000 (say what the cache costs)",
                rss_kib * 1024 <= 150 * MB,
                f"{rss_kib * 1024 / MB:.0f} MB (`autoroll serve`, through pushes, load and a"
                f" watch burst){processes}; the synced cache adds {added:.0f} MB for"
                f" {cached['cache']['workloads']:,} workloads + {cached['cache']['pods']:,} pods,"
                f" {per_object:.0f} B per object" + over,
            )
        )
        idle = max(lists(p["kube"]) for p in cached["passes"])
        watches = max(total(p["kube"]) - lists(p["kube"]) for p in cached["passes"])
        naive_result = big["results"].get("naive")
        naive_lists = (
            f"{lists(steady(naive_result['passes'])['kube']):,}"
            if naive_result
            else f"{big['deployments'] + 1:,} (by construction; not run at this size)"
        )
        out.append(
            Verdict(
                "Idle poll at 10,000: 0 list requests with the cache warm",
                idle == 0,
                f"{idle} list requests per poll (besides up to {watches} watches opened again"
                " when the server ended them); the listed"
                f" design: {lists(listed['kube'])} lists, the naive loop"
                f" {naive_lists}; registry HEADs"
                f" {steady(cached['passes'])['registry'].get('HEAD', 0)} (one per tag) in each",
            )
        )
    load = results.get("load")
    if load and "burst" in load:
        during = load["bad"]["latencies_ms"] + load["good"]["latencies_ms"]
        burst = load["burst"]["latencies_ms"]
        worst = max(percentile(during, 95), percentile(burst, 95))
        out.append(
            Verdict(
                f"Webhook answer p95 under 20 ms during passes and watch bursts"
                f" ({load['enrolled']:,} enrolled, cache on)",
                worst < 20.0,
                f"p95 {percentile(during, 95):.1f} ms during full passes ({len(during)} requests),"
                f" {percentile(burst, 95):.1f} ms during a burst of"
                f" {load['burst']['patched']:,} pod patches ({len(burst)} requests)"
                + ("" if worst < 20.0 else f": {worst - 20:.1f} ms over"),
            )
        )
    rules = [v for v in violations if "cached" in v]
    out.append(
        Verdict(
            "Request-count rules of the cache (CI quick mode): targeted pass 1 HEAD, 1 pod read"
            " per affected workload before acting; warm-cache poll 0 requests",
            not rules,
            "exact at every size" if not rules else "; ".join(rules[:3]),
        )
    )
    return out


def cache_table(cells: Sequence[Mapping[str, Any]]) -> str:
    """Per size: the cache's sync, its memory, a warm poll and a targeted pass."""
    rows = []
    for c in cells:
        cached = c["results"].get("cached")
        if not cached:
            continue
        sync = cached["cache"]
        warm = steady(cached["passes"])
        listed = steady(c["results"]["autoroll"]["passes"])
        added, per_object = cache_cost(cached)
        t = cached.get("targeted", {})
        targeted = (
            f"{t['wall_s']:.3f}, {t['registry'].get('HEAD', 0)},"
            f" {t['kube'].get('list pods', 0)}, {math.ceil(c['deployments'] / c['images'])}"
            if t
            else "-"
        )
        rows.append(
            [
                f"{c['deployments']:,}",
                c["images"],
                f"{sync['sync_s']:.2f} ({total(sync['kube'])})",
                f"{sync['workloads'] + sync['pods']:,}",
                f"{added:.1f} ({per_object:.0f})",
                f"{warm['wall_s']:.2f} / {warm['cpu_s']:.2f}",
                total(warm["kube"]),
                f"{listed['wall_s']:.2f}",
                targeted,
                f"{cached['peak_rss_kib'] * 1024 / MB:.0f}",
            ]
        )
    return table(*CACHE_COLUMNS, rows)


CACHE_COLUMNS = (
    "Deployments | images | cache sync s (requests) | objects cached"
    " | RSS added MB (B/object) | warm full pass wall s / CPU s | its K8s requests"
    " | listed pass wall s | targeted pass: wall s, HEADs, pod reads, affected | peak RSS MB",
    "rrlrllrrlr",
)


def push_table(results: Mapping[str, Any]) -> str:
    """Push to first deletion per enrolled size and design, and the small control."""
    rows = []
    entries: list[tuple[str, Mapping[str, Any]]] = []
    if results.get("push_small"):
        entries.append(("targeted, own namespace", results["push_small"]))
    for _, pushes in sorted(results.get("push", {}).items(), key=lambda kv: int(kv[0])):
        for key, design in (
            ("push_targeted", "targeted (package event, watched cache)"),
            ("push_full", "full pass per webhook (`WATCH_CACHE=false`)"),
        ):
            if key in pushes:
                entries.append((design, pushes[key]))
    for design, p in entries:
        rss = f"{p['peak_rss_kib'] * 1024 / MB:.0f}" if p.get("peak_rss_kib") else "-"
        rows.append(
            [
                f"{p['enrolled']:,}",
                design,
                p["pushes"],
                *push_cells(p),
                rss,
            ]
        )
    return table(*PUSH_COLUMNS, rows)


PUSH_COLUMNS = (
    "enrolled Deployments | design | pushes | p50 s | p95 s | max s | webhook answer p95 ms"
    " | mean pass s | serve peak RSS MB",
    "rlrrrrrrr",
)


def burst_row(load: Mapping[str, Any]) -> str:
    """The watch burst's line for the load table."""
    b = load.get("burst")
    if not b:
        return ""
    return row(
        webhook_cells(f"bad signature during a watch burst ({b['patched']:,} pod patches)", b, "-")
    )


def pace_section(pace: Mapping[str, Any] | None) -> str:
    if not pace:
        return (
            "Not measured in this run: it needs the real node (kubelet + containerd) and the"
            " controller as the chart's pod; `tests/e2e/test_roll_pace.py` measures it and"
            " writes `bench/roll_pace.json`, which this page then shows.\n"
        )
    return (
        f"Measured on the real node ({pace['date']}, load {pace['load']}): the chart's"
        f" controller pod with the default `POLL_INTERVAL_SECONDS` ({pace['poll_s']} s), a"
        " settled 3-replica Deployment, one push and its signed webhook. Push to roll"
        f" complete: **{pace['roll_s']:.1f} s**; each replacement's pull + readiness"
        f" (pod created → Ready): {', '.join(f'{s:.1f}' for s in pace['replacements_s'])} s;"
        f" deletions at {', '.join(f'{s:.1f}' for s in pace['deletions_s'])} s after the"
        f" push; poll (full) passes during the roll: {pace['full_passes']}, targeted passes:"
        f" {pace['targeted_passes']}.\n"
    )


__all__ = [
    "Verdict",
    "burst_row",
    "cache_cost",
    "cache_table",
    "memory_section",
    "pace_section",
    "verdicts",
]
