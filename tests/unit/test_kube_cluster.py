"""The Kubernetes adapter's I/O without an API server: ``KubeCluster`` and ``KubeRest`` over a
hand-written ``ApiClient`` (tests/support/fake_api_client.py), so the real request path and
its one error mapping run as in production (``tests.support.kube_rest``). The requests
themselves are in ``test_kube_rest.py``, the Nodes in ``test_kube_cluster_nodes.py``, scopes
and the fresh read in ``test_kube_cluster_scope.py``.
"""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes import client
from urllib3.exceptions import MaxRetryError, NewConnectionError

from autoroll.core.model import DeleteOutcome, WorkloadKind
from autoroll.kube.cluster import KubeCluster
from autoroll.kube.errors import (
    ClusterApiError,
    ClusterConfigError,
    ClusterForbiddenError,
    ClusterUnreachableError,
)
from autoroll.kube.transport import LIVE_PODS_FIELD_SELECTOR, REQUEST_TIMEOUT, KubeRest, connect
from tests.support.fake_api_client import FakeApiClient, Reply, status_body
from tests.support.kube_models import k8s_deployment, k8s_pod
from tests.support.kube_rest import FakeRest
from tests.unit.test_kube_convert_kinds import k8s_daemonset, k8s_statefulset, owned

# --- KubeCluster over the real KubeRest and a scripted ApiClient --------------------------------


def test_snapshot_lists_deployments_once_and_pods_once_per_namespace() -> None:
    deployments = [
        k8s_deployment("web"),
        k8s_deployment("api", match_labels={"app": "api"}),
        k8s_deployment("web", namespace="blog"),
    ]
    pods = [
        k8s_pod("web-1"),
        k8s_pod("api-1", labels={"app": "api"}),
        k8s_pod("web-1", namespace="blog"),
    ]
    rest = FakeRest(deployments, pods)
    cluster = KubeCluster(label_selector="aethnet.se/autoroll=true", rest=rest)

    snapshot = cluster.snapshot()

    assert [c["label_selector"] for c in rest.calls] == ["aethnet.se/autoroll=true"]
    assert rest.list_calls == ["blog", "shop"]  # one per namespace, not per Deployment
    assert rest.kinds_listed == list(WorkloadKind)  # one list per kind, each once
    assert cluster.requests == 3 + 2
    assert all(k["field_selector"] == LIVE_PODS_FIELD_SELECTOR for k in rest.list_kwargs)
    assert all(k["timeout"] == REQUEST_TIMEOUT for k in [*rest.calls, *rest.list_kwargs])
    assert [(e.workload.key, len(e.pods)) for e in snapshot] == [
        ("blog/deployment/web", 1),
        ("shop/deployment/api", 1),
        ("shop/deployment/web", 1),
    ]


def test_snapshot_with_nothing_enrolled_lists_no_pods() -> None:
    rest = FakeRest()
    cluster = KubeCluster(label_selector="x=y", rest=rest)
    assert cluster.snapshot() == ()
    assert rest.list_calls == []


def test_a_deployment_with_a_bad_selector_is_skipped_not_fatal() -> None:
    bad = k8s_deployment(
        "odd",
        expressions=[client.V1LabelSelectorRequirement(key="a", operator="Near", values=["b"])],
    )
    cluster = KubeCluster(label_selector="x", rest=FakeRest([bad, k8s_deployment()]))
    assert [e.workload.name for e in cluster.snapshot()] == ["web"]


def test_statefulset_and_daemonset_pods_come_with_their_workload_in_one_pass() -> None:
    sts = k8s_statefulset()
    ds = k8s_daemonset(None)
    ds["metadata"]["namespace"] = "infra"
    pods = [
        owned(k8s_pod("db-0", labels={"app": "db"}), "uid-db"),
        owned(k8s_pod("db-1", labels={"app": "db"}), "uid-db"),
        owned(k8s_pod("agent-x", namespace="infra", labels={"app": "db"}), "uid-agent"),
    ]
    rest = FakeRest(pods=pods, workloads={"statefulsets": [sts], "daemonsets": [ds]})
    cluster = KubeCluster(label_selector="x", rest=rest)
    snapshot = cluster.snapshot()
    assert [(e.workload.key, [p.name for p in e.pods]) for e in snapshot] == [
        ("infra/daemonset/agent", ["agent-x"]),
        ("shop/statefulset/db", ["db-0", "db-1"]),
    ]
    assert rest.list_calls == ["infra", "shop"]
    assert cluster.requests == 3 + 2


@pytest.mark.parametrize(
    "kinds",
    [[WorkloadKind.STATEFULSET], [WorkloadKind.DAEMONSET, WorkloadKind.DEPLOYMENT]],
)
def test_only_the_enabled_kinds_are_listed_in_the_kinds_own_order(
    kinds: list[WorkloadKind],
) -> None:
    rest = FakeRest()
    cluster = KubeCluster(label_selector="x", rest=rest, kinds=kinds)
    cluster.snapshot()
    assert rest.kinds_listed == [k for k in WorkloadKind if k in kinds]
    assert cluster.requests == len(kinds)


def test_no_kind_at_all_is_refused() -> None:
    with pytest.raises(ValueError, match="at least one workload kind"):
        KubeCluster(label_selector="x", rest=FakeRest(), kinds=[])


def test_a_forbidden_kind_list_names_the_rule_and_the_setting() -> None:
    cluster = KubeCluster(label_selector="x", rest=KubeRest(FakeApiClient(router=forbid_sts)))
    with pytest.raises(
        ClusterForbiddenError,
        match=r"list statefulsets .*statefulsets: list \(WORKLOAD_KINDS lists the kind\)",
    ):
        cluster.snapshot()


