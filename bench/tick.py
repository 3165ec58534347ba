"""Run reconcile passes in a process of their own and print what each cost, as JSON.

``python -m bench.tick --strategy autoroll|cached|naive|floor ...`` is started by
``bench.run`` once per strategy and cluster size, so peak RSS (``ru_maxrss``) belongs to one
strategy alone and includes nothing of the benchmark driver. ``rss_setup_kib`` is the RSS
after imports and client construction, before the first pass; the difference is what
passes added.

``stalled`` is autoroll (listed) with a short registry budget (``--registry-budget``) and
each pass held still for ``--stall-after-resolve`` seconds once the registry has answered its
HEADs, before it decides: the shape of a pass that decides thousands of workloads on a loaded
CPU (simulated: a sleep, so the same in CI on every machine). Each target's image configs
must still be fetched in the cold pass and never again (issue 28: with the pass's own time
counted against the registry budget they were not, and slid into the steady passes).

``cached`` is autoroll with its watched cache (``WATCH_CACHE``, the default): the cache is
started and synced first (its list and watch requests, time and memory are reported apart:
``cache``), then the passes read it. With ``--targeted REPOSITORY`` one more step follows: a
new image is pushed under ``REPOSITORY:latest`` (as a push would), one pass targeted at that
tag runs and is counted alone (``targeted``), and the old manifest is put back under the tag.

Per pass: wall time, process CPU time, Kubernetes API requests by ``<verb> <resource>``
(counted in the client's REST layer), registry requests by HTTP method (counted in the
session's transport) and the verdicts reached (so both strategies can be checked to agree).
autoroll runs with its production logging (``LOG_LEVEL=info``, one line per decision)
formatted and written to ``/dev/null``; the naive baseline logs nothing. Each strategy's pass
is built in ``bench.strategies``; this module runs and counts it.
"""

from __future__ import annotations

import argparse
import base64
import cProfile
import gc
import io
import os
import pstats
import resource
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, cast

from autoroll.core.decide import Decision
from autoroll.core.scope import FULL, ImageTag, Scope
from autoroll.instruments import logs
from autoroll.kube.cache import WatchCache
from bench.child import print_result
from bench.strategies import KINDS, Pass, build
from tests.support.registry import OCI_MANIFEST, ImagePusher, RegistryServer

#: How long the watched cache may take to list everything at the largest size.
SYNC_SECONDS = 600.0


class LockedCounter(Counter[str]):
    """A ``Counter`` the cache's informer threads and the pass may add to at once."""

    _lock = threading.Lock()

    def __setitem__(self, key: str, value: int) -> None:
        with self._lock:
            super().__setitem__(key, value)


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


def sync_cache(cache: WatchCache, kube: Counter[str]) -> dict[str, Any]:
    """Start the cache and wait until it holds everything: its requests, time and memory."""
    gc.collect()
    before = rss_kib()
    kube.clear()
    started = time.perf_counter()
    cache.start()
    if not cache.wait_synced(SYNC_SECONDS):
        raise SystemExit(f"bench.tick: the watched cache did not sync in {SYNC_SECONDS:.0f}s")
    seconds = time.perf_counter() - started
    gc.collect()
    workloads, pods = cache.counts()
    synced = rss_kib()
    requests_sent = dict(sorted(kube.items()))
    kube.clear()
    return {
        "sync_s": seconds,
        "kube": requests_sent,
        "workloads": workloads,
        "pods": pods,
        "rss_before_kib": before,
        "rss_synced_kib": synced,
    }


@dataclass(frozen=True)
class _Registry:
    """What ``ImagePusher`` needs of a registry: its URL and Basic credentials (plain HTTP:
    no private CA to trust)."""

    url: str
    authorization: str
    tls: None = None


