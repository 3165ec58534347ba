"""The Kubernetes adapter's I/O without an API server: ``KubeCluster`` and ``KubeRest`` over a
hand-written ``ApiClient`` (tests/support/fake_api_client.py), so the real request path and
its one error mapping run as in production.
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any
from urllib.parse import unquote

import pytest
from kubernetes import client
from urllib3.exceptions import MaxRetryError, NewConnectionError

from autoroll.core.model import DeleteOutcome, NodeView, WorkloadKind
from autoroll.core.scope import ImageTag, Scope
from autoroll.kube.cluster import KubeCluster
from autoroll.kube.errors import (
    ClusterApiError,
    ClusterConfigError,
    ClusterForbiddenError,
    ClusterUnauthorizedError,
    ClusterUnreachableError,
)
from autoroll.kube.transport import LIVE_PODS_FIELD_SELECTOR, REQUEST_TIMEOUT, KubeRest, connect
from tests.support.fake_api_client import FakeApiClient, Reply, always, status_body
from tests.support.kube_models import as_json, k8s_deployment, k8s_pod
from tests.unit.test_kube_convert_kinds import k8s_daemonset, k8s_statefulset, owned

# --- KubeCluster over the real KubeRest and a scripted ApiClient --------------------------------


class FakeRest(KubeRest):
    """The real ``KubeRest`` over a scripted ``ApiClient``: answers lists from fixtures,
    records every call. ``error`` is what delete and evict meet, ``list_error`` what the
    Deployment list meets: an HTTP status the API answers with, or an exception the client
    raises (no answer at all)."""

    def __init__(
        self,
        deployments: list[client.V1Deployment] | None = None,
        pods: list[Any] | None = None,
        *,
        error: int | Exception | None = None,
        list_error: int | Exception | None = None,
        body: bytes | None = None,
        workloads: dict[str, list[dict[str, Any]]] | None = None,
        nodes: dict[str, Reply] | None = None,
    ) -> None:
        super().__init__(FakeApiClient(router=self._route))
        self.deployments = deployments or []
        self.pods = pods or []  # client models or raw JSON objects
        self.workloads = workloads or {}  # "statefulsets"/"daemonsets" -> raw JSON objects
        self.nodes = nodes or {}  # name -> the answer to GET /api/v1/nodes/<name>
        self.kinds_listed: list[WorkloadKind] = []
        self.error = error
        self.list_error = list_error
        self.body = body  # replaces the Deployment list's answer
        self.calls: list[dict[str, Any]] = []
        self.list_calls: list[str] = []
        self.list_kwargs: list[dict[str, Any]] = []
        self.deleted: list[tuple[str, str, str]] = []
        self.evicted: list[tuple[str, str, str]] = []

    def list_workloads(self, kind: WorkloadKind, **kwargs: Any) -> bytes:
        self.kinds_listed.append(kind)
        if kind is WorkloadKind.DEPLOYMENT:
            self.calls.append(kwargs)
        return super().list_workloads(kind, **kwargs)

    def list_pods(self, namespace: str, **kwargs: Any) -> bytes:
        self.list_calls.append(namespace)
        self.list_kwargs.append(kwargs)
        return super().list_pods(namespace, **kwargs)

    def _route(self, method: str, path: str, request: dict[str, Any]) -> Reply:
        if path == "/apis/apps/v1/deployments":
            if self.list_error is not None:
                return _reply(self.list_error)
            return 200, self.body if self.body is not None else raw_list(self.deployments)
        if path.startswith("/apis/apps/v1/namespaces/") and path.endswith("/deployments"):
            # The fresh read of one Deployment: by namespace and name (a field selector).
            namespace = unquote(path.split("/")[5])
            name = dict(request["query_params"]).get("fieldSelector", "").split("=")[-1]
            found = [
                d
                for d in self.deployments
                if d.metadata is not None
                and (d.metadata.namespace, d.metadata.name) == (namespace, name)
            ]
            return 200, raw_list(found or self.workloads.get("deployments", []))
        if path.startswith("/apis/apps/v1/"):
            return 200, raw_list(self.workloads.get(path.rpartition("/")[2], []))
        if path.startswith("/api/v1/nodes/"):
            return self.nodes.get(unquote(path.rpartition("/")[2]), (404, status_body(404)))
        parts = [unquote(p) for p in path.split("/")]
        namespace = parts[4]
        if method == "GET":
            return 200, raw_list([p for p in self.pods if _namespace(p) == namespace])
        if self.error is not None:
            return _reply(self.error)
        if path.endswith("/eviction"):
            uid = request["body"]["deleteOptions"]["preconditions"]["uid"]
            self.evicted.append((namespace, parts[6], uid))
        else:
            self.deleted.append((namespace, parts[6], request["body"]["preconditions"]["uid"]))
        return 200, b"{}"


def _namespace(pod: Any) -> str:
    if isinstance(pod, dict):
        return str(pod["metadata"]["namespace"])
    return str(pod.metadata.namespace) if pod.metadata else ""


def _reply(error: int | Exception) -> Reply:
    return error if isinstance(error, Exception) else (error, status_body(error))


def raw_list(items: list[Any]) -> bytes:
    raw = [i if isinstance(i, dict) else as_json(i) for i in items]
    return json.dumps({"kind": "List", "items": raw}).encode()


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


NODE_READY = json.dumps(
    {"metadata": {"name": "n1"}, "status": {"conditions": [{"type": "Ready", "status": "True"}]}}
).encode()


def test_a_node_is_read_with_one_get() -> None:
    rest = FakeRest(nodes={"n1": (200, NODE_READY)})
    cluster = KubeCluster(label_selector="x", rest=rest)
    assert cluster.node("n1") == NodeView("n1", True)
    assert cluster.requests == 1


def test_a_node_that_does_not_exist_is_not_ready() -> None:
    cluster = KubeCluster(label_selector="x", rest=FakeRest())
    assert cluster.node("gone") == NodeView("gone", False, "the Node does not exist")


def test_a_forbidden_node_read_names_nodes_get_and_the_daemonset_kind() -> None:
    rest = FakeRest(nodes={"n1": (403, status_body(403))})
    cluster = KubeCluster(label_selector="x", rest=rest)
    with pytest.raises(
        ClusterForbiddenError,
        match=r"get node n1: 403 .*nodes: get \(WORKLOAD_KINDS lists daemonset\)",
    ):
        cluster.node("n1")


def test_a_node_answer_that_is_not_json_is_a_clear_api_error() -> None:
    cluster = KubeCluster(label_selector="x", rest=FakeRest(nodes={"n1": (200, b"<html>")}))
    with pytest.raises(ClusterApiError, match="get node n1: not JSON"):
        cluster.node("n1")


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


# --- KubeRest: the requests themselves, through a scripted ApiClient ---------------------------


def test_rest_lists_send_the_selectors_as_query_parameters() -> None:
    api = FakeApiClient()
    rest = KubeRest(api)
    listed = rest.list_workloads(WorkloadKind.DEPLOYMENT, label_selector="a=b", timeout=(1, 2))
    assert listed == b'{"items": []}'
    rest.list_pods("shop", field_selector="f!=x", label_selector="app in (web)", timeout=(1, 2))
    rest.list_pods("blog", field_selector="f!=x", label_selector=None, timeout=(1, 2))
    assert [(c["method"], c["resource_path"], c["query_params"]) for c in api.serialized] == [
        ("GET", "/apis/apps/v1/deployments", [("labelSelector", "a=b")]),
        (
            "GET",
            "/api/v1/namespaces/shop/pods",
            [("fieldSelector", "f!=x"), ("labelSelector", "app in (web)")],
        ),
        ("GET", "/api/v1/namespaces/blog/pods", [("fieldSelector", "f!=x")]),
    ]
    assert all(c["auth_settings"] == ["BearerToken"] for c in api.serialized)
    assert api.timeouts == [(1, 2)] * 3
    assert all(r.released for r in api.answers)


def test_pods_are_listed_without_a_phase_filter() -> None:
    # A deleted pod that already exited shows Succeeded or Failed while it still terminates;
    # a phase field selector would hide it and the core would not wait for it.
    api = FakeApiClient()
    KubeRest(api).list_pods(
        "shop", field_selector=LIVE_PODS_FIELD_SELECTOR, label_selector=None, timeout=(1, 2)
    )
    assert LIVE_PODS_FIELD_SELECTOR == ""
    assert [c["query_params"] for c in api.serialized] == [[]]


def test_rest_delete_and_evict_carry_the_uid_precondition() -> None:
    api = FakeApiClient(router=always((200, b"{}")))
    rest = KubeRest(api)
    rest.delete_pod("shop", "web-1", uid="u1", timeout=(1, 2))
    rest.evict_pod("shop", "web-1", uid="u1", timeout=(1, 2))
    delete, evict = api.serialized
    assert (delete["method"], delete["resource_path"]) == (
        "DELETE",
        "/api/v1/namespaces/shop/pods/web-1",
    )
    assert delete["body"]["preconditions"] == {"uid": "u1"}
    assert (evict["method"], evict["resource_path"]) == (
        "POST",
        "/api/v1/namespaces/shop/pods/web-1/eviction",
    )
    assert evict["body"]["kind"] == "Eviction"
    assert evict["body"]["metadata"] == {"name": "web-1", "namespace": "shop"}
    assert evict["body"]["deleteOptions"] == {"preconditions": {"uid": "u1"}}
    assert all(c["header_params"]["Content-Type"] == "application/json" for c in api.serialized)


@pytest.mark.parametrize("status", [401, 403, 404, 409, 429, 500])
def test_rest_reports_the_answers_status_and_frees_the_connection(status: int) -> None:
    # 404 and 409 are answers a delete expects (gone, replaced); the rest are errors.
    api = FakeApiClient(router=always((status, b'{"kind": "Status"}')))
    rest = KubeRest(api)
    if status in (404, 409):
        assert rest.delete_pod("shop", "web-1", uid="u1", timeout=(1, 2)) == status
    else:
        with pytest.raises(ClusterApiError) as info:
            rest.delete_pod("shop", "web-1", uid="u1", timeout=(1, 2))
        assert info.value.status == status
    assert api.answers[0].released


def test_a_pass_and_its_events_never_import_the_generated_api_classes() -> None:
    # They pull in a few hundred model modules (about 26 MB); a pass needs none of them.
    probe = """
