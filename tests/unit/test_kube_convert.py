"""The Kubernetes adapter's pure conversions, without an API server: selectors, JSON → views.

The fixtures are written with the client's own models and serialised to the JSON an API
server sends, to keep the conversions (``autoroll.kube.selectors``, ``workloads``, ``pods``,
``lists``) aligned with the client's field names (``tests.support.kube_models``). Narrowing the
pod lists is in ``test_kube_convert_narrowing.py``, the guardrails' inputs in
``test_kube_convert_guardrail_inputs.py``.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from kubernetes import client

from autoroll.core.model import ContainerStatusView, ContainerView, DeploymentStatus, WorkloadKind
from autoroll.kube.pods import group_pods, pod_from_json
from autoroll.kube.selectors import LabelSelector, selector_from_json, selector_matches
from autoroll.kube.workloads import default_pull_policy
from tests.support.kube_models import (
    DIGEST,
    HASH,
    IMAGE,
    T0,
    as_json,
    deployment_of,
    k8s_deployment,
    k8s_pod,
    pod_of,
    req,
    selector_of,
)

# --- selector matching -----------------------------------------------------------------------


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
