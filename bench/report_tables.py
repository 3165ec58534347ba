"""The measured tables of ``docs/performance.md``: scale, per-strategy detail, push,
webhook load and jobhash, each a function of the results dictionary. Pure; ``report`` puts
them between its prose, and ``tables`` writes every row the same way.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from typing import Any

from bench import cache_report
from bench.tables import (
    MB,
    counted,
    latency_cells,
    push_cells,
    steady,
    table,
    total,
    webhook_cells,
)


def ratio(naive: float, autoroll: float) -> str:
    if autoroll == 0:
        return "-"
    return f"{naive / autoroll:.1f}x"


def _mib(kib: int) -> str:
    return f"{kib * 1024 / MB:.0f}"


SCALE_COLUMNS = (
    "Deployments | images (unique refs) | live pods | wall s: autoroll / naive"
    " | CPU s: autoroll / naive | K8s requests: autoroll / naive"
    " | registry requests: autoroll / naive | peak RSS MB: autoroll / naive"
    " | floor: same lists as JSON, wall s / CPU s / RSS MB",
    "rrrllllll",
)


def scale_table(cells: Sequence[Mapping[str, Any]]) -> str:
    return table(*SCALE_COLUMNS, (_scale_row(c) for c in cells))


def _scale_row(c: Mapping[str, Any]) -> list[str]:
    a, n = c["results"]["autoroll"], c["results"].get("naive")
    sa = steady(a["passes"])
    size = [f"{c['deployments']:,}", f"{c['images']} ({c['unique_refs']})", f"{c['pods']:,}"]
    floor = _floor(c["results"].get("floor"))
    if n is None:  # the naive loop did not finish at this size (said in the text)
        return [
            *size,
            f"{sa['wall_s']:.2f} / not measured",
            f"{sa['cpu_s']:.2f} / -",
            f"{total(sa['kube'])} / {c['deployments'] + 1} (by construction)",
            f"{total(sa['registry'])} / {c['deployments']} (by construction)",
            f"{_mib(a['peak_rss_kib'])} / -",
            floor,
        ]
    sn = steady(n["passes"])
    return [
        *size,
        f"{sa['wall_s']:.2f} / {sn['wall_s']:.2f} ({ratio(sn['wall_s'], sa['wall_s'])})",
        f"{sa['cpu_s']:.2f} / {sn['cpu_s']:.2f} ({ratio(sn['cpu_s'], sa['cpu_s'])})",
        f"{total(sa['kube'])} / {total(sn['kube'])}"
        f" ({ratio(total(sn['kube']), total(sa['kube']))})",
        f"{total(sa['registry'])} / {total(sn['registry'])}"
        f" ({ratio(total(sn['registry']), total(sa['registry']))})",
        f"{_mib(a['peak_rss_kib'])} / {_mib(n['peak_rss_kib'])}",
        floor,
    ]


def _floor(result: Mapping[str, Any] | None) -> str:
    if not result:
        return "-"
    s = steady(result["passes"])
    return f"{s['wall_s']:.2f} / {s['cpu_s']:.2f} / {_mib(result['peak_rss_kib'])}"


DETAIL_COLUMNS = (
    "Deployments | images | strategy | cold pass wall s | steady wall s"
    " | K8s requests by verb (steady) | registry by method (steady)"
    " | RSS MB after setup → peak | verdicts",
    "rrlrrllll",
)


def detail_table(cells: Sequence[Mapping[str, Any]]) -> str:
    rows = []
    for c in cells:
        for name in ("autoroll", "naive", "floor"):
            if name not in c["results"]:
                continue
            r = c["results"][name]
            s = steady(r["passes"])
            rows.append(
                [
                    f"{c['deployments']:,}",
                    c["images"],
                    name,
                    f"{r['passes'][0]['wall_s']:.2f}",
                    f"{s['wall_s']:.2f}",
                    counted(s["kube"]),
                    counted(s["registry"]),
                    f"{_mib(r['rss_setup_kib'])} → {_mib(r['peak_rss_kib'])}",
                    counted(s["verdicts"], nonzero=True),
                ]
            )
    return table(*DETAIL_COLUMNS, rows)


PUSH_COLUMNS = (
    "enrolled Deployments | pushes | p50 s | p95 s | max s | webhook answer p95 ms | mean pass s",
    "rrrrrrr",
)


def push_table(results: Mapping[str, Any]) -> str:
    pushes = [results[key] for key in ("push_small", "push_large") if results.get(key)]
    return table(
        *PUSH_COLUMNS, ([f"{p['enrolled']:,}", p["pushes"], *push_cells(p)] for p in pushes)
    )


def gitea_delivery_section(run: Mapping[str, Any]) -> str:
    """Push to first deletion through a real Gitea's delivery, measured by the e2e tier
    (not by ``bench.run``: it needs the real node and Gitea); copied in with its source."""
    samples = run["latency_s"]
    return (
        "\n### Through Gitea's real delivery, on the real node\n\n"
        f"Measured by `{run['source']}` ({run['date']}, load average {run['load']}), not by"
        " `bench.run`: it needs the e2e tier's real node and the Gitea tier's server. A"
        " skopeo push to Gitea 1.27's registry, Gitea's own signed package delivery (a"
        " user-level hook, JSON) to the controller installed by `helm install` as a pod on"
        " the node (kubelet + containerd), which deletes the first stale pod of a 2-replica"
        " app whose containers containerd pulled from Gitea. The clock starts when"
        " `skopeo copy` returns and stops when a pod watch sees the pod terminating; every"
        " push follows a finished pass and the poll is 10 s, so only the delivery can have"
        " started the deleting pass (asserted).\n\n"
        + table(
            "pushes | median s | max s | deleting pass s | Gitea had the 202 at (after push) s",
            "rrrrr",
            [
                [
                    len(samples),
                    f"{statistics.median(samples):.2f}",
                    f"{max(samples):.2f}",
                    f"{min(run['pass_s']):.2f}-{max(run['pass_s']):.2f}",
                    f"{min(run['delivered_after_s']):+.2f} to {max(run['delivered_after_s']):+.2f}",
                ]
            ],
        )
        + f"\n{run['dominated']}\n"
    )


LOAD_COLUMNS = (
    "requests | answers | p50 ms | p95 ms | max ms | window s | passes caused | mean pass s",
    "llrrrrrr",
)


def load_table(load: Mapping[str, Any]) -> str:
    rows: list[Sequence[object] | str] = []
    for kind in ("idle", "bad", "good"):
        if kind not in load:
            continue
        r = load[kind]
        what = "bad signature, controller idle (control)" if kind == "idle" else f"{kind} signature"
        rows.append(webhook_cells(what, r, f"{r['tick_s']:.2f}"))
    if load.get("burst"):
        rows.append(cache_report.burst_row(load))
    both = load["bad"]["latencies_ms"] + load["good"]["latencies_ms"]
    rows.append([f"all {len(both)} during a pass", None, *latency_cells(both), None, None, None])
    return table(*LOAD_COLUMNS, rows)


JOBHASH_COLUMNS = (
    "jobs | helm template s | jobhash names s | of which interpreter start + imports s"
    " | speed-up | same names",
    "rrrrrl",
)


def jobhash_table(jobs: Mapping[str, Any]) -> str:
    rows = (
        [
            r["jobs"],
            f"{r['helm_s']:.3f}",
            f"{r['jobhash_s']:.3f}",
            f"{r.get('startup_s', 0.0):.3f}",
            f"{r['helm_s'] / r['jobhash_s']:.1f}x",
            "yes" if r.get("same_names") else "**no**",
        ]
        for r in jobs["rows"]
    )
    return table(*JOBHASH_COLUMNS, rows)
