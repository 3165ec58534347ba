"""The targets table of ``docs/performance.md``: one verdict per target of issues 8, 17 and 28.

Pure: results in, a ``Target`` (name, met, what was measured) per row out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from bench import cache_report, scale_fit
from bench.count_checks import count_violations
from bench.tables import MB, lists, percentile, steady, table


@dataclass(frozen=True)
class Target:
    name: str
    met: bool | None  # None: not measured in this run
    detail: str


def targets(results: Mapping[str, Any]) -> list[Target]:
    cells = results.get("scale", [])
    out: list[Target] = []
    violations = count_violations({"scale": cells})
    head = [v for v in violations if "registry" in v]
    out.append(
        Target(
            "Registry HEADs per pass = unique repository:tags; GETs only in the cold pass,"
            " also when a pass outlasts its registry budget (a loaded CPU)",
            not head,
            "exact in every pass of every size" if not head else "; ".join(head[:3]),
        )
    )
    kube = [v for v in violations if "Kubernetes" in v]
    worst = max(
        (
            (lists(p["kube"]), len(p.get("kinds", ["deployment"])) + c["namespaces"])
            for c in cells
            for p in c["results"]["autoroll"]["passes"]
        ),
        default=(0, 0),
    )
    out.append(
        Target(
            "Kubernetes list requests per pass ≤ one per enabled kind + namespaces with enrolled"
            " workloads",
            not kube,
            f"{worst[0]} lists against a limit of {worst[1]} at the largest size"
            if not kube
            else "; ".join(kube[:3]),
        )
    )
    # Issue 8's rows are about 2,000 Deployments (the largest size below 10,000).
    base = [x["deployments"] for x in cells if x["deployments"] <= 2000] or [0]
    largest = [c for c in cells if c["deployments"] == max(base)]
    if largest:
        walls = [steady(c["results"]["autoroll"]["passes"])["wall_s"] for c in largest]
        wall = max(walls)
        out.append(
            Target(
                f"A {largest[0]['deployments']:,}-Deployment pass under 2 s wall",
                wall < 2.0,
                f"{wall:.2f} s (steady state, worst image count)"
                + ("" if wall < 2.0 else f": {wall / 2.0:.1f}x the target"),
            )
        )
        rss = max(c["results"]["autoroll"]["peak_rss_kib"] * 1024 for c in largest)
        out.append(
            Target(
                "Peak RSS under 100 MB at that size",
                rss < 100 * MB,
                f"{rss / MB:.0f} MB"
                + ("" if rss < 100 * MB else f": {rss / MB - 100:.0f} MB over"),
            )
        )
    load = results.get("load")
    if load:
        p95 = percentile(load["bad"]["latencies_ms"] + load["good"]["latencies_ms"], 95)
        out.append(
            Target(
                "Webhook p95 under 20 ms with a pass in flight",
                p95 < 20.0,
                f"p95 {p95:.1f} ms over {len(load['bad']['latencies_ms']) * 2} requests"
                + ("" if p95 < 20.0 else f": {p95 - 20:.1f} ms over"),
            )
        )
        out.append(
            Target(
                "Bad signatures cause zero passes",
                load["bad"]["ticks_caused"] == 0,
                f"{load['bad']['ticks_caused']} passes from"
                f" {len(load['bad']['latencies_ms'])} bad-signature requests",
            )
        )
    for key, label in (("push_small", "small"), ("push_large", "large")):
        push = results.get(key)  # push_large: results from before issue 17
        if push:
            p95 = percentile(push["latency_s"], 95)
            out.append(
                Target(
                    f"Push-to-first-deletion p95 under 1 s ({push['enrolled']:,} enrolled)",
                    p95 < 1.0,
                    f"p95 {p95:.2f} s over {push['pushes']} pushes"
                    + ("" if p95 < 1.0 else f": {p95 - 1:.2f} s over ({label} enrolled set)"),
                )
            )
    out += [
        Target(v.name, v.met, v.detail)
        for v in cache_report.verdicts(results, count_violations(results))
    ]
    if any("cached" in c["results"] for c in cells):
        out.append(Target(*scale_fit.verdict(results)))
    jobs = results.get("jobhash")
    if jobs and jobs.get("rows"):
        top = max(jobs["rows"], key=lambda r: r["jobs"])
        speedup = top["helm_s"] / top["jobhash_s"]
        out.append(
            Target(
                f"jobhash names ≥ 10x faster than helm template at {top['jobs']} jobs",
                speedup >= 10,
                f"{speedup:.1f}x",
            )
        )
    else:
        out.append(
            Target(
                "jobhash names ≥ 10x faster than helm template at 500 jobs",
                None,
                jobs.get("pending", "not measured") if jobs else "not measured",
            )
        )
    return out


def targets_table(found: Sequence[Target]) -> str:
    mark = {True: "met", False: "**missed**", None: "pending"}
    return table(
        "target | status | measured", "lll", ([t.name, mark[t.met], t.detail] for t in found)
    )
