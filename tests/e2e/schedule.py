"""The order the e2e tier's files go to the pytest-xdist workers: longest first.

``make pytest-e2e`` runs ``--dist loadfile --no-loadscope-reorder``: each worker takes the
next whole file in the collection's order when it runs short of work. With the long files
first they run side by side early and the short ones fill the gaps at the end, instead of a
long file starting last while the other worker sits idle (the longest-processing-time-first
rule for two machines).
"""

from __future__ import annotations

import pytest

#: Seconds each file of the tier took in one process, from `--junitxml`, setup and teardown
#: included (2026-12-02 at a mean load of 12 on 2 cores; the bad-build, pinning, registry and
#: pure-check files 2026-12-03 at a load of about 4); a file not listed counts
#: ``SECONDS_PER_TEST`` a test. Only the order they give matters: update them when a file's
#: time changes a lot, and list a new file that takes a minute or more.
E2E_FILE_SECONDS: dict[str, float] = {
    "test_scenarios.py": 196,
    "test_bad_build.py": 190,
    "test_pinning.py": 183,
    "test_cluster_shapes.py": 156,
    "test_guardrails.py": 150,
    "test_platform_awareness.py": 150,
    "test_workload_kinds.py": 143,
    "test_chart_upgrade.py": 97,
    "test_cluster_shapes_held.py": 93,
    "test_demo.py": 75,
    "test_ha.py": 73,
    "test_aliased_repositories.py": 66,
    "test_public_charts.py": 64,
    "test_gitea_delivery.py": 60,
    "test_tenancy.py": 55,
    "test_scenarios_simulated.py": 44,
    "test_distribution_delivery.py": 41,
    "test_incluster.py": 36,
    "test_workload_kinds_simulated.py": 32,
    "test_pull_secrets.py": 30,
    "test_controlplane.py": 28,
    "test_node.py": 28,
    "test_job_groups_node.py": 27,
    "test_roll_pace.py": 26,
    "test_chart.py": 25,
    "test_plan_in_pod.py": 21,
    "test_private_ca.py": 18,
    "test_rbac.py": 6,
    "test_controlplane_harness.py": 5,
    "test_incluster_parts.py": 1,
    "test_node_parts.py": 1,
    "test_kubelet.py": 1,
    "test_scenario_checks.py": 1,
}
SECONDS_PER_TEST = 5.0


def file_order(items: list[pytest.Item]) -> list[pytest.Item]:
    """``items`` with the files longest first (each file's tests kept together, in their
    order): the workers of ``--dist loadfile --no-loadscope-reorder`` take files in this
    order, so the long files run side by side early and the short ones fill in."""
    counts: dict[str, int] = {}
    for item in items:
        counts[item.path.name] = counts.get(item.path.name, 0) + 1

    def seconds(item: pytest.Item) -> float:
        name = item.path.name
        return E2E_FILE_SECONDS.get(name, SECONDS_PER_TEST * counts[name])

    return sorted(items, key=lambda item: (-seconds(item), item.path.name))
