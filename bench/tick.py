"""Run reconcile passes in a process of their own and print what each cost, as JSON.

``python -m bench.tick --strategy autoroll|naive ...`` is started by ``bench.run`` once per
strategy and cluster size, so peak RSS (``ru_maxrss``) belongs to one strategy alone and
includes nothing of the benchmark driver. ``rss_setup_kib`` is the RSS after imports and
client construction, before the first pass; the difference is what passes added.

Per pass: wall time, process CPU time, Kubernetes API requests by ``<verb> <resource>``
(counted in the client's REST layer), registry requests by HTTP method (counted in the
session's transport) and the verdicts reached (so both strategies can be checked to agree).
autoroll runs with its production logging (``LOG_LEVEL=info``, one line per decision)
formatted and written to ``/dev/null``; the naive baseline logs nothing.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import resource
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

from prometheus_client import CollectorRegistry

from autoroll import logs
from autoroll.decide import Decision
from autoroll.kube import KubeCluster, KubeRest, connect
from autoroll.kube.convert import (
    LabelSelector,
    list_items,
    pod_list_selector,
    workload_from_json,
)
from autoroll.kube.transport import LIVE_PODS_FIELD_SELECTOR, REQUEST_TIMEOUT
from autoroll.metrics import Metrics
from autoroll.model import WorkloadKind
from autoroll.reconciler import Reconciler
from autoroll.registry import RegistryClient
from bench.counting import count_kubernetes, counting_session
from bench.naive import NaiveController


def rss_kib() -> int:
    """Current resident set size (VmRSS) in KiB."""
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError("no VmRSS in /proc/self/status")


def verdicts(decisions: Sequence[Decision]) -> dict[str, int]:
    counted: Counter[str] = Counter()
    for decision in decisions:
        for verdict in decision.containers:
            counted[f"{verdict.verdict.value}/{verdict.reason.value}"] += 1
        counted["actions"] += len(decision.actions)
    return dict(sorted(counted.items()))


#: The kinds autoroll (and the floor) list each pass: every kind, the default WORKLOAD_KINDS.
KINDS = tuple(WorkloadKind)


def build(
    args: argparse.Namespace, kube: Counter[str], registry: Counter[str]
) -> Callable[[], Any]:
    """The strategy's pass as a zero-argument callable returning its decisions."""
    env = {"KUBECONFIG": args.kubeconfig}
    client = RegistryClient(
        session=counting_session(registry),
        base_url=args.registry_url,
        user=args.user,
        token=args.token,
    )
    if args.strategy == "floor":
        return lists_only(count_kubernetes(connect(env), kube), args.selector)
    if args.strategy == "naive":
        naive = NaiveController(
            api_client=count_kubernetes(connect(env), kube),
            registry=client,
            forgejo_host=args.host,
            label_selector=args.selector,
        )
        return naive.tick
    cluster = KubeCluster(
        label_selector=args.selector,
        api_client_factory=lambda: count_kubernetes(connect(env), kube),
        kinds=KINDS,
    )
    reconciler = Reconciler(
        cluster=cluster,
        registry=client,
        metrics=Metrics(CollectorRegistry()),
        forgejo_host=args.host,
        dry_run=True,
    )
    return lambda: reconciler.tick().decisions


def lists_only(api_client: Any, selector: str) -> Callable[[], Any]:
    """The floor: autoroll's own kinds + namespaces lists (narrowed the same way), read as
    JSON, nothing converted, asked of the registry or decided.

    Not a strategy anyone runs: it shows how much of a pass is transport and JSON parsing,
    and so how much conversion, registry lookups and decisions add on top.
    """
    rest = KubeRest(api_client)

    def run() -> list[Decision]:
        selectors: dict[str, list[LabelSelector]] = {}
        for kind in KINDS:
            listed = rest.list_workloads(kind, label_selector=selector, timeout=REQUEST_TIMEOUT)
            for item in list_items(listed):
                view, pod_selector = workload_from_json(kind, item)
                selectors.setdefault(view.namespace, []).append(pod_selector)
        for namespace in sorted(selectors):
            narrowing = pod_list_selector(selectors[namespace])
            page = rest.list_pods(
                namespace,
                field_selector=LIVE_PODS_FIELD_SELECTOR,
                label_selector=narrowing,
                timeout=REQUEST_TIMEOUT,
            )
            list_items(page)
        return []

    return run


def top_functions(profiler: cProfile.Profile, limit: int = 12) -> str:
    """The functions with the most cumulative time, as pstats prints them."""
    out = io.StringIO()
    stats = pstats.Stats(profiler, stream=out)
    stats.sort_stats("cumulative").print_stats(limit)
    lines = out.getvalue().splitlines()
    start = next((i for i, line in enumerate(lines) if "ncalls" in line), 0)
    return "\n".join(line.rstrip() for line in lines[start:] if line.strip())


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.tick")
    parser.add_argument("--strategy", choices=("autoroll", "naive", "floor"), required=True)
    parser.add_argument("--kubeconfig", required=True)
    parser.add_argument("--registry-url", required=True)
    parser.add_argument("--host", required=True, help="FORGEJO_HOST (registry host:port)")
    parser.add_argument("--user", required=True)
    parser.add_argument("--token", required=True)
    parser.add_argument("--selector", required=True, help="label selector of enrolled Deployments")
    parser.add_argument("--ticks", type=int, default=3)
    parser.add_argument(
        "--profile", action="store_true", help="profile the last pass; add its top functions"
    )
    args = parser.parse_args(argv)

    devnull = open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115 - lives as long as main
    logs.configure(level="info", log_format="text", stream=devnull)
    kube: Counter[str] = Counter()
    registry: Counter[str] = Counter()
    run = build(args, kube, registry)
    rss_setup = rss_kib()
    passes = []
    profile_text = ""
    for n in range(args.ticks):
        kube.clear()
        registry.clear()
        profiler = cProfile.Profile() if args.profile and n == args.ticks - 1 else None
        wall, cpu = time.perf_counter(), time.process_time()
        decisions = profiler.runcall(run) if profiler else run()
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        if profiler is not None:
            profile_text = top_functions(profiler)
        passes.append(
            {
                "wall_s": wall,
                "cpu_s": cpu,
                "kube": dict(sorted(kube.items())),
                "registry": dict(sorted(registry.items())),
                "deployments": len(decisions),
                "verdicts": verdicts(decisions),
                # the workload kinds this strategy lists (the naive baseline: Deployments)
                "kinds": [k.value for k in KINDS] if args.strategy != "naive" else ["deployment"],
            }
        )
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    json.dump(
        {
            "passes": passes,
            "rss_setup_kib": rss_setup,
            "peak_rss_kib": peak,
            **({"profile": profile_text} if args.profile else {}),
        },
        sys.stdout,
    )
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
