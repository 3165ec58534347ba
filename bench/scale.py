"""Measurement 1: the cost of one pass at cluster scale, autoroll next to the naive baseline.

For each number of unique images, a fresh API server is populated in steps (background pods
first, then enrolled Deployments up to each size); after each step both strategies run
their passes in child processes (``bench.tick``) against the same objects, one after the
other, so every ratio compares two measurements of one run on one cluster.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from autoroll.edge.reconcile_process import RECONCILE_ENV
from bench.child import controller_python, run_module
from bench.controlplane import ApiServer
from bench.populate import ENROLL_LABEL, ApiWriter, Layout, create_enrolled
from tests.support.registry import RegistryServer

REPO_ROOT = Path(__file__).resolve().parent.parent
STRATEGIES = ("autoroll", "stalled", "cached", "naive", "floor")
#: The ``stalled`` strategy's least registry budget, and how much longer than its budget each
#: of its passes is held after the registry answered: as a pass deciding thousands of
#: workloads on a loaded CPU is (issue 28: the targets' GETs must still go in the cold pass).
STALLED_BUDGET_SECONDS = 2.0
STALLED_HOLD_MARGIN_SECONDS = 1.0
#: The budget also covers the plain strategy's whole cold pass at the same size, this much
#: over: the HEADs and GETs themselves must fit (an exhausted budget is the registry's
#: politeness working, not the rule under test); at 10,000 Deployments on a loaded machine
#: 2 s did not even cover the 200 HEADs.
STALLED_BUDGET_OVER_COLD_PASS = 1.5

#: The repository the cached strategy's targeted pass pushes to (image 0: every size uses it).
TARGETED_REPOSITORY = "bench/img-000"


@dataclass(frozen=True)
class Stage:
    """One populated cluster and what every measurement on it uses: its API server, the
    registry, the writer that populates it and where its objects go, the digests pushed, and
    the progress printer."""

    api: ApiServer
    registry: RegistryServer
    writer: ApiWriter
    layout: Layout
    digests: Mapping[str, str]
    say: Callable[[str], None]


@dataclass(frozen=True)
class Cell:
    """One measured configuration and what each strategy's child process reported."""

    images: int
    deployments: int
    unique_refs: int
    namespaces: int
    pods: int  # every live pod in the cluster (enrolled + background)
    results: Mapping[str, Mapping[str, Any]]  # strategy → bench.tick JSON
    populate_s: float
    profile: str = ""  # cProfile top functions of one autoroll pass (largest size only)
    control_plane_kib: Mapping[str, int] = field(default_factory=dict)  # etcd, API server

    def as_json(self) -> dict[str, Any]:
        return {
            "images": self.images,
            "deployments": self.deployments,
            "unique_refs": self.unique_refs,
            "namespaces": self.namespaces,
            "pods": self.pods,
            "populate_s": self.populate_s,
            "profile": self.profile,
            "control_plane_kib": dict(self.control_plane_kib),
            "results": dict(self.results),
        }


def stalled_timing(cold_pass_wall_s: float | None) -> tuple[float, float]:
    """The ``stalled`` strategy's registry budget and hold, in seconds, from the plain
    strategy's cold pass at the same size (None: not measured): the hold always outlasts
    the budget, which always covers the registry's own answers on this machine at this load."""
    budget = max(STALLED_BUDGET_SECONDS, STALLED_BUDGET_OVER_COLD_PASS * (cold_pass_wall_s or 0))
    return round(budget, 1), round(budget + STALLED_HOLD_MARGIN_SECONDS, 1)


def _stalled(results: Mapping[str, dict[str, Any]]) -> tuple[tuple[str, ...], dict[str, float]]:
    plain = results.get("autoroll")
    budget, hold = stalled_timing(plain["passes"][0]["wall_s"] if plain else None)
    flags = (f"--registry-budget={budget}", f"--stall-after-resolve={hold}")
    return flags, {"budget_s": budget, "hold_s": hold}


def run_tick_child(
    strategy: str,
    *,
    api: ApiServer,
    registry: RegistryServer,
    selector: str,
    ticks: int,
    profile: bool = False,
    targeted: str = "",
    extra: Sequence[str] = (),
) -> dict[str, Any]:
    """Start ``python -m bench.tick`` for one strategy; return its JSON (raise with its stderr)."""
    flags = [
        f"--strategy={strategy}",
        f"--kubeconfig={api.kubeconfig}",
        f"--registry-url={registry.url}",
        f"--host={registry.host}",
        f"--user={registry.user}",
        f"--token={registry.password}",
        f"--selector={selector}",
        f"--ticks={ticks}",
        *(["--profile"] if profile else []),
        *([f"--targeted={targeted}"] if targeted else []),
        *extra,
    ]
    # As ``autoroll serve`` runs its reconcile process (``RECONCILE_ENV``).
    return run_module(
        "bench.tick", flags, timeout=1800, defaults=RECONCILE_ENV, python=controller_python()
    )


def measure_scale(
    stage: Stage,
    *,
    sizes: Sequence[int],
    background_pods: int,
    ticks: int,
    large_ticks: int | None = None,
    strategies: Sequence[str] = STRATEGIES,
    created: int = 0,
) -> list[Cell]:
    """Grow the enrolled set through ``sizes`` (``created`` exist already) and measure each
    of ``strategies`` at each size (``large_ticks`` passes at sizes over 2,000, where the
    naive loop takes minutes)."""
    api, registry, layout, say = stage.api, stage.registry, stage.layout, stage.say
    cells = []
    for size in sizes:
        started = time.monotonic()
        create_enrolled(stage.writer, layout, range(created, size), stage.digests)
        populate_s = time.monotonic() - started
        created = size
        say(
            f"  {size} Deployments, {layout.unique_images} images: populated in"
            f" {populate_s:.1f}s; measuring"
        )
        passes = large_ticks if large_ticks is not None and size > 2000 else ticks
        results: dict[str, dict[str, Any]] = {}
        for strategy in strategies:  # in order: "stalled" is timed from "autoroll"'s cold pass
            extra, timing = _stalled(results) if strategy == "stalled" else ((), {})
            results[strategy] = {
                **run_tick_child(
                    strategy,
                    api=api,
                    registry=registry,
                    selector=f"{ENROLL_LABEL}=true",
                    ticks=passes,
                    targeted=TARGETED_REPOSITORY if strategy == "cached" else "",
                    extra=extra,
                ),
                **timing,
            }
        profile = ""
        if size == max(sizes) and "autoroll" in strategies:
            # A separate, profiled run: profiling slows the pass, so it is not the one timed.
            profile = run_tick_child(
                "autoroll",
                api=api,
                registry=registry,
                selector=f"{ENROLL_LABEL}=true",
                ticks=2,
                profile=True,
            )["profile"]
        cells.append(
            Cell(
                images=layout.unique_images,
                deployments=size,
                unique_refs=min(size, layout.unique_images),
                namespaces=min(size, layout.namespaces),
                pods=size * 3 + background_pods,
                results=results,
                populate_s=populate_s,
                profile=profile,
                control_plane_kib=api.peak_rss_kib(),
            )
        )
    return cells