def targeted_pass(
    args: argparse.Namespace,
    run: Callable[[Scope], Pass],
    kube: Counter[str],
    registry: Counter[str],
) -> dict[str, Any]:
    """Push a new image under ``--targeted``:latest, run one pass targeted at that tag and
    count it alone, then put the old manifest back (later strategies see what was there)."""
    repository = args.targeted
    token = base64.b64encode(f"{args.user}:{args.token}".encode()).decode()
    remote = _Registry(args.registry_url, f"Basic {token}")
    pusher = ImagePusher(cast(RegistryServer, remote))
    pusher.session.trust_env = False
    old = pusher.session.get(
        f"{remote.url}/v2/{repository}/manifests/latest",
        headers={"Accept": OCI_MANIFEST},
        timeout=10,
    )
    old.raise_for_status()
    pusher.push_image(repository, "latest")
    kube.clear()
    registry.clear()
    wall, cpu = time.perf_counter(), time.process_time()
    done = run(Scope.of([ImageTag.named(args.host, repository, "latest")]))
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    counted = {
        "wall_s": wall,
        "cpu_s": cpu,
        "kube": dict(sorted(kube.items())),
        "registry": dict(sorted(registry.items())),
        "deployments": len(done.decisions),
        "actions": sum(len(d.actions) for d in done.decisions),
        "fresh_reads": done.fresh_reads,
        "verdicts": verdicts(done.decisions),
    }
    restored = pusher.session.put(
        f"{remote.url}/v2/{repository}/manifests/latest",
        data=old.content,
        headers={"Content-Type": old.headers["Content-Type"]},
        timeout=10,
    )
    if restored.status_code != 201:
        raise SystemExit(f"bench.tick: could not put {repository}:latest back ({restored.text})")
    return counted


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
    parser.add_argument(
        "--strategy", choices=("autoroll", "stalled", "cached", "naive", "floor"), required=True
    )
    parser.add_argument("--kubeconfig", required=True)
    parser.add_argument("--registry-url", required=True)
    parser.add_argument("--host", required=True, help="FORGEJO_HOST (registry host:port)")
    parser.add_argument("--user", required=True)
    parser.add_argument("--token", required=True)
    parser.add_argument("--selector", required=True, help="label selector of enrolled Deployments")
    parser.add_argument("--ticks", type=int, default=3)
    parser.add_argument(
        "--targeted", help="cached only: push to REPOSITORY:latest, then one targeted pass"
    )
    parser.add_argument(
        "--registry-budget", type=float, help="the registry budget per pass (default: autoroll's)"
    )
    parser.add_argument(
        "--stall-after-resolve",
        type=float,
        default=0.0,
        help="stalled only: seconds each pass is held after the registry answered",
    )
    parser.add_argument(
        "--profile", action="store_true", help="profile the last pass; add its top functions"
    )
    args = parser.parse_args(argv)

    devnull = open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115 - lives as long as main
    logs.configure(level="info", log_format="text", stream=devnull)
    kube: Counter[str] = LockedCounter()
    registry: Counter[str] = Counter()
    run, cache = build(args, kube, registry)
    rss_setup = rss_kib()
    extra: dict[str, Any] = {}
    if cache is not None:
        extra["cache"] = sync_cache(cache, kube)
    passes = []
    profile_text = ""
    for n in range(args.ticks):
        kube.clear()
        registry.clear()
        profiler = cProfile.Profile() if args.profile and n == args.ticks - 1 else None
        wall, cpu = time.perf_counter(), time.process_time()
        done = profiler.runcall(run, FULL) if profiler else run(FULL)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        decisions = done.decisions
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
                "fresh_reads": done.fresh_reads,
            }
        )
        # The reconcile thread keeps nothing of a pass once it returns: neither does this,
        # or each pass would run beside the last one's report and the peak count both.
        del done, decisions
    if cache is not None and args.targeted:
        extra["targeted"] = targeted_pass(args, run, kube, registry)
    if cache is not None:
        cache.stop()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    return print_result(
        {
            "passes": passes,
            "rss_setup_kib": rss_setup,
            "peak_rss_kib": peak,
            **extra,
            **({"profile": profile_text} if args.profile else {}),
        }
    )


if __name__ == "__main__":
    raise SystemExit(main())
