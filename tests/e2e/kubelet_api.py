"""The simulated kubelet's calls to the API server: its Node, bindings, pod status, deletions.

Each function takes the ``CoreV1Api`` the kubelet's thread owns: the Node registered and its
Ready condition set, the namespaces it serves listed, a pod bound, its status written, a
deleted pod finalized (those three let 404 and 409 pass: the pod is gone, or the next pass
sees it). They stand apart from ``kubelet.SimulatedKubelet``, which decides when to call them.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Mapping
from typing import Any

from tests.e2e.kubelet_pod_status import ts


def register_node(core: Any, *, node_name: str, arch: str, labels: dict[str, str]) -> None:
    """Create (or recreate) the Node, Ready, with room for plenty of pods."""
    from kubernetes.client.exceptions import ApiException

    now = ts(time.time())
    body = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": node_name,
            "labels": labels,
        },
        "status": {
            "conditions": [
                {
                    "type": "Ready",
                    "status": "True",
                    "reason": "KubeletReady",
                    "message": "simulated kubelet is posting ready status",
                    "lastHeartbeatTime": now,
                    "lastTransitionTime": now,
                }
            ],
            "addresses": [
                {"type": "InternalIP", "address": "127.0.0.1"},
                {"type": "Hostname", "address": node_name},
            ],
            "capacity": {"cpu": "16", "memory": "64Gi", "pods": "250"},
            "allocatable": {"cpu": "16", "memory": "64Gi", "pods": "250"},
            "nodeInfo": {
                "architecture": arch,
                "operatingSystem": "linux",
                "containerRuntimeVersion": "containerd://simulated",
                "kubeletVersion": "simulated",
                "kubeProxyVersion": "",
                "osImage": "autoroll e2e",
                "kernelVersion": "",
                "bootID": "",
                "machineID": "",
                "systemUUID": "",
            },
        },
    }
    with contextlib.suppress(ApiException):
        core.delete_node(node_name, grace_period_seconds=0)
    core.create_node(body, _preload_content=False)
    # Nodes keep status on create, but write it through the status subresource as well so
    # the Node is Ready whatever the API server version does on create.
    # The labels go with it: a status write replaces the metadata it is sent with.
    core.replace_node_status(
        node_name,
        {**body, "metadata": {"name": node_name, "labels": labels}},
        _preload_content=False,
    )


def set_ready(core: Any, *, node_name: str, ready: bool) -> None:
    """Write the Node's Ready condition (no node lifecycle controller runs here, so its
    pods keep whatever readiness they had: a NotReady node under Ready pods)."""
    now = ts(time.time())
    condition = {
        "type": "Ready",
        "status": "True" if ready else "False",
        "reason": "KubeletReady" if ready else "KubeletNotReady",
        "message": "simulated kubelet is posting ready status"
        if ready
        else "simulated: container runtime is down",
        "lastHeartbeatTime": now,
        "lastTransitionTime": now,
    }
    core.patch_node_status(
        node_name, {"status": {"conditions": [condition]}}, _preload_content=False
    )


def namespaces(core: Any, only_namespaces_labelled: str | None) -> set[str] | None:
    """The namespaces whose pods this kubelet binds (None: all)."""
    if only_namespaces_labelled is None:
        return None
    listed = core.list_namespace(label_selector=only_namespaces_labelled, _preload_content=False)
    return {ns["metadata"]["name"] for ns in json.loads(listed.data)["items"]}


def bind(core: Any, pod: Mapping[str, Any], node_name: str) -> None:
    from kubernetes.client.exceptions import ApiException

    meta = pod["metadata"]
    body = {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": meta["name"], "uid": meta["uid"]},
        "target": {"apiVersion": "v1", "kind": "Node", "name": node_name},
    }
    try:
        # _preload_content=False: the client cannot deserialize the Status it gets back.
        core.create_namespaced_pod_binding(
            meta["name"], meta["namespace"], body, _preload_content=False
        )
    except ApiException as exc:
        if exc.status not in (404, 409):  # gone, or already bound: next pass sees it
            raise


def write_status(core: Any, pod: Mapping[str, Any], owned: Mapping[str, Any]) -> None:
    from kubernetes.client.exceptions import ApiException

    meta = pod["metadata"]
    current = dict(pod.get("status", {}))
    ours = {c["type"] for c in owned["conditions"]}
    foreign = [c for c in current.get("conditions", []) if c.get("type") not in ours]
    status = current | dict(owned) | {"conditions": [*owned["conditions"], *foreign]}
    for key in ("reason", "message", "initContainerStatuses"):
        if key not in owned:
            status.pop(key, None)
    # pods/status also writes labels and annotations: send them back as read, or the pod
    # drops out of its ReplicaSet's selector. No resourceVersion: the update is
    # unconditional, which is safe for the fields the kubelet owns.
    metadata = {k: v for k, v in meta.items() if k not in ("resourceVersion", "managedFields")}
    body = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": pod["spec"],
        "status": status,
    }
    try:
        core.replace_namespaced_pod_status(
            meta["name"], meta["namespace"], body, _preload_content=False
        )
    except ApiException as exc:
        if exc.status not in (404, 409):
            raise


def finalize(core: Any, pod: Mapping[str, Any]) -> None:
    from kubernetes.client.exceptions import ApiException

    meta = pod["metadata"]
    try:
        # All options in the body: the API server ignores query options when a body is sent.
        core.delete_namespaced_pod(
            meta["name"],
            meta["namespace"],
            body={"gracePeriodSeconds": 0, "preconditions": {"uid": meta["uid"]}},
            _preload_content=False,
        )
    except ApiException as exc:
        if exc.status not in (404, 409):
            raise
