"""Issue 28's memory rule in CI: the watched cache holds at most 1,000 B per cached object.

Measured by ``bench.cache_memory`` (tracemalloc: what the real ``WatchCache`` retains after
listing synthetic API answers shaped like the benchmark's objects, per workload and per
pod) at the three sizes of the benchmark. No API server: the quick bench's sizes (20 and
60 Deployments) are too small for a per-object figure, where the cache's fixed cost per
namespace would dominate, so the rule runs here, at the full sizes, in seconds.

Each measure runs in a process of its own: tracemalloc counts every thread's allocations,
and in a test run other threads (servers, informers of earlier tests) allocate meanwhile,
which once read as 2,775 B per workload in a loaded run where a process alone measured 840.
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import pytest

from bench.cache_memory import SIZES, CacheMemory

ROOT = Path(__file__).resolve().parents[2]

LIMIT = 1000  # bytes per cached object, pods and workloads each (issue 28)

pytestmark = pytest.mark.timeout(600)


def measure(deployments: int, images: int = 50) -> CacheMemory:
    """``bench.cache_memory.measure`` in a fresh interpreter (module docstring)."""
    code = (
        "import dataclasses, json, sys; from bench.cache_memory import measure;"
        f" print(json.dumps(dataclasses.asdict(measure({deployments}, {images}))))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    found = json.loads(done.stdout.strip().splitlines()[-1])
    return CacheMemory(**{f.name: found[f.name] for f in dataclasses.fields(CacheMemory)})


@pytest.mark.parametrize(("deployments", "images"), SIZES)
def test_each_cached_object_costs_at_most_1000_bytes(deployments: int, images: int) -> None:
    found = measure(deployments, images)
    assert found.workloads == deployments
    assert found.pods == 3 * deployments
    assert found.workload_bytes <= LIMIT, f"{found.workload_bytes:.0f} B per cached workload"
    assert found.pod_bytes <= LIMIT, f"{found.pod_bytes:.0f} B per cached pod"


def test_the_measure_sees_what_the_cache_keeps() -> None:
    """The method is not blind: each pod's own name, UID and times alone are about 300 B,
    and each workload's view, UID, key and selector more."""
    found = measure(200)
    assert found.pod_bytes > 300
    assert found.workload_bytes > 300
