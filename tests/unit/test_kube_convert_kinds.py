"""StatefulSet, DaemonSet, pod ownership and Node JSON into views.

(``autoroll.kube.workloads``, ``autoroll.kube.pods``, ``autoroll.kube.nodes``.)

Objects are written with the client's models and serialised as the API server sends them,
so the field names and omissions (zero counts are left out) are the API's own.
"""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes import client

from autoroll.core.model import DaemonSetStatus, StatefulSetStatus, UpdateStrategy, WorkloadKind
from autoroll.kube.nodes import node_from_json
from autoroll.kube.pods import group_pods, owns, pod_from_json
from autoroll.kube.workloads import workload_from_json
from tests.support.kube_models import IMAGE, as_json, k8s_deployment, k8s_pod

TEMPLATE = client.V1PodTemplateSpec(
    metadata=client.V1ObjectMeta(labels={"app": "db"}),
    spec=client.V1PodSpec(
        containers=[client.V1Container(name="app", image=IMAGE, image_pull_policy="Always")]
    ),
)


def k8s_statefulset(
    *,
    strategy: client.V1StatefulSetUpdateStrategy | None = None,
    status: client.V1StatefulSetStatus | None = None,
    replicas: int | None = 3,
) -> dict[str, Any]:
    model = client.V1StatefulSet(
        metadata=client.V1ObjectMeta(name="db", namespace="shop", uid="uid-db", generation=5),
        spec=client.V1StatefulSetSpec(
            replicas=replicas,
            selector=client.V1LabelSelector(match_labels={"app": "db"}),
            service_name="db",
            template=TEMPLATE,
            update_strategy=strategy,
        ),
        status=status,
    )
    return as_json(model)  # type: ignore[no-any-return]


def k8s_daemonset(status: client.V1DaemonSetStatus | None) -> dict[str, Any]:
    model = client.V1DaemonSet(
        metadata=client.V1ObjectMeta(name="agent", namespace="shop", uid="uid-agent", generation=2),
        spec=client.V1DaemonSetSpec(
            selector=client.V1LabelSelector(match_labels={"app": "db"}), template=TEMPLATE
        ),
        status=status,
    )
    return as_json(model)  # type: ignore[no-any-return]


def owned(model: client.V1Pod, uid: str, *, controller: bool = True) -> dict[str, Any]:
    document: dict[str, Any] = as_json(model)
    document["metadata"]["ownerReferences"] = [
        {"apiVersion": "apps/v1", "kind": "X", "name": "x", "uid": uid, "controller": controller}
    ]
    return document


def test_a_statefulset_carries_its_strategy_partition_and_status() -> None:
    document = k8s_statefulset(
        strategy=client.V1StatefulSetUpdateStrategy(
            type="RollingUpdate",
            rolling_update=client.V1RollingUpdateStatefulSetStrategy(partition=2),
        ),
        status=client.V1StatefulSetStatus(
            replicas=3,
            ready_replicas=2,
            observed_generation=5,
            current_revision="db-1",
            update_revision="db-2",
        ),
    )
    view, selector = workload_from_json(WorkloadKind.STATEFULSET, document)
    assert (view.key, view.kind, view.replicas, view.generation) == (
        "shop/statefulset/db",
        WorkloadKind.STATEFULSET,
        3,
        5,
    )
    assert view.status == StatefulSetStatus(
        update_strategy=UpdateStrategy.ROLLING_UPDATE,
        partition=2,
        ready_replicas=2,
        observed_generation=5,
        current_revision="db-1",
        update_revision="db-2",
    )
    assert selector.match_labels == (("app", "db"),)


def test_a_new_statefulset_reads_the_api_defaults_and_an_unwritten_status() -> None:
    view, _ = workload_from_json(WorkloadKind.STATEFULSET, k8s_statefulset(replicas=None))
    assert view.replicas == 1
    assert view.status == StatefulSetStatus()  # RollingUpdate, nothing observed yet