def forbid_sts(method: str, path: str, request: dict[str, Any]) -> Reply:
    if path.endswith("/statefulsets"):
        return 403, status_body(403)
    return 200, b'{"items": []}'


def test_delete_sends_the_uid_precondition() -> None:
    rest = FakeRest()
    cluster = KubeCluster(label_selector="x", rest=rest)
    assert cluster.delete_pod("shop", "web-1", "uid-1") is DeleteOutcome.DELETED
    assert rest.deleted == [("shop", "web-1", "uid-1")]
    assert cluster.requests == 1


@pytest.mark.parametrize(
    ("status", "outcome"), [(404, DeleteOutcome.ALREADY_GONE), (409, DeleteOutcome.REPLACED)]
)
def test_delete_reports_gone_and_replaced_pods_without_raising(
    status: int, outcome: DeleteOutcome
) -> None:
    rest = FakeRest(error=status)
    cluster = KubeCluster(label_selector="x", rest=rest)
    assert cluster.delete_pod("shop", "web-1", "uid-1") is outcome


def test_a_forbidden_delete_names_the_missing_verb() -> None:
    rest = FakeRest(error=403)
    cluster = KubeCluster(label_selector="x", rest=rest)
    with pytest.raises(ClusterForbiddenError, match="pods: delete"):
        cluster.delete_pod("shop", "web-1", "uid-1")


def test_a_server_error_on_delete_is_a_cluster_api_error() -> None:
    rest = FakeRest(error=500)
    cluster = KubeCluster(label_selector="x", rest=rest)
    with pytest.raises(ClusterApiError, match="500") as info:
        cluster.delete_pod("shop", "web-1", "uid-1")
    assert info.value.status == 500


def test_an_unreachable_api_is_reported_as_such() -> None:
    down = MaxRetryError(None, "/apis", NewConnectionError(None, "refused"))  # type: ignore[arg-type]
    cluster = KubeCluster(label_selector="x", rest=FakeRest(list_error=down))
    with pytest.raises(ClusterUnreachableError, match="cannot reach the Kubernetes API"):
        cluster.snapshot()


def test_a_forbidden_list_names_the_missing_verb() -> None:
    cluster = KubeCluster(label_selector="x", rest=FakeRest(list_error=403))
    with pytest.raises(ClusterForbiddenError, match="deployments: list"):
        cluster.snapshot()


def test_connect_without_any_configuration_is_a_clear_config_error(tmp_path: Any) -> None:
    missing = tmp_path / "nope" / "config"
    with pytest.raises(ClusterConfigError, match="set KUBECONFIG") as info:
        connect({"KUBECONFIG": str(missing)})
    assert str(missing) in str(info.value)


def test_connect_reads_a_kubeconfig(tmp_path: Any) -> None:
    kubeconfig = tmp_path / "config"
    kubeconfig.write_text(
        """
apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: abc}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
"""
    )
    api_client = connect({"KUBECONFIG": str(kubeconfig)})
    assert api_client.configuration.host == "https://127.0.0.1:1"


def test_the_client_is_built_lazily_and_retried_after_a_config_error() -> None:
    attempts: list[int] = []

    def factory() -> Any:
        attempts.append(1)
        raise ClusterConfigError("no config")

    cluster = KubeCluster(label_selector="x", api_client_factory=factory)
    assert attempts == []
    for _ in range(2):
        with pytest.raises(ClusterConfigError):
            cluster.snapshot()
    assert len(attempts) == 2


def test_evict_mode_uses_the_eviction_api_with_the_uid_precondition() -> None:
    rest = FakeRest()
    cluster = KubeCluster(label_selector="x", rest=rest, evict=True)
    assert cluster.delete_pod("shop", "web-1", "uid-1") is DeleteOutcome.DELETED
    assert rest.evicted == [("shop", "web-1", "uid-1")]
    assert rest.deleted == []


def test_an_eviction_refused_by_a_disruption_budget_is_blocked_not_an_error() -> None:
    rest = FakeRest(error=429)
    cluster = KubeCluster(label_selector="x", rest=rest, evict=True)
    assert cluster.delete_pod("shop", "web-1", "uid-1") is DeleteOutcome.BLOCKED


def test_a_forbidden_eviction_names_the_eviction_verb() -> None:
    rest = FakeRest(error=403)
    cluster = KubeCluster(label_selector="x", rest=rest, evict=True)
    with pytest.raises(ClusterForbiddenError, match="pods/eviction: create"):
        cluster.delete_pod("shop", "web-1", "uid-1")


def test_snapshot_narrows_each_namespace_by_its_enrolled_selectors() -> None:
    deployments = [
        k8s_deployment("web"),
        k8s_deployment("api", match_labels={"app": "api"}),
        k8s_deployment("odd", namespace="blog", match_labels={"name": "odd"}),
        k8s_deployment("web", namespace="blog"),
    ]
    rest = FakeRest(deployments)
    KubeCluster(label_selector="x", rest=rest).snapshot()
    narrowing = {
        ns: k["label_selector"] for ns, k in zip(rest.list_calls, rest.list_kwargs, strict=True)
    }
    assert narrowing == {"shop": "app in (api,web)", "blog": None}


def test_a_list_answer_that_is_not_json_is_a_clear_api_error() -> None:
    cluster = KubeCluster(label_selector="x", rest=FakeRest(body=b"<html>proxy error</html>"))
    with pytest.raises(ClusterApiError, match=r"list deployments .* not JSON"):
        cluster.snapshot()
