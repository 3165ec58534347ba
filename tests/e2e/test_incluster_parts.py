"""The pure parts of the in-cluster install: chart values from a test's controller settings,
and the kubelet's container log format."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.controlplane import ControlPlane
from tests.e2e.incluster import chart_values
from tests.e2e.pod_logs import parse_cri_log
from tests.support.registry import RegistryServer

PLANE = ControlPlane(
    workdir=Path("/w"),
    server="https://127.0.0.1:6443",
    ca_file=Path("/w/ca.crt"),
    token="t",
    kubeconfig=Path("/w/kubeconfig"),
    etcd_url="http://127.0.0.1:2379",
    logs={},
)
REGISTRY = RegistryServer(binary="r", root=Path("/r"), port=5000, user="robot", password="pw")


def values(**env: str) -> dict[str, object]:
    return chart_values(
        plane=PLANE,
        registry=REGISTRY,
        image="127.0.0.1:5000/forgejo/autoroll:latest",
        secret="s" * 32,
        port=31000,
        poll_seconds=5,
        env=env,
    )


def test_chart_values_point_the_pod_at_the_api_server_and_the_local_registry() -> None:
    found = values()
    assert found["apiServer"] == {"host": "127.0.0.1", "port": 6443}
    assert found["hostNetwork"] is True and found["containerPort"] == 31000
    assert found["forgejo"] == {"host": "127.0.0.1:5000", "user": "robot", "scheme": "http"}
    assert found["image"] == {"repository": "127.0.0.1:5000/forgejo/autoroll", "tag": "latest"}
    assert found["selfRoll"] is False


def test_controller_variables_map_to_their_chart_values() -> None:
    found = values(DRY_RUN="true", ROLLOUT_HALTED_AFTER_SECONDS="5", LABEL_SELECTOR="a=b")
    assert (found["dryRun"], found["rolloutHaltedAfterSeconds"], found["labelSelector"]) == (
        True,
        5,
        "a=b",
    )


def test_the_health_window_is_off_unless_a_test_sets_it() -> None:
    assert values()["guardrails"] == {"healthySeconds": 0}
    found = values(ROLL_HEALTHY_SECONDS="30", ROLL_PAUSED="true")
    assert found["guardrails"] == {"healthySeconds": 30, "paused": True}


def test_a_variable_without_a_chart_value_is_an_error_naming_it() -> None:
    with pytest.raises(ValueError, match="REGISTRY_SCHEME: no chart value maps to it"):
        values(REGISTRY_SCHEME="http")


def test_cri_log_lines_join_partial_lines_and_drop_the_prefix() -> None:
    lines = [
        "2026-12-01T08:00:00.1Z stdout F first line",
        "2026-12-01T08:00:00.2Z stderr P half ",
        "2026-12-01T08:00:00.3Z stderr P and ",
        "2026-12-01T08:00:00.4Z stderr F the rest",
        "2026-12-01T08:00:00.5Z stdout P pending",
        "garbage",
    ]
    assert parse_cri_log(lines) == (["first line", "half and the rest"], "pending")
    assert parse_cri_log(["t stdout F done"], "pending ") == (["pending done"], "")


def test_the_network_policy_lets_the_pod_reach_the_registry_and_the_api_server_only() -> None:
    assert values()["networkPolicy"] == {
        "registry": {"cidrs": ["127.0.0.1/32"], "ports": [5000]},
        "apiServer": {"cidrs": ["127.0.0.1/32"], "ports": [6443]},
    }


def test_tenancy_variables_map_to_the_tenancy_values() -> None:
    watched = values(WATCH_NAMESPACES="team-a,team-b", WORKLOAD_KINDS="deployment")
    assert watched["tenancy"] == {"namespaces": ["team-a", "team-b"], "namespaced": True}
    assert watched["workloadKinds"] == ["deployment"]
    assert values(ALLOWED_NAMESPACES="team-a")["tenancy"] == {"namespaces": ["team-a"]}
