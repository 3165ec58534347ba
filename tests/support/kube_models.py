"""Kubernetes objects written with the client's own models and serialised to the JSON an API
server sends, for the adapter's tests (``tests/unit/test_kube_*.py``): a Deployment, its pods,
and the conversions of both; selector requirements.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from kubernetes import client

from autoroll.kube.pods import TEMPLATE_HASH_LABEL, ListedPod, pod_from_json
from autoroll.kube.selectors import LabelSelector, Operator, Requirement, selector_from_json
from autoroll.kube.workloads import deployment_from_json

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


def req(key: str, op: str, *values: str) -> Requirement:
    return Requirement(key, Operator(op), frozenset(values))
