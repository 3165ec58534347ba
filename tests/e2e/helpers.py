"""Small tools for e2e tests: workload manifests and pod state (waits: tests/support/wait.py)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any


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
    """A minimal Deployment manifest: one container, pods labelled ``app=<name>``.

    ``http_port``: the container serves HTTP there and gets a readiness probe on ``/``, first
    asked ``ready_after`` seconds (rounded up) after it starts, then every second.
    """
    container: dict[str, Any] = {"name": "app", "image": image, "imagePullPolicy": pull_policy}
    if http_port is not None:
        container["ports"] = [{"name": "http", "containerPort": http_port}]
        container["readinessProbe"] = {
            "httpGet": {"path": "/", "port": "http"},
            "initialDelaySeconds": math.ceil(ready_after),
            "periodSeconds": 1,
            "timeoutSeconds": 1,
            "failureThreshold": 1,
        }
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "labels": dict(labels or {})},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}, "annotations": dict(pod_annotations or {})},
                "spec": {"containers": [container], "terminationGracePeriodSeconds": 5},
            },
        },
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