def test_an_on_delete_statefulset_is_read_as_such() -> None:
    strategy = client.V1StatefulSetUpdateStrategy(type="OnDelete")
    view, _ = workload_from_json(WorkloadKind.STATEFULSET, k8s_statefulset(strategy=strategy))
    assert isinstance(view.status, StatefulSetStatus)
    assert view.status.update_strategy is UpdateStrategy.ON_DELETE


def test_an_unknown_update_strategy_is_an_error_naming_the_field() -> None:
    document = k8s_statefulset()
    document["spec"]["updateStrategy"] = {"type": "Sometimes"}
    with pytest.raises(ValueError, match=r"spec\.updateStrategy\.type 'Sometimes' is not one of"):
        workload_from_json(WorkloadKind.STATEFULSET, document)


def test_a_daemonset_wants_one_pod_per_scheduled_node_and_omitted_counts_are_zero() -> None:
    status = client.V1DaemonSetStatus(
        current_number_scheduled=3,
        desired_number_scheduled=3,
        number_misscheduled=0,
        number_ready=3,
        updated_number_scheduled=3,
        observed_generation=2,
    )
    document = k8s_daemonset(status)
    assert "numberUnavailable" not in document["status"]  # as the API sends it
    view, _ = workload_from_json(WorkloadKind.DAEMONSET, document)
    assert (view.key, view.replicas) == ("shop/daemonset/agent", 3)
    assert view.status == DaemonSetStatus(
        desired_number_scheduled=3,
        number_ready=3,
        number_available=0,  # omitted: the API leaves out counts that are zero
        number_unavailable=0,
        updated_number_scheduled=3,
        observed_generation=2,
    )


def test_a_daemonset_without_a_status_wants_nothing_yet() -> None:
    view, _ = workload_from_json(WorkloadKind.DAEMONSET, k8s_daemonset(None))
    assert view.replicas == 0
    assert view.status == DaemonSetStatus()


def test_a_pod_carries_its_revision_node_and_controlling_owner() -> None:
    model = k8s_pod("db-0", labels={"app": "db", "controller-revision-hash": "db-1"})
    assert model.spec is not None
    model.spec.node_name = "node-1"
    listed = pod_from_json(owned(model, "uid-db"))
    assert (listed.view.revision, listed.view.node, listed.controller_uid) == (
        "db-1",
        "node-1",
        "uid-db",
    )
    # An owner that does not control the pod is not its controller.
    assert pod_from_json(owned(model, "uid-db", controller=False)).controller_uid == ""
    assert pod_from_json(as_json(k8s_pod("web-1", deployment=None))).controller_uid == ""


def test_every_kind_claims_only_the_pods_it_controls() -> None:
    sts = workload_from_json(WorkloadKind.STATEFULSET, k8s_statefulset())
    web = workload_from_json(WorkloadKind.DEPLOYMENT, as_json(k8s_deployment("web")))
    labels = {"app": "db"}
    job = owned(k8s_pod("web-migrate", labels={"app": "web"}, deployment=None), "uid-job")
    job["metadata"]["ownerReferences"][0].update({"apiVersion": "batch/v1", "kind": "Job"})
    pods = [
        pod_from_json(owned(k8s_pod("db-0", labels=labels, deployment=None), "uid-db")),
        # Matches the selector, but another object controls it (or nothing does).
        pod_from_json(owned(k8s_pod("db-copy", labels=labels), "uid-someone-else")),
        pod_from_json(as_json(k8s_pod("db-bare", labels=labels, deployment=None))),
        pod_from_json(as_json(k8s_pod("web-1"))),  # its ReplicaSet web-<hash>'s
        # web's labels, another Deployment's ReplicaSet; a Job's pod; a bare helm test pod.
        pod_from_json(as_json(k8s_pod("canary-1", deployment="canary"))),
        pod_from_json(job),
        pod_from_json(as_json(k8s_pod("web-test", deployment=None))),
    ]
    grouped = group_pods([sts, web], pods)
    claimed = {e.workload.key: [p.name for p in e.pods] for e in grouped}
    assert claimed == {"shop/statefulset/db": ["db-0"], "shop/deployment/web": ["web-1"]}
    foreign = {e.workload.key: [(f.name, f.controlled_by) for f in e.foreign] for e in grouped}
    assert foreign == {
        "shop/statefulset/db": [("db-bare", "no controller"), ("db-copy", "X/x")],
        "shop/deployment/web": [
            ("canary-1", "Deployment/canary"),
            ("web-migrate", "Job/x"),
            ("web-test", "no controller"),
        ],
    }


