"""How big each measurement of ``bench.run`` is: ``Sizes`` and the runs' presets (the full
run, its two halves for ``bench.merge``, and the quick mode CI runs)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Sizes:
    """How big each measurement is."""

    namespaces: int
    background_pods: int
    deployments: tuple[int, ...]  # cumulative steps
    images: tuple[int, ...]
    ticks: int  # passes per strategy and size: the first is cold, the rest steady state
    pushes: int  # push-to-deletion with a small enrolled set
    pushes_large: int  # the same with each large enrolled set, per design
    webhook_requests: int
    jobs: tuple[int, ...]
    huge: tuple[int, ...] = ()  # further steps, at the largest image count only
    huge_ticks: int = 2  # passes per strategy at those sizes (the naive loop takes minutes)
    # Beyond those, the watched cache alone (``bench.tick --strategy cached``) and one serve's
    # targeted pushes: the listed designs would parse a list of every enrolled workload in
    # one piece, and the naive loop send a request per workload (issue 28: 50,000).
    giant: tuple[int, ...] = ()


FULL = Sizes(
    namespaces=20,
    background_pods=5000,
    deployments=(100, 500, 2000),
    images=(50, 200),
    ticks=3,
    pushes=50,
    pushes_large=8,
    webhook_requests=2000,
    jobs=(50, 500),
    huge=(10000,),
)
#: Everything but the largest size: on a shared 2-core machine one run of all of it takes
#: longer than an afternoon's slot, so it runs as this and ``LARGEST`` (merged by
#: ``python -m bench.merge``).
SMALLER = Sizes(
    namespaces=20,
    background_pods=5000,
    deployments=(500, 2000),
    images=(50,),
    ticks=3,
    pushes=20,
    pushes_large=8,
    webhook_requests=2000,
    jobs=(50, 500),
)
#: Only the largest size (the 10,000 cell, its pushes, the load): for a machine where one run
#: of everything does not fit; ``bench.report`` renders its results merged with a run of FULL.
LARGEST = Sizes(
    namespaces=20,
    background_pods=5000,
    deployments=(),
    images=(200,),
    ticks=3,
    pushes=0,
    pushes_large=8,
    webhook_requests=2000,
    jobs=(),
    huge=(10000,),
)
QUICK = Sizes(
    namespaces=4,
    background_pods=200,
    deployments=(20, 60),
    images=(10, 40),
    ticks=2,
    pushes=5,
    pushes_large=3,
    webhook_requests=200,
    jobs=(10,),
)
