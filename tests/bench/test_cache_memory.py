"""Issue 28's memory rule in CI: the watched cache holds at most 1,000 B per cached object.

Measured by ``bench.cache_memory`` (tracemalloc: what the real ``WatchCache`` retains after
listing synthetic API answers shaped like the benchmark's objects, per workload and per
pod) at the three sizes of the benchmark. No API server: the quick bench's sizes (20 and
60 Deployments) are too small for a per-object figure, where the cache's fixed cost per
namespace would dominate, so the rule runs here, at the full sizes, in seconds.
"""

from __future__ import annotations

import pytest

from bench.cache_memory import SIZES, measure

LIMIT = 1000  # bytes per cached object, pods and workloads each (issue 28)

pytestmark = pytest.mark.timeout(600)


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