@pytest.mark.parametrize(
    ("reference", "label", "claimed"),
    [
        pytest.param(("apps/v1", "ReplicaSet", "web-abc"), "abc", True, id="its ReplicaSet"),
        pytest.param(("apps/v1", "ReplicaSet", "web-abc"), "", False, id="no hash label"),
        pytest.param(("apps/v1", "ReplicaSet", "web-abc"), "xyz", False, id="another hash"),
        pytest.param(("apps/v1", "ReplicaSet", "webx-abc"), "abc", False, id="another prefix"),
        pytest.param(("apps/v1", "ReplicaSet", "web-a-abc"), "abc", False, id="web-a's"),
        pytest.param(("apps/v1", "StatefulSet", "web-abc"), "abc", False, id="not a ReplicaSet"),
        pytest.param(("example.io/v1", "ReplicaSet", "web-abc"), "abc", False, id="other group"),
    ],
)
def test_a_deployment_owns_a_pod_only_through_a_replicaset_named_by_its_controller(
    reference: tuple[str, str, str], label: str, claimed: bool
) -> None:
    web, _ = workload_from_json(WorkloadKind.DEPLOYMENT, as_json(k8s_deployment("web")))
    document = as_json(k8s_pod("web-1", deployment=None))
    if label:
        document["metadata"]["labels"]["pod-template-hash"] = label
    api_version, kind, name = reference
    document["metadata"]["ownerReferences"] = [
        {"apiVersion": api_version, "kind": kind, "name": name, "uid": "u", "controller": True}
    ]
    assert owns(web, pod_from_json(document)) is claimed


def test_a_workload_without_a_uid_owns_no_pod() -> None:
    document = k8s_statefulset()
    document["metadata"].pop("uid")
    sts = workload_from_json(WorkloadKind.STATEFULSET, document)
    orphan = pod_from_json(owned(k8s_pod("db-0", labels={"app": "db"}), ""))
    [only] = group_pods([sts], [orphan])
    assert only.pods == ()


@pytest.mark.parametrize(
    ("document", "ready", "detail"),
    [
        (
            {
                "metadata": {"name": "n"},
                "status": {"conditions": [{"type": "Ready", "status": "True"}]},
            },
            True,
            "",
        ),
        (
            {
                "metadata": {"name": "n"},
                "status": {
                    "conditions": [
                        {"type": "MemoryPressure", "status": "False"},
                        {
                            "type": "Ready",
                            "status": "False",
                            "reason": "KubeletNotReady",
                            "message": "container runtime is down",
                        },
                    ]
                },
            },
            False,
            "Ready=False (KubeletNotReady: container runtime is down)",
        ),
        (
            {
                "metadata": {"name": "n"},
                "status": {
                    "conditions": [
                        {"type": "Ready", "status": "Unknown", "reason": "NodeStatusUnknown"}
                    ]
                },
            },
            False,
            "Ready=Unknown (NodeStatusUnknown)",
        ),
        ({"metadata": {"name": "n"}, "status": {}}, False, "the Node reports no Ready condition"),
        (
            {
                "metadata": {"name": "n", "deletionTimestamp": "2026-01-01T00:00:00Z"},
                "status": {"conditions": [{"type": "Ready", "status": "True"}]},
            },
            False,
            "the Node is being deleted",
        ),
    ],
)
def test_node_readiness(document: dict[str, Any], ready: bool, detail: str) -> None:
    view = node_from_json(document)
    assert (view.name, view.ready, view.detail) == ("n", ready, detail)
