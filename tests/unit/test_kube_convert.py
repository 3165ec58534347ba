"""The Kubernetes adapter's pure conversions, without an API server: selectors, JSON → views.

The fixtures are written with the client's own models and serialised to the JSON an API
server sends, to keep the conversions (``autoroll.kube.selectors``, ``workloads``, ``pods``,
``lists``) aligned with the client's field names.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kubernetes import client

from autoroll.core.model import ContainerStatusView, ContainerView, DeploymentStatus, WorkloadKind
from autoroll.kube.lists import list_items
from autoroll.kube.nodes import node_platforms
from autoroll.kube.pods import TEMPLATE_HASH_LABEL, ListedPod, group_pods, pod_from_json
from autoroll.kube.selectors import (
    LabelSelector,
    Operator,
    Requirement,
    SelectorIndex,
    pod_list_selector,
    selector_from_json,
    selector_matches,
    selector_query,
)
from autoroll.kube.workloads import default_pull_policy, deployment_from_json

T0 = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
#: Turns the client's models into the JSON the API server sends (camelCase keys, RFC 3339
#: times): the fixtures below are written with the models for readability only.
SERIALIZER = client.ApiClient()
IMAGE = "git.example.org/team/app:latest"
DIGEST = "sha256:" + "a" * 64
#: The pod-template-hash of every fixture Deployment's one ReplicaSet.
HASH = "6b8d4f7c9"


def k8s_deployment(
    name: str = "web",
    namespace: str = "shop",
    *,
    replicas: int | None = 2,
    match_labels: dict[str, str] | None = None,
    expressions: list[client.V1LabelSelectorRequirement] | None = None,
    containers: list[client.V1Container] | None = None,
    status: client.V1DeploymentStatus | None = None,
) -> client.V1Deployment:
    """A Deployment as its controller leaves it once rolled out (``status`` overrides)."""
    done = client.V1DeploymentStatus(
        observed_generation=3,
        replicas=replicas,
        updated_replicas=replicas,
        ready_replicas=replicas,
        available_replicas=replicas,
    )
    return client.V1Deployment(
        metadata=client.V1ObjectMeta(
            name=name,
            namespace=namespace,
            uid=f"uid-{name}",
            generation=3,
            labels={"aethnet.se/autoroll": "true"},
        ),
        status=status if status is not None else done,
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
    deployment: str | None = "",
) -> client.V1Pod:
    """A pod of Deployment ``deployment`` (by default the one its ``app`` label names):
    controlled by that Deployment's ReplicaSet ``<deployment>-<HASH>`` and labelled with its
    ``pod-template-hash``, as the ReplicaSet controller makes it; None: no controller."""
    found = dict(labels if labels is not None else {"app": "web"})
    owner = found.get("app") if deployment == "" else deployment
    references = None
    if owner:
        found[TEMPLATE_HASH_LABEL] = HASH
        references = [
            client.V1OwnerReference(
                api_version="apps/v1",
                kind="ReplicaSet",
                name=f"{owner}-{HASH}",
                uid=f"uid-rs-{owner}",
                controller=True,
            )
        ]
    return client.V1Pod(
        metadata=client.V1ObjectMeta(
            name=name,
            namespace=namespace,
            uid=f"uid-{name}",
            labels=found,
            creation_timestamp=created,
            deletion_timestamp=T0 if deleted else None,
            owner_references=references,
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


def pod_of(model: client.V1Pod) -> ListedPod:
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
    assert view.key == "shop/deployment/web"
    assert view.kind is WorkloadKind.DEPLOYMENT
    assert view.status == DeploymentStatus(
        observed_generation=3,
        replicas=2,
        updated_replicas=2,
        ready_replicas=2,
        available_replicas=2,
    )
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
    listed = pod_of(k8s_pod("web-1"))
    pod, labels = listed.view, listed.labels
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
    assert labels == {"app": "web", "pod-template-hash": HASH}


def test_pod_readiness_comes_from_the_ready_condition() -> None:
    pod = pod_of(k8s_pod("web-1", ready="False")).view
    assert pod.ready is False


def test_the_ready_condition_s_last_transition_is_when_readiness_changed() -> None:
    # The halted-rollout bound counts from it (autoroll.core.halt).
    raw = k8s_pod("web-1", ready="False")
    assert raw.status is not None and raw.status.conditions is not None
    raw.status.conditions[0].last_transition_time = datetime(2026, 1, 1, 7, 0, tzinfo=UTC)
    raw.status.conditions[1].last_transition_time = datetime(2026, 1, 1, 8, 30, tzinfo=UTC)
    pod = pod_of(raw).view
    assert pod.ready_changed_at == datetime(2026, 1, 1, 8, 30, tzinfo=UTC)


def test_a_missing_or_unreadable_ready_transition_is_none() -> None:
    pod = pod_of(k8s_pod("web-1")).view
    assert pod.ready_changed_at is None
    raw = as_json(k8s_pod("web-1"))
    raw["status"]["conditions"][1]["lastTransitionTime"] = "yesterday"
    assert pod_from_json(raw).view.ready_changed_at is None


def test_a_pod_with_a_deletion_timestamp_is_deleting() -> None:
    pod = pod_of(k8s_pod("web-1", deleted=True)).view
    assert pod.deleting is True


def test_a_pod_not_yet_reporting_has_empty_image_id_and_pending_phase() -> None:
    raw = k8s_pod("web-1", image_id="", phase=None)
    assert raw.status is not None
    raw.status.conditions = None
    pod = pod_of(raw).view
    assert pod.statuses[0].image_id == ""
    assert pod.phase == "Pending"
    assert pod.ready is False


def test_a_pod_without_status_converts() -> None:
    raw = k8s_pod("web-1")
    raw.status = None
    pod = pod_of(raw).view
    assert pod.statuses == ()
    assert pod.ready is False


def test_a_naive_creation_time_is_read_as_utc() -> None:
    pod = pod_of(k8s_pod("web-1", created=datetime(2026, 1, 1, 8, 0))).view
    assert pod.created_at == datetime(2026, 1, 1, 8, 0, tzinfo=UTC)


def test_a_missing_creation_time_reads_as_the_far_future() -> None:
    # The loop guard then spares the pod: the safe direction for data we never expect.
    pod = pod_of(k8s_pod("web-1", created=None)).view
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
        e.workload.key: [p.name for p in e.pods] for e in group_pods([web, api, other_ns], pods)
    }
    assert enrolled == {
        "shop/deployment/web": ["web-1", "web-2"],
        "shop/deployment/api": ["api-1"],
        "blog/deployment/web": ["web-x"],
    }


def test_a_deployment_without_pods_is_still_listed() -> None:
    [only] = group_pods([deployment_of(k8s_deployment())], [])
    assert only.pods == ()


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


# --- the guardrails' inputs: annotations on the object, the node's platform -------------------


def test_only_autoroll_annotations_of_the_object_are_kept() -> None:
    raw = as_json(k8s_deployment())
    raw["metadata"]["annotations"] = {
        "autoroll.aethnet.se/paused": "true",
        "autoroll.aethnet.se/window": "Sat 02:00-04:00 UTC",
        "kubectl.kubernetes.io/last-applied-configuration": "{" + "x" * 10000 + "}",
    }
    raw["spec"]["template"]["metadata"] = {"annotations": {"autoroll.aethnet.se/paused": "false"}}
    view, _ = deployment_from_json(raw)
    assert view.annotations == (
        ("autoroll.aethnet.se/paused", "true"),
        ("autoroll.aethnet.se/window", "Sat 02:00-04:00 UTC"),
    )


def node(name: str, labels: dict[str, str] | None) -> dict[str, Any]:
    """A Node as a metadata-only list returns it (PartialObjectMetadata)."""
    meta: dict[str, Any] = {"name": name}
    if labels is not None:
        meta["labels"] = labels
    return {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": meta}


def test_node_platforms_come_from_the_well_known_labels() -> None:
    nodes = [
        node("a", {"kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64"}),
        node("b", {"kubernetes.io/os": "linux", "kubernetes.io/arch": "arm64", "x": "y"}),
        node("c", {"kubernetes.io/os": "linux"}),  # no arch: unknown
        node("d", None),
        node("e", {"kubernetes.io/os": "linux", "kubernetes.io/arch": "arm/v7"}),  # not a label
    ]
    assert node_platforms(nodes) == {"a": "linux/amd64", "b": "linux/arm64"}


def test_a_pod_gets_the_platform_of_the_node_it_is_bound_to() -> None:
    raw = as_json(k8s_pod("web-1"))
    raw["spec"]["nodeName"] = "b"
    platforms = {"a": "linux/amd64", "b": "linux/arm64"}
    assert pod_from_json(raw, platforms=platforms).view.platform == "linux/arm64"
    assert pod_from_json(raw).view.platform is None  # not platform-aware
    raw["spec"]["nodeName"] = "gone"
    assert pod_from_json(raw, platforms=platforms).view.platform is None
    del raw["spec"]["nodeName"]  # not scheduled yet
    assert pod_from_json(raw, platforms=platforms).view.platform is None


@settings(max_examples=400, deadline=None)
@given(
    selectors=st.lists(SELECTORS, min_size=1, max_size=5),
    removed=st.sets(st.integers(0, 4), max_size=2),
    labels=st.dictionaries(KEYS, VALUES, max_size=3),
)
def test_the_selector_index_finds_exactly_the_selectors_that_match(
    selectors: list[LabelSelector], removed: set[int], labels: dict[str, str]
) -> None:
    index = SelectorIndex()
    for n, selector in enumerate(selectors):
        index.add(f"w{n}", selector)
    index.add("w0", selectors[-1])  # filed again under another selector: the old one is gone
    kept = {f"w{n}": s for n, s in enumerate(selectors)} | {"w0": selectors[-1]}
    for n in removed:
        index.remove(f"w{n}")
        kept.pop(f"w{n}", None)
    assert len(index) == len(kept)
    assert index.matching(labels) == {k for k, s in kept.items() if selector_matches(s, labels)}


@pytest.mark.parametrize(
    ("selector", "query"),
    [
        (LabelSelector((("app", "web"), ("tier", "front"))), "app=web,tier=front"),
        (
            LabelSelector(
                (),
                (
                    Requirement("app", Operator.IN, frozenset({"b", "a"})),
                    Requirement("env", Operator.NOT_IN, frozenset({"prod"})),
                    Requirement("tier", Operator.EXISTS),
                    Requirement("canary", Operator.DOES_NOT_EXIST),
                ),
            ),
            "app in (a,b),env notin (prod),tier,!canary",
        ),
    ],
)
def test_selector_query_renders_the_exact_selector(selector: LabelSelector, query: str) -> None:
    assert selector_query(selector) == query
