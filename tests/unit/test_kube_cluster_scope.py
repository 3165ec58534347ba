"""``KubeCluster`` finding work for a scope (only the namespaces of workloads using the
repository), the fresh read before acting, and every request observed by its operation.
"""

from __future__ import annotations

from kubernetes import client

from autoroll.core.model import WorkloadKind
from autoroll.core.scope import ImageTag, Scope
from autoroll.kube.cluster import KubeCluster
from autoroll.kube.transport import LIVE_PODS_FIELD_SELECTOR
from tests.support.kube_models import k8s_deployment, k8s_pod
from tests.support.kube_rest import FakeRest

# --- finding work for a scope, and the fresh read before acting --------------------------


def test_a_targeted_snapshot_lists_only_the_namespaces_of_workloads_using_the_repository() -> None:
    other = [client.V1Container(name="app", image="git.example.org/team/api:v2")]
    deployments = [
        k8s_deployment("web"),
        k8s_deployment("api", namespace="blog", containers=other),
    ]
    rest = FakeRest(deployments, [k8s_pod("web-1"), k8s_pod("api-1", namespace="blog")])
    cluster = KubeCluster(label_selector="x", rest=rest, kinds=[WorkloadKind.DEPLOYMENT])
    snapshot = cluster.snapshot(Scope.of([ImageTag.named("git.example.org", "team/app", "latest")]))
    assert [e.workload.key for e in snapshot] == ["shop/deployment/web"]
    assert rest.list_calls == ["shop"]  # blog holds no workload of team/app


def test_read_now_is_one_narrow_list_with_the_workloads_own_selector() -> None:
    expressions = [client.V1LabelSelectorRequirement(key="tier", operator="NotIn", values=["db"])]
    deployment = k8s_deployment("web", expressions=expressions)
    pods = [
        k8s_pod("web-1"),
        k8s_pod("web-db", labels={"app": "web", "tier": "db"}),  # the server would leave it out
        k8s_pod("other", labels={"app": "other"}),
    ]
    rest = FakeRest([deployment], pods)
    cluster = KubeCluster(label_selector="x", rest=rest)
    [found] = cluster.snapshot()
    rest.list_calls.clear()
    rest.list_kwargs.clear()
    fresh = cluster.read_now(found.workload)
    assert fresh is not None
    assert fresh.workload == found.workload  # read again, the same object
    assert [p.name for p in fresh.pods] == ["web-1"]  # matched exactly, whatever the server sent
    assert rest.list_calls == ["shop"]
    assert rest.list_kwargs[0]["label_selector"] == "app=web,tier notin (db)"
    assert rest.list_kwargs[0]["field_selector"] == LIVE_PODS_FIELD_SELECTOR


def test_read_now_of_a_workload_gone_or_replaced_is_none_and_lists_no_pods() -> None:
    rest = FakeRest([k8s_deployment("web")], [k8s_pod("web-1")])
    cluster = KubeCluster(label_selector="x", rest=rest, kinds=[WorkloadKind.DEPLOYMENT])
    [found] = cluster.snapshot()
    rest.list_calls.clear()
    rest.deployments = []  # deleted, or no longer carrying the enrolment label
    assert cluster.read_now(found.workload) is None
    replaced = k8s_deployment("web")
    assert replaced.metadata is not None
    replaced.metadata.uid = "uid-web-2"  # deleted and created again under the same name
    rest.deployments = [replaced]
    assert cluster.read_now(found.workload) is None
    assert rest.list_calls == []


def test_every_request_is_observed_by_its_operation() -> None:
    seen: list[str] = []
    rest = FakeRest([k8s_deployment("web")], [k8s_pod("web-1")])
    cluster = KubeCluster(
        label_selector="x",
        api_client_factory=lambda: rest._client,
        observe=seen.append,
        kinds=[WorkloadKind.DEPLOYMENT],
    )
    [found] = cluster.snapshot()
    cluster.read_now(found.workload)
    cluster.delete_pod("shop", "web-1", "uid-web-1")
    assert seen == ["list deployments", "list pods", "list deployments", "list pods", "delete pod"]