import sys
from autoroll.kube import KubeCluster, KubeEvents, KubeLease
from autoroll.core.model import RollEvent, WorkloadKind

class Answer:
    status, reason = 200, "OK"
    def __init__(self, data): self.data = data; self.response = None
    def read(self): return self.data

class ApiClient:
    def param_serialize(self, **kw): return (kw["resource_path"],)
    def call_api(self, path, _request_timeout):
        if path.endswith("/deployments"):
            return Answer(b'{"items": [{"metadata": {"name": "web", "namespace": "shop"},'
                          b' "spec": {"selector": {"matchLabels": {"app": "web"}}}}]}')
        return Answer(b'{"items": []}')

cluster = KubeCluster(label_selector="x", api_client_factory=ApiClient)
assert [e.workload.name for e in cluster.snapshot()] == ["web"]
cluster.delete_pod("shop", "web-1", "uid-1")
KubeEvents(instance="a", api_client_factory=ApiClient).emit(
    RollEvent("shop", WorkloadKind.DEPLOYMENT, "web", "uid-web", "StalePodDeleted", "x")
)
lease = KubeLease(namespace="autoroll", name="rel", api_client_factory=ApiClient)
lease.get()
lease.publish_nudge("v")
loaded = [m for m in sys.modules if m.startswith("kubernetes.client.api.")]
assert not loaded, loaded
"""
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("status", [401])
def test_a_401_is_rejected_credentials_not_a_missing_rbac_rule(status: int) -> None:
    cluster = KubeCluster(label_selector="x", rest=FakeRest(list_error=status))
    with pytest.raises(ClusterUnauthorizedError) as info:
        cluster.snapshot()
    assert not isinstance(info.value, ClusterForbiddenError)
    message = str(info.value)
    assert message.startswith("list deployments (all namespaces): 401")
    assert "rejected the controller's credentials" in message
    assert "ClusterRole" not in message and "must grant" not in message


# --- platform awareness: the Nodes' metadata, once per pass -----------------------------------


class NodesRest(FakeRest):
    """``FakeRest`` that also answers the Node metadata list (or fails it with ``nodes``)."""

    def __init__(self, *args: Any, nodes: int | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.node_status = nodes
        self.node_requests: list[dict[str, Any]] = []
        original = self._route

        def route(method: str, path: str, request: dict[str, Any]) -> Reply:
            if path != "/api/v1/nodes":
                return original(method, path, request)
            self.node_requests.append(request)
            if self.node_status is not None:
                return self.node_status, status_body(self.node_status)
            items = [
                {
                    "metadata": {
                        "name": "amd",
                        "labels": {"kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64"},
                    }
                },
                {
                    "metadata": {
                        "name": "arm",
                        "labels": {"kubernetes.io/os": "linux", "kubernetes.io/arch": "arm64"},
                    }
                },
            ]
            return 200, json.dumps({"kind": "PartialObjectMetadataList", "items": items}).encode()

        self._client.router = route


def bound(name: str, node_name: str) -> client.V1Pod:
    pod = k8s_pod(name)
    assert pod.spec is not None
    pod.spec.node_name = node_name
    return pod


def test_platform_aware_lists_node_metadata_once_and_gives_pods_their_platform() -> None:
    rest = NodesRest([k8s_deployment("web")], [bound("web-1", "amd"), bound("web-2", "arm")])
    cluster = KubeCluster(label_selector="x", rest=rest, platform_aware=True)
    [enrolled] = cluster.snapshot()
    assert {p.name: p.platform for p in enrolled.pods} == {
        "web-1": "linux/amd64",
        "web-2": "linux/arm64",
    }
    [request] = rest.node_requests
    # metadata only: a Node's status lists every image on it; labels are all a pass reads
    assert request["header_params"]["Accept"].startswith(
        "application/json;as=PartialObjectMetadataList"
    )
    assert request["method"] == "GET"
    assert cluster.requests == len(cluster.kinds) + 1 + 1  # the kinds, the nodes, one namespace


def test_without_platform_awareness_no_node_is_listed() -> None:
    rest = NodesRest([k8s_deployment("web")], [bound("web-1", "amd")])
    [enrolled] = KubeCluster(label_selector="x", rest=rest).snapshot()
    assert rest.node_requests == []
    assert enrolled.pods[0].platform is None


def test_nothing_enrolled_lists_no_nodes() -> None:
    rest = NodesRest()
    assert KubeCluster(label_selector="x", rest=rest, platform_aware=True).snapshot() == ()
    assert rest.node_requests == []


def test_a_forbidden_node_list_names_the_rule_and_the_setting() -> None:
    rest = NodesRest([k8s_deployment("web")], [bound("web-1", "amd")], nodes=403)
    with pytest.raises(ClusterForbiddenError, match=r"nodes: list \(PLATFORM_AWARE=true\)"):
        KubeCluster(label_selector="x", rest=rest, platform_aware=True).snapshot()


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
