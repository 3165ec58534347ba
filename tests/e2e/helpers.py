"""Small tools for e2e tests: workload manifests, pod state and a fresh namespace (waits:
tests/support/wait.py)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from tests.support.wait import eventually


def core_api(kube: Any) -> Any:
    """``CoreV1Api`` typed as Any: manifests here are plain dicts, which the client accepts."""
    from kubernetes import client

    return client.CoreV1Api(kube)


def apps_api(kube: Any) -> Any:
    """``AppsV1Api`` typed as Any (see ``core_api``)."""
    from kubernetes import client

    return client.AppsV1Api(kube)


def batch_api(kube: Any) -> Any:
    """``BatchV1Api`` typed as Any (see ``core_api``)."""
    from kubernetes import client

    return client.BatchV1Api(kube)


def rbac_api(kube: Any) -> Any:
    """``RbacAuthorizationV1Api`` typed as Any (see ``core_api``)."""
    from kubernetes import client

    return client.RbacAuthorizationV1Api(kube)


def create_namespace(kube: Any, name: str) -> None:
    """Create namespace ``name`` and wait until pods can be made there: its ServiceAccount
    ``default`` exists (the ServiceAccount controller adds it a moment later)."""
    core = core_api(kube)
    core.create_namespace({"metadata": {"name": name}})

    def has_default_sa() -> None:
        names = [sa.metadata.name for sa in core.list_namespaced_service_account(name).items]
        assert "default" in names, f"service accounts: {names}"

    eventually(has_default_sa, timeout=30, what=f"ServiceAccount default in {name}")


def container(
    image: str, *, pull_policy: str = "Always", http_port: int | None = None, ready_after: float = 0
) -> dict[str, Any]:
    """The one container ``app`` of every workload here.

    ``http_port``: the container serves HTTP there and gets a readiness probe on ``/``, first
    asked ``ready_after`` seconds (rounded up) after it starts, then every second.
    """
    spec: dict[str, Any] = {"name": "app", "image": image, "imagePullPolicy": pull_policy}
    if http_port is not None:
        spec["ports"] = [{"name": "http", "containerPort": http_port}]
        spec["readinessProbe"] = {
            "httpGet": {"path": "/", "port": "http"},
            "initialDelaySeconds": math.ceil(ready_after),
            "periodSeconds": 1,
            "timeoutSeconds": 1,
            "failureThreshold": 1,
        }
    return spec


def deployment(
    name: str,
    image: str,
    *,
    replicas: int = 3,
    labels: Mapping[str, str] | None = None,
    pod_annotations: Mapping[str, str] | None = None,
    pull_policy: str = "Always",
    http_port: int | None = None,
    ready_after: float = 0,
) -> dict[str, Any]:
    """A minimal Deployment manifest: one container (``container``), pods labelled
    ``app=<name>``."""
    app = container(image, pull_policy=pull_policy, http_port=http_port, ready_after=ready_after)
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "labels": dict(labels or {})},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}, "annotations": dict(pod_annotations or {})},
                "spec": {"containers": [app], "terminationGracePeriodSeconds": 5},
            },
        },
    }


def _template(name: str, image: str, **container_args: Any) -> dict[str, Any]:
    return {
        "metadata": {"labels": {"app": name}},
        "spec": {
            "containers": [container(image, **container_args)],
            "terminationGracePeriodSeconds": 5,
        },
    }


def statefulset(
    name: str,
    image: str,
    *,
    replicas: int = 3,
    labels: Mapping[str, str] | None = None,
    on_delete: bool = False,
    partition: int = 0,
    pull_policy: str = "Always",
    http_port: int | None = None,
    ready_after: float = 0,
) -> dict[str, Any]:
    """A minimal StatefulSet manifest (no volumes; its headless Service need not exist):
    one container (``container``), pods ``<name>-<ordinal>`` labelled ``app=<name>``."""
    strategy: dict[str, Any] = {"type": "OnDelete"}
    if not on_delete:
        strategy = {"type": "RollingUpdate", "rollingUpdate": {"partition": partition}}
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": name, "labels": dict(labels or {})},
        "spec": {
            "replicas": replicas,
            "serviceName": name,
            "selector": {"matchLabels": {"app": name}},
            "updateStrategy": strategy,
            "template": _template(
                name, image, pull_policy=pull_policy, http_port=http_port, ready_after=ready_after
            ),
        },
    }


def daemonset(
    name: str,
    image: str,
    *,
    labels: Mapping[str, str] | None = None,
    node_selector: Mapping[str, str] | None = None,
    pull_policy: str = "Always",
    tolerate_not_ready: bool = False,
    http_port: int | None = None,
    ready_after: float = 0,
) -> dict[str, Any]:
    """A minimal DaemonSet manifest: one container on every node (or those ``node_selector``
    names), pods labelled ``app=<name>``. ``tolerate_not_ready`` lets it onto the nodes of
    the e2e tier, real and simulated: a Node is registered with the taint
    ``node.kubernetes.io/not-ready:NoSchedule`` and only the node lifecycle controller (not
    run here) lifts it; the DaemonSet controller honours it when it picks the nodes."""
    template = _template(
        name, image, pull_policy=pull_policy, http_port=http_port, ready_after=ready_after
    )
    if node_selector:
        template["spec"]["nodeSelector"] = dict(node_selector)
    if tolerate_not_ready:
        template["spec"]["tolerations"] = [
            {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoSchedule"}
        ]
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": name, "labels": dict(labels or {})},
        "spec": {"selector": {"matchLabels": {"app": name}}, "template": template},
    }


def pod(
    name: str,
    image: str,
    *,
    annotations: Mapping[str, str] | None = None,
    pull_policy: str = "Always",
    restart_policy: str = "Always",
) -> dict[str, Any]:
    """A bare Pod manifest with one container."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "annotations": dict(annotations or {})},
        "spec": {
            "containers": [{"name": "app", "image": image, "imagePullPolicy": pull_policy}],
            "restartPolicy": restart_policy,
        },
    }


def job(name: str, image: str, *, completions: int = 1) -> dict[str, Any]:
    """A minimal Job manifest."""
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name},
        "spec": {
            "completions": completions,
            "backoffLimit": 0,
            "template": {
                "spec": {
                    "containers": [{"name": "job", "image": image}],
                    "restartPolicy": "Never",
                }
            },
        },
    }


def is_ready(pod: Any) -> bool:
    """The pod's Ready condition is True (``pod`` is a client V1Pod)."""
    conditions = (pod.status and pod.status.conditions) or []
    return any(c.type == "Ready" and c.status == "True" for c in conditions)


def image_ids(pod: Any) -> list[str]:
    """The imageID of each container status, "" where none is reported yet."""
    statuses = (pod.status and pod.status.container_statuses) or []
    return [s.image_id or "" for s in statuses]
