"""``python -m bench.run [--quick|--smaller|--largest]``: the benchmarks of issues 8 and 17.

Starts a real docker-registry and, per image count, a fresh etcd + kube-apiserver on
127.0.0.1; populates them (see ``bench.populate``); measures one pass of autoroll (listed and
on its watched cache), of the naive baseline and of the floor at each size (``bench.scale``),
push-to-first-deletion per design and the webhook under load against a real ``autoroll
serve`` (``bench.webhook``), and ``jobhash names`` against ``helm template``
(``bench.jobhash``). The full run writes ``docs/performance.md`` and ``bench/results.json``;
``--quick`` uses small sizes (the CI test runs it) and writes only where ``--out``/``--json``
say; ``--smaller`` and ``--largest`` split the full run in two for ``bench.merge``.

Needs on PATH (``source .tools/env``): etcd, kube-apiserver, docker-registry, htpasswd, and
helm for the jobhash comparison.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from bench import cache_memory, load
from bench.child import controller_deps
from bench.controlplane import running_apiserver
from bench.jobhash import measure_jobhash
from bench.populate import ApiWriter, Layout, create_background, create_namespaces
from bench.report import count_violations, render
from bench.scale import REPO_ROOT, Cell, Stage, measure_scale
from bench.serve_runs import measure_giant, measure_webhooks
from bench.sizes import FULL, LARGEST, QUICK, SMALLER, Sizes
from tests.support.registry import ImagePusher, RegistryServer, running_registry


def require(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        raise SystemExit(
            f"bench: {name} is not on PATH; run `scripts/tools.sh all` and"
            " `source .tools/env` first"
        )
    return path


def push_images(registry: RegistryServer, count: int) -> dict[str, str]:
    """``bench/img-<k>:latest`` for k < count; returns repository → digest."""
    pusher = ImagePusher(registry)
    pusher.session.trust_env = False
    return {
        f"bench/img-{k:03d}": pusher.push_image(f"bench/img-{k:03d}", "latest").digest
        for k in range(count)
    }


def run(
    sizes: Sizes,
    *,
    say: Callable[[str], None],
    checkpoint: Callable[[dict[str, Any]], None] = lambda partial: None,
) -> dict[str, Any]:
    """Run every measurement; return the results as plain JSON-able data."""
    etcd, apiserver = require("etcd"), require("kube-apiserver")
    registry_binary = require("docker-registry")
    require("htpasswd")
    started = time.monotonic()
    cells: list[Cell] = []
    results: dict[str, Any] = {}
    with (
        tempfile.TemporaryDirectory(prefix="autoroll-bench-") as tmp,
        running_registry(registry_binary, Path(tmp) / "registry") as registry,
    ):
        digests = push_images(registry, max(sizes.images))
        say(f"registry {registry.host}: {len(digests)} images pushed")
        for images in sizes.images:
            with running_apiserver(etcd=etcd, kube_apiserver=apiserver) as api:
                say(f"API server {api.server} up in {api.start_seconds:.1f}s ({images} images)")
                writer = ApiWriter(api.server, api.token, str(api.ca_file))
                layout = Layout(sizes.namespaces, registry.host, images)
                t0 = time.monotonic()
                create_namespaces(writer, layout)
                create_background(writer, layout, sizes.background_pods)
                say(f"  {sizes.background_pods} background pods: {time.monotonic() - t0:.1f}s")
                largest = images == max(sizes.images)
                steps = sizes.deployments + (sizes.huge if largest else ())
                checkpoint({"scale": [c.as_json() for c in cells], **results})
                stage = Stage(api, registry, writer, layout, digests, say)
                cells += measure_scale(
                    stage,
                    sizes=steps,
                    background_pods=sizes.background_pods,
                    ticks=sizes.ticks,
                    large_ticks=sizes.huge_ticks,
                )
                # Push latency at the largest size of each cluster: 2,000 (+ the latency
                # targets) on the first, 10,000 on the last; the load there.
                checkpoint({"scale": [c.as_json() for c in cells], **results})
                measured = measure_webhooks(
                    stage,
                    sizes=sizes,
                    deployments=max(steps),
                    small=images == min(sizes.images) and sizes.pushes > 0,
                    load=largest,
                    workdir=Path(tmp),
                )
                results.setdefault("push", {})[str(max(steps))] = {
                    k: v for k, v in measured.items() if k.startswith("push_")
                }
                if "push_small" in measured:
                    results["push_small"] = measured["push_small"]
                if "load" in measured:
                    results["load"] = measured["load"]
                if largest and sizes.giant:
                    small = images == min(sizes.images) and sizes.pushes > 0
                    latency = 2 * sizes.pushes_large + (sizes.pushes if small else 0)
                    results["giant"] = measure_giant(
                        stage, sizes=sizes, created=max(steps), earlier=latency, workdir=Path(tmp)
                    )
    # What the cache retains per object: no cluster needed (bench.cache_memory).
    results["cache_memory"] = [asdict(cache_memory.measure(d, i)) for d, i in cache_memory.SIZES]
    say(
        "bytes per cached object: "
        + ", ".join(
            f"{m['deployments']}: {m['workload_bytes']:.0f} / {m['pod_bytes']:.0f}"
            for m in results["cache_memory"]
        )
    )
    results["scale"] = [c.as_json() for c in cells]
    results["sizes"] = asdict(sizes)
    results["elapsed_s"] = time.monotonic() - started
    return results


def _first_line(argv: list[str]) -> str:
    done = subprocess.run(argv, capture_output=True, text=True, timeout=30, check=False)
    return (done.stdout or done.stderr).strip().splitlines()[0] if done.returncode == 0 else "?"


def machine_info() -> dict[str, Any]:
    """What the numbers were measured on (Linux /proc; the machine may be shared)."""
    cpu = "?"
    with open("/proc/cpuinfo", encoding="utf-8") as info:
        for line in info:
            if line.startswith("model name"):
                cpu = line.partition(":")[2].strip()
                break
    ram_kib = 0
    with open("/proc/meminfo", encoding="utf-8") as info:
        for line in info:
            if line.startswith("MemTotal:"):
                ram_kib = int(line.split()[1])
    return {
        "nproc": os.cpu_count(),
        "cpu": cpu,
        "ram_gb": ram_kib * 1024 / 1e9,
        "python": platform.python_version(),
        "controller_deps": controller_deps(),
        "kube_apiserver": _first_line([require("kube-apiserver"), "--version"]),
        "registry": "docker-registry "
        + _first_line([require("docker-registry"), "--version"]).split()[-1],
        "load_before": _load(),
    }


def _load() -> str:
    return " / ".join(f"{x:.1f}" for x in os.getloadavg())


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.run", description=__doc__)
    parser.add_argument(
        "--quick", action="store_true", help="small sizes (about 3 minutes; what CI runs)"
    )
    parser.add_argument(
        "--largest", action="store_true", help="only the 10,000 size (writes where --json says)"
    )
    parser.add_argument(
        "--smaller", action="store_true", help="every size below 10,000, one image count"
    )
    parser.add_argument(
        "--giant",
        type=int,
        action="append",
        default=[],
        metavar="N",
        help="with --largest: grow on to N Deployments, cached strategy only (e.g. 50000)",
    )
    parser.add_argument(
        "--load-cpus",
        type=int,
        default=0,
        metavar="N",
        help="run beside `stress-ng --cpu N` (a bounded CPU load; its load average is recorded)",
    )
    parser.add_argument(
        "--load-seconds",
        type=int,
        default=3 * 3600,
        metavar="T",
        help="stress-ng's own time limit (it is stopped when the run ends)",
    )
    parser.add_argument("--out", type=Path, help="markdown report (full run: docs/performance.md)")
    parser.add_argument("--json", type=Path, help="raw results (full run: bench/results.json)")
    args = parser.parse_args(argv)
    # SIGTERM unwinds like Ctrl-C, so every server started here is stopped on the way out.
    signal.signal(signal.SIGTERM, _terminate)
    sizes = QUICK if args.quick else LARGEST if args.largest else SMALLER if args.smaller else FULL
    if args.giant:
        sizes = dataclasses.replace(sizes, giant=tuple(sorted(args.giant)))
    only = args.quick or args.largest or args.smaller
    out = args.out or (None if only else REPO_ROOT / "docs" / "performance.md")
    raw = args.json or (None if args.quick else REPO_ROOT / "bench" / "results.json")

    def say(line: str) -> None:
        print(f"[bench] {line}", file=sys.stderr, flush=True)

    machine = machine_info()

    def checkpoint(partial: dict[str, Any]) -> None:
        """What is measured so far, so a run stopped part-way leaves its numbers."""
        if raw is not None:
            text = json.dumps({**partial, "partial": True, "machine": machine}, sort_keys=True)
            raw.with_suffix(".partial.json").write_text(text + "\n")

    # The load average is sampled all along; with --load-cpus, stress-ng runs beside.
    with load.cpu_load(args.load_cpus, args.load_seconds) as loaded:
        if args.load_cpus > 0:
            say(f"CPU load beside the run: {loaded.command}")
        results = run(sizes, say=say, checkpoint=checkpoint)
    results["cpu_load"] = loaded.as_json()
    say(load.describe(results["cpu_load"]))
    machine["load_after"] = _load()
    results["machine"] = machine
    results["jobhash"] = measure_jobhash(sizes.jobs, say=say) if sizes.jobs else {}
    pace = REPO_ROOT / "bench" / "roll_pace.json"
    if pace.exists():
        # Measured on the real node by tests/e2e/test_roll_pace.py (it needs kubelet +
        # containerd and the controller image, which this benchmark does not start).
        results["roll_pace"] = json.loads(pace.read_text())
    results["date"] = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
    flag = next(
        (f" --{name}" for name in ("quick", "largest", "smaller") if getattr(args, name)), ""
    )
    flag += "".join(f" --giant {n}" for n in sizes.giant)
    if args.load_cpus > 0:
        flag += f" --load-cpus {args.load_cpus}"
    results["command"] = "python -m bench.run" + flag
    text = json.dumps(results, indent=2, sort_keys=True)
    if raw is not None:
        raw.write_text(text + "\n")
    markdown = render(results)
    if out is not None:
        out.write_text(markdown)
        say(f"wrote {out}")
    else:
        print(markdown)
    violations = count_violations(results)
    for violation in violations:
        say(f"request-count target broken: {violation}")
    return 1 if violations else 0


def _terminate(signum: int, frame: object) -> None:
    raise SystemExit(f"bench: stopped by signal {signum}")


if __name__ == "__main__":
    raise SystemExit(main())
