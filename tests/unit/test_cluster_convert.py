"""The Kubernetes adapter without an API server: conversions, selector matching, thin I/O."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kubernetes import client
from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import MaxRetryError, NewConnectionError

from autoroll.cluster import (
    LIVE_PODS_FIELD_SELECTOR,
    REQUEST_TIMEOUT,
    ClusterApiError,
    ClusterConfigError,
    ClusterForbiddenError,
    ClusterUnreachableError,
    DeleteOutcome,
    KubeCluster,
    KubeRest,
    LabelSelector,
    Operator,
    Requirement,
    connect,
    default_pull_policy,
    deployment_from_json,
    group_pods,
    list_items,
    pod_from_json,
    pod_list_selector,
    selector_from_json,
    selector_matches,
)
from autoroll.model import ContainerStatusView, ContainerView

T0 = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
#: Turns the client's models into the JSON the API server sends (camelCase keys, RFC 3339
#: times): the fixtures below are written with the models for readability only.
SERIALIZER = client.ApiClient()
IMAGE = "git.example.org/team/app:latest"
DIGEST = "sha256:" + "a" * 64


def k8s_deployment(
    name: str = "web",
    namespace: str = "shop",
    *,
    replicas: int | None = 2,
    match_labels: dict[str, str] | None = None,
    expressions: list[client.V1LabelSelectorRequirement] | None = None,
    containers: list[client.V1Container] | None = None,
) -> client.V1Deployment:
    return client.V1Deployment(
        metadata=client.V1ObjectMeta(
            name=name,
            namespace=namespace,
            uid=f"uid-{name}",
            generation=3,
            labels={"aethnet.se/autoroll": "true"},
        ),
        spec=client.V1DeploymentSpec(
            replicas=replicas,
            selector=client.V1LabelSelector(
                match_labels=match_labels if match_labels is not None else {"app": name},
                match_expressions=expressions,
            ),
            template=client.V1PodTemplateSpec(
                spec=client.V1PodSpec(
                    containers=containers
                    or [client.V1Container(name="app", image=IMAGE, image_pull_policy="Always")]
                )
            ),
        ),
    )


def k8s_pod(
    name: str,
    namespace: str = "shop",
    *,
    labels: dict[str, str] | None = None,
    ready: str = "True",
    phase: str | None = "Running",
    image_id: str = f"{IMAGE}@{DIGEST}",
    deleted: bool = False,
    created: datetime | None = T0,
) -> client.V1Pod:
    return client.V1Pod(
        metadata=client.V1ObjectMeta(
            name=name,
            namespace=namespace,
            uid=f"uid-{name}",
            labels=labels if labels is not None else {"app": "web"},
            creation_timestamp=created,
            deletion_timestamp=T0 if deleted else None,
        ),
        spec=client.V1PodSpec(
            containers=[client.V1Container(name="app", image=IMAGE, image_pull_policy="Always")]
        ),
        status=client.V1PodStatus(
            phase=phase,
            conditions=[
                client.V1PodCondition(type="PodScheduled", status="True"),
                client.V1PodCondition(type="Ready", status=ready),
            ],
            container_statuses=[
                client.V1ContainerStatus(
                    name="app",
                    image=IMAGE,
                    image_id=image_id,
                    ready=ready == "True",
                    restart_count=2,
                )
            ],
        ),
    )


def as_json(model: Any) -> Any:
    return json.loads(json.dumps(SERIALIZER.sanitize_for_serialization(model)))  # type: ignore[no-untyped-call]


def deployment_of(model: client.V1Deployment) -> tuple[Any, LabelSelector]:
    return deployment_from_json(as_json(model))


def pod_of(model: client.V1Pod) -> tuple[Any, Any]:
    return pod_from_json(as_json(model))


def selector_of(model: client.V1LabelSelector) -> LabelSelector:
    return selector_from_json(as_json(model))


# --- selector matching -----------------------------------------------------------------------


def req(key: str, op: str, *values: str) -> Requirement:
    return Requirement(key, Operator(op), frozenset(values))


@pytest.mark.parametrize(
    ("selector", "labels", "expected"),
    [
        (LabelSelector((("app", "web"),)), {"app": "web", "x": "y"}, True),
        (LabelSelector((("app", "web"),)), {"app": "api"}, False),
        (LabelSelector((("app", "web"),)), {}, False),
        (LabelSelector((("app", "web"), ("tier", "fe"))), {"app": "web"}, False),
        (LabelSelector((), (req("env", "In", "prod", "stage"),)), {"env": "stage"}, True),
        (LabelSelector((), (req("env", "In", "prod"),)), {"env": "dev"}, False),
        (LabelSelector((), (req("env", "In", "prod"),)), {}, False),
        (LabelSelector((), (req("env", "NotIn", "dev"),)), {"env": "prod"}, True),
        (LabelSelector((), (req("env", "NotIn", "dev"),)), {}, True),
        (LabelSelector((), (req("env", "NotIn", "dev"),)), {"env": "dev"}, False),
        (LabelSelector((), (req("canary", "Exists"),)), {"canary": ""}, True),
        (LabelSelector((), (req("canary", "Exists"),)), {}, False),
        (LabelSelector((), (req("canary", "DoesNotExist"),)), {}, True),
        (LabelSelector((), (req("canary", "DoesNotExist"),)), {"canary": "1"}, False),
        # labels and expressions must all hold
        (
            LabelSelector((("app", "web"),), (req("canary", "DoesNotExist"),)),
            {"app": "web", "canary": "1"},
            False,
        ),
        # an empty selector adopts nothing (the API would say "everything")
        (LabelSelector(), {"app": "web"}, False),
    ],
)
def test_selector_matches(selector: LabelSelector, labels: dict[str, str], expected: bool) -> None:
    assert selector_matches(selector, labels) is expected


def test_selector_from_client_reads_labels_and_expressions() -> None:
    selector = selector_of(
        client.V1LabelSelector(
            match_labels={"b": "2", "a": "1"},
            match_expressions=[
                client.V1LabelSelectorRequirement(key="env", operator="In", values=["x", "y"]),
                client.V1LabelSelectorRequirement(key="gone", operator="DoesNotExist"),
            ],
        )
    )
    assert selector == LabelSelector(
        (("a", "1"), ("b", "2")),
        (req("env", "In", "x", "y"), req("gone", "DoesNotExist")),
    )
    assert selector_from_json(None).is_empty


def test_an_unknown_selector_operator_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match="'Near'"):
        selector_of(
            client.V1LabelSelector(
                match_expressions=[
                    client.V1LabelSelectorRequirement(key="a", operator="Near", values=["b"])
                ]
            )
        )


# --- conversions -----------------------------------------------------------------------------


def test_deployment_conversion_keeps_what_the_core_needs() -> None:
    view, selector = deployment_of(
        k8s_deployment(
            containers=[
                client.V1Container(name="app", image=IMAGE, image_pull_policy="Always"),
                client.V1Container(
                    name="sidecar", image="docker.io/envoy:v1", image_pull_policy="IfNotPresent"
                ),
            ]
        )
    )
    assert view.key == "shop/web"
    assert view.replicas == 2
    assert view.uid == "uid-web"
    assert view.generation == 3
    assert view.labels == (("aethnet.se/autoroll", "true"),)
    assert view.containers == (
        ContainerView("app", IMAGE, "Always"),
        ContainerView("sidecar", "docker.io/envoy:v1", "IfNotPresent"),
    )
    assert selector == LabelSelector((("app", "web"),))


def test_replicas_default_to_one_as_the_api_does() -> None:
    view, _ = deployment_of(k8s_deployment(replicas=None))
    assert view.replicas == 1


def test_zero_replicas_stay_zero() -> None:
    view, _ = deployment_of(k8s_deployment(replicas=0))
    assert view.replicas == 0


@pytest.mark.parametrize(
    ("image", "policy"),
    [
        ("git.example.org/team/app", "Always"),
        ("git.example.org/team/app:latest", "Always"),
        ("git.example.org/team/app:v1", "IfNotPresent"),
        (f"git.example.org/team/app@{DIGEST}", "IfNotPresent"),
        ("Not An Image", ""),
    ],
)
def test_a_missing_pull_policy_gets_the_api_default(image: str, policy: str) -> None:
    assert default_pull_policy(image) == policy
    view, _ = deployment_of(
        k8s_deployment(containers=[client.V1Container(name="app", image=image)])
    )
    assert view.containers[0].image_pull_policy == policy


def test_pod_conversion_reads_status_and_conditions() -> None:
    pod, labels = pod_of(k8s_pod("web-1"))
    assert (pod.namespace, pod.name, pod.uid) == ("shop", "web-1", "uid-web-1")
    assert pod.created_at == T0
    assert pod.phase == "Running"
    assert pod.ready is True
    assert pod.deleting is False
    assert pod.containers == (ContainerView("app", IMAGE, "Always"),)
    assert pod.statuses == (
        ContainerStatusView(
            name="app", image=IMAGE, image_id=f"{IMAGE}@{DIGEST}", ready=True, restart_count=2
        ),
    )
    assert labels == {"app": "web"}


def test_pod_readiness_comes_from_the_ready_condition() -> None:
    pod, _ = pod_of(k8s_pod("web-1", ready="False"))
    assert pod.ready is False


def test_a_pod_with_a_deletion_timestamp_is_deleting() -> None:
    pod, _ = pod_of(k8s_pod("web-1", deleted=True))
    assert pod.deleting is True


def test_a_pod_not_yet_reporting_has_empty_image_id_and_pending_phase() -> None:
    raw = k8s_pod("web-1", image_id="", phase=None)
    assert raw.status is not None
    raw.status.conditions = None
    pod, _ = pod_of(raw)
    assert pod.statuses[0].image_id == ""
    assert pod.phase == "Pending"
    assert pod.ready is False


def test_a_pod_without_status_converts() -> None:
    raw = k8s_pod("web-1")
    raw.status = None
    pod, _ = pod_of(raw)
    assert pod.statuses == ()
    assert pod.ready is False


def test_a_naive_creation_time_is_read_as_utc() -> None:
    pod, _ = pod_of(k8s_pod("web-1", created=datetime(2026, 1, 1, 8, 0)))
    assert pod.created_at == datetime(2026, 1, 1, 8, 0, tzinfo=UTC)


def test_a_missing_creation_time_reads_as_the_far_future() -> None:
    # The loop guard then spares the pod: the safe direction for data we never expect.
    pod, _ = pod_of(k8s_pod("web-1", created=None))
    assert pod.created_at > datetime(9000, 1, 1, tzinfo=UTC)


def test_group_pods_matches_by_selector_within_the_namespace_only() -> None:
    web = deployment_of(k8s_deployment("web"))
    api = deployment_of(k8s_deployment("api"))
    other_ns = deployment_of(k8s_deployment("web", namespace="blog"))
    pods = [
        pod_of(k8s_pod("web-2")),
        pod_of(k8s_pod("web-1")),
        pod_of(k8s_pod("api-1", labels={"app": "api"})),
        pod_of(k8s_pod("stray", labels={"app": "other"})),
        pod_of(k8s_pod("web-x", namespace="blog")),
    ]
    enrolled = {
        e.deployment.key: [p.name for p in e.pods] for e in group_pods([web, api, other_ns], pods)
    }
    assert enrolled == {
        "shop/web": ["web-1", "web-2"],
        "shop/api": ["api-1"],
        "blog/web": ["web-x"],
    }


def test_a_deployment_without_pods_is_still_listed() -> None:
    [only] = group_pods([deployment_of(k8s_deployment())], [])
    assert only.pods == ()


# --- thin I/O through a hand-written fake REST port ------------------------------------------


class FakeRest:
    """Stands in for ``KubeRest``: answers lists from fixtures, records every call."""

    def __init__(
        self,
        deployments: list[client.V1Deployment] | None = None,
        pods: list[client.V1Pod] | None = None,
        *,
        error: Exception | None = None,
        list_error: Exception | None = None,
        body: bytes | None = None,
    ) -> None:
        self.deployments = deployments or []
        self.pods = pods or []
        self.error = error  # raised by delete and evict
        self.list_error = list_error  # raised by the Deployment list
        self.body = body  # replaces the Deployment list's answer
        self.calls: list[dict[str, Any]] = []
        self.list_calls: list[str] = []
        self.list_kwargs: list[dict[str, Any]] = []
        self.deleted: list[tuple[str, str, str]] = []
        self.evicted: list[tuple[str, str, str]] = []

    def list_deployments(self, **kwargs: Any) -> bytes:
        self.calls.append(kwargs)
        if self.list_error is not None:
            raise self.list_error
        return self.body if self.body is not None else raw_list(self.deployments)

    def list_pods(self, namespace: str, **kwargs: Any) -> bytes:
        self.list_calls.append(namespace)
        self.list_kwargs.append(kwargs)
        return raw_list([p for p in self.pods if p.metadata and p.metadata.namespace == namespace])

    def delete_pod(self, namespace: str, name: str, *, uid: str, timeout: Any) -> None:
        if self.error is not None:
            raise self.error
        self.deleted.append((namespace, name, uid))

    def evict_pod(self, namespace: str, name: str, *, uid: str, timeout: Any) -> None:
        if self.error is not None:
            raise self.error
        self.evicted.append((namespace, name, uid))


def raw_list(items: list[Any]) -> bytes:
    return json.dumps({"kind": "List", "items": [as_json(i) for i in items]}).encode()


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
    assert cluster.requests == 1 + 2
    assert all(k["field_selector"] == LIVE_PODS_FIELD_SELECTOR for k in rest.list_kwargs)
    assert all(k["timeout"] == REQUEST_TIMEOUT for k in [*rest.calls, *rest.list_kwargs])
    assert [(e.deployment.key, len(e.pods)) for e in snapshot] == [
        ("blog/web", 1),
        ("shop/api", 1),
        ("shop/web", 1),
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
    assert [e.deployment.name for e in cluster.snapshot()] == ["web"]


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
    rest = FakeRest(error=ApiException(status=status, reason="x"))
    cluster = KubeCluster(label_selector="x", rest=rest)
    assert cluster.delete_pod("shop", "web-1", "uid-1") is outcome


def test_a_forbidden_delete_names_the_missing_verb() -> None:
    rest = FakeRest(error=ApiException(status=403, reason="Forbidden"))
    cluster = KubeCluster(label_selector="x", rest=rest)
    with pytest.raises(ClusterForbiddenError, match="pods: delete"):
        cluster.delete_pod("shop", "web-1", "uid-1")


def test_a_server_error_on_delete_is_a_cluster_api_error() -> None:
    rest = FakeRest(error=ApiException(status=500, reason="Internal"))
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
    denied = ApiException(status=403, reason="Forbidden")
    cluster = KubeCluster(label_selector="x", rest=FakeRest(list_error=denied))
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
    rest = FakeRest(error=ApiException(status=429, reason="Too Many Requests"))
    cluster = KubeCluster(label_selector="x", rest=rest, evict=True)
    assert cluster.delete_pod("shop", "web-1", "uid-1") is DeleteOutcome.BLOCKED


def test_a_forbidden_eviction_names_the_eviction_verb() -> None:
    rest = FakeRest(error=ApiException(status=403, reason="Forbidden"))
    cluster = KubeCluster(label_selector="x", rest=rest, evict=True)
    with pytest.raises(ClusterForbiddenError, match="pods/eviction: create"):
        cluster.delete_pod("shop", "web-1", "uid-1")


# --- narrowing each namespace's pod list ---------------------------------------------------------


def labels_selector(**labels: str) -> LabelSelector:
    return LabelSelector(tuple(sorted(labels.items())))


@pytest.mark.parametrize(
    ("selectors", "expected"),
    [
        ([labels_selector(app="web")], "app in (web)"),
        ([labels_selector(app="web"), labels_selector(app="api")], "app in (api,web)"),
        # a key every selector pins; the others are ignored
        ([labels_selector(app="web", tier="fe"), labels_selector(app="api")], "app in (api,web)"),
        # two pinned keys: the one with fewer values
        (
            [labels_selector(app="shop", instance="a"), labels_selector(app="shop", instance="b")],
            "app in (shop)",
        ),
        # In pins a key too, and unions with matchLabels
        (
            [LabelSelector((), (req("env", "In", "a", "b"),)), labels_selector(env="c")],
            "env in (a,b,c)",
        ),
        # matchLabels and In on one key must both hold: their intersection
        ([LabelSelector((("env", "a"),), (req("env", "In", "a", "b"),))], "env in (a)"),
        # no key common to all: the namespace is listed whole
        ([labels_selector(app="web"), labels_selector(name="api")], None),
        # only Exists / NotIn / DoesNotExist: nothing finite to ask for
        ([LabelSelector((), (req("app", "Exists"),))], None),
        ([LabelSelector((), (req("app", "NotIn", "x"),))], None),
        ([LabelSelector()], None),
        ([], None),
        # an empty value cannot be written in the set syntax
        ([labels_selector(app="")], None),
        # a selector that can match nothing (disjoint matchLabels and In) narrows to nothing
        ([LabelSelector((("env", "a"),), (req("env", "In", "b"),))], None),
        # too long for a URL: listed whole
        ([labels_selector(app="x" * 60 + str(i)) for i in range(200)], None),
    ],
)
def test_pod_list_selector(selectors: list[LabelSelector], expected: str | None) -> None:
    assert pod_list_selector(selectors) == expected


KEYS = st.sampled_from(["app", "tier", "env"])
VALUES = st.sampled_from(["a", "b", "c"])
REQUIREMENTS = st.builds(
    Requirement, KEYS, st.sampled_from(list(Operator)), st.frozensets(VALUES, min_size=1)
)
SELECTORS = st.builds(
    LabelSelector,
    st.dictionaries(KEYS, VALUES, max_size=2).map(lambda d: tuple(sorted(d.items()))),
    st.lists(REQUIREMENTS, max_size=2).map(tuple),
)


def narrowing_admits(narrowing: str, labels: dict[str, str]) -> bool:
    key, _, rest = narrowing.partition(" in (")
    return labels.get(key) in rest.rstrip(")").split(",")


@settings(max_examples=400, deadline=None)
@given(
    selectors=st.lists(SELECTORS, min_size=1, max_size=4),
    labels=st.dictionaries(KEYS, VALUES, max_size=3),
)
def test_narrowing_never_hides_a_pod_some_selector_matches(
    selectors: list[LabelSelector], labels: dict[str, str]
) -> None:
    narrowing = pod_list_selector(selectors)
    if narrowing is not None and any(selector_matches(s, labels) for s in selectors):
        assert narrowing_admits(narrowing, labels), (narrowing, labels)


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


# --- KubeRest: the requests themselves, through a recording ApiClient ---------------------------


class RecordedResponse:
    """What ``ApiClient.call_api`` returns: status, reason, a body to read, a connection."""

    def __init__(self, status: int, data: bytes) -> None:
        self.status, self.reason, self._data = status, "Reason", data
        self.response = self
        self.released = False

    def read(self) -> bytes:
        return self._data

    def release_conn(self) -> None:
        self.released = True


class RecordingApiClient:
    def __init__(self, status: int = 200, data: bytes = b'{"items": []}') -> None:
        self.serialized: list[dict[str, Any]] = []
        self.timeouts: list[Any] = []
        self.responses: list[RecordedResponse] = []
        self.status, self.data = status, data

    def param_serialize(self, **kwargs: Any) -> tuple[Any, ...]:
        self.serialized.append(kwargs)
        return (kwargs["method"], kwargs["resource_path"])

    def call_api(self, method: str, path: str, *, _request_timeout: Any) -> RecordedResponse:
        self.timeouts.append(_request_timeout)
        self.responses.append(RecordedResponse(self.status, self.data))
        return self.responses[-1]


def test_rest_lists_send_the_selectors_as_query_parameters() -> None:
    api = RecordingApiClient()
    rest = KubeRest(api)
    assert rest.list_deployments(label_selector="a=b", timeout=(1, 2)) == b'{"items": []}'
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
    assert all(r.released for r in api.responses)


def test_rest_delete_and_evict_carry_the_uid_precondition() -> None:
    api = RecordingApiClient(data=b"{}")
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


@pytest.mark.parametrize("status", [403, 404, 409, 429, 500])
def test_rest_raises_the_answers_status_and_frees_the_connection(status: int) -> None:
    api = RecordingApiClient(status=status, data=b'{"kind": "Status"}')
    with pytest.raises(ApiException) as info:
        KubeRest(api).delete_pod("shop", "web-1", uid="u1", timeout=(1, 2))
    assert info.value.status == status
    assert api.responses[0].released


def test_a_pass_and_its_events_never_import_the_generated_api_classes() -> None:
    # They pull in a few hundred model modules (about 26 MB); a pass needs none of them.
    probe = """
import sys
from autoroll.cluster import KubeCluster, KubeEvents, RollEvent

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
assert [e.deployment.name for e in cluster.snapshot()] == ["web"]
cluster.delete_pod("shop", "web-1", "uid-1")
KubeEvents(instance="a", api_client_factory=ApiClient).emit(
    RollEvent("shop", "web", "uid-web", "StalePodDeleted", "deleted web-1")
)
loaded = [m for m in sys.modules if m.startswith("kubernetes.client.api.")]
assert not loaded, loaded
"""
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr


def test_list_items_drops_managed_fields_and_keeps_the_rest() -> None:
    body = json.dumps(
        {
            "kind": "PodList",
            "items": [
                {"metadata": {"name": "a", "managedFields": [{"manager": "kubelet"}]}, "spec": {}},
                "not an object",
            ],
        }
    )
    assert list_items(body) == [{"metadata": {"name": "a"}, "spec": {}}]
    assert list_items(b'{"kind": "PodList", "items": null}') == []


@pytest.mark.parametrize(
    ("body", "problem"),
    [(b"<html>", "not JSON"), (b'{"items": {"a": 1}}', "items are not a list")],
)
def test_list_items_refuses_what_is_not_a_list_answer(body: bytes, problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        list_items(body)
