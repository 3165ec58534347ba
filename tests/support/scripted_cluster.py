"""A scripted Kubernetes API world for unit tests of whole passes through the real adapter.

``ScriptedWorld`` holds API objects as the API server sends them (JSON documents: Deployments,
StatefulSets, DaemonSets, pods, Nodes) and answers ``KubeRest``'s requests from them through
the hand-written ``FakeApiClient``: workload lists honour the enrolment label and the
``metadata.name`` field selector, pod lists are per namespace, a DELETE or an eviction is
recorded and removes the pod. ``on_request`` lets a test change the world between two
requests (a pause annotation set while a pass runs, say), so what a pass reads first and
what it reads right before a DELETE can differ, as they can on a real cluster.

The documents are built by ``deployment_doc``/``pod_doc`` with the fields the real
controllers write: a Deployment's status as the Deployment controller keeps it, a pod's
controller reference to its ReplicaSet ``<deployment>-<pod-template-hash>``.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any
from urllib.parse import unquote

from autoroll.core.model import WorkloadKind
from autoroll.kube.cluster import KubeCluster
from autoroll.kube.transport import KubeRest
from tests.support.fake_api_client import FakeApiClient, Reply, status_body

ENROL_KEY, ENROL_VALUE = "aethnet.se/autoroll", "true"
SELECTOR = f"{ENROL_KEY}={ENROL_VALUE}"

Doc = dict[str, Any]


def stamp(moment: datetime) -> str:
    """An RFC 3339 time in whole seconds, as the API server writes ``creationTimestamp``."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def container_doc(name: str, image: str, *, policy: str = "Always", **extra: Any) -> Doc:
    return {"name": name, "image": image, "imagePullPolicy": policy, **extra}


def deployment_doc(
    name: str,
    *,
    namespace: str = "shop",
    replicas: int = 3,
    selector: Mapping[str, str] | None = None,
    containers: Sequence[Doc] = (),
    init_containers: Sequence[Doc] = (),
    generation: int = 1,
    enrolled: bool = True,
    annotations: Mapping[str, str] | None = None,
    min_ready_seconds: int = 0,
    paused: bool = False,
    status: Mapping[str, Any] | None = None,
) -> Doc:
    """A Deployment as the API server sends it. ``status`` defaults to a finished rollout
    of ``replicas`` (what the Deployment controller writes once every replica is available);
    pass fields to override, ``{}`` for no status yet."""
    match = dict(selector or {"app": name})
    pod_spec: Doc = {"containers": list(containers)}
    if init_containers:
        pod_spec["initContainers"] = list(init_containers)
    spec: Doc = {
        "replicas": replicas,
        "selector": {"matchLabels": match},
        "template": {"metadata": {"labels": dict(match)}, "spec": pod_spec},
    }
    if min_ready_seconds:
        spec["minReadySeconds"] = min_ready_seconds
    if paused:
        spec["paused"] = True
    done = {
        "observedGeneration": generation,
        "replicas": replicas,
        "updatedReplicas": replicas,
        "readyReplicas": replicas,
        "availableReplicas": replicas,
        "conditions": [
            {"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable"},
            {"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable"},
        ],
    }
    labels = {ENROL_KEY: ENROL_VALUE} if enrolled else {}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": f"uid-{name}",
            "generation": generation,
            "labels": labels,
            "annotations": dict(annotations or {}),
        },
        "spec": spec,
        "status": done if status is None else {**done, **status} if status else {},
    }


def owner(kind: str, name: str, *, api_version: str = "apps/v1") -> Doc:
    """A controller reference, as a controller sets it on what it creates."""
    return {
        "apiVersion": api_version,
        "kind": kind,
        "name": name,
        "uid": f"uid-{kind.lower()}-{name}",
        "controller": True,
        "blockOwnerDeletion": True,
    }


def pod_doc(
    name: str,
    *,
    namespace: str = "shop",
    labels: Mapping[str, str],
    containers: Sequence[Doc],
    statuses: Sequence[Doc],
    created: datetime,
    controller: Doc | None = None,
    init_containers: Sequence[Doc] = (),
    init_statuses: Sequence[Doc] = (),
    ready: bool = True,
    ready_since: datetime | None = None,
    phase: str = "Running",
    node: str = "node-1",
) -> Doc:
    """A pod as the API server sends it, its status as a kubelet writes it."""
    spec: Doc = {"containers": list(containers), "nodeName": node}
    if init_containers:
        spec["initContainers"] = list(init_containers)
    status: Doc = {
        "phase": phase,
        "conditions": [
            {
                "type": "Ready",
                "status": "True" if ready else "False",
                "lastTransitionTime": stamp(ready_since or created),
            }
        ],
        "containerStatuses": list(statuses),
    }
    if init_statuses:
        status["initContainerStatuses"] = list(init_statuses)
    meta: Doc = {
        "name": name,
        "namespace": namespace,
        "uid": f"uid-{name}",
        "labels": dict(labels),
        "creationTimestamp": stamp(created),
    }
    if controller is not None:
        meta["ownerReferences"] = [controller]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": status}


def status_doc(name: str, image: str, image_id: str, *, ready: bool = True) -> Doc:
    """One ``containerStatuses[]`` entry."""
    return {
        "name": name,
        "image": image,
        "imageID": image_id,
        "ready": ready,
        "restartCount": 0,
        "state": {"running": {}},
    }


@dataclass
class ScriptedWorld:
    """The API objects a scripted API server answers from; see the module docstring."""

    workloads: dict[WorkloadKind, list[Doc]] = field(
        default_factory=lambda: {kind: [] for kind in WorkloadKind}
    )
    pods: list[Doc] = field(default_factory=list)
    nodes: dict[str, Doc] = field(default_factory=dict)
    requests: list[tuple[str, str, tuple[tuple[str, str], ...]]] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    on_request: Callable[[ScriptedWorld, str, str], None] | None = None
    api: FakeApiClient | None = None  # the client of the last ``cluster()``

    def add(self, kind: WorkloadKind, document: Doc) -> Doc:
        self.workloads[kind].append(document)
        return document

    def workload(self, kind: WorkloadKind, name: str) -> Doc:
        return next(d for d in self.workloads[kind] if d["metadata"]["name"] == name)

    def cluster(self, **kwargs: Any) -> KubeCluster:
        """A ``KubeCluster`` (no watched cache) whose every request this world answers."""
        api = FakeApiClient(router=self.route)
        self.api = api
        return KubeCluster(label_selector=SELECTOR, rest=KubeRest(api), **kwargs)

    def route(self, method: str, path: str, request: dict[str, Any]) -> Reply:
        query = tuple((str(k), str(v)) for k, v in request.get("query_params") or ())
        self.requests.append((method, path, query))
        if self.on_request is not None:
            self.on_request(self, method, path)
        parts = [unquote(p) for p in path.strip("/").split("/")]
        if parts[:3] == ["apis", "apps", "v1"]:
            return self._workload_list(parts, dict(query))
        if parts[:3] == ["api", "v1", "nodes"]:
            found = self.nodes.get(parts[3]) if len(parts) > 3 else None
            return (200, json.dumps(found).encode()) if found else (404, status_body(404))
        if parts[:3] == ["api", "v1", "namespaces"] and parts[4] == "pods":
            namespace = parts[3]
            if method == "GET":
                items = [p for p in self.pods if p["metadata"]["namespace"] == namespace]
                return 200, _list(items)
            return self._remove(namespace, parts[5])
        return 404, status_body(404)

    def _workload_list(self, parts: list[str], query: dict[str, str]) -> Reply:
        resource = parts[-1]
        kind = next(k for k in WorkloadKind if k.resource == resource)
        namespace = parts[4] if len(parts) > 4 and parts[3] == "namespaces" else None
        name = query.get("fieldSelector", "").removeprefix("metadata.name=") or None
        wanted = query.get("labelSelector") == SELECTOR
        items = [
            d
            for d in self.workloads[kind]
            if (namespace is None or d["metadata"]["namespace"] == namespace)
            and (name is None or d["metadata"]["name"] == name)
            and (not wanted or d["metadata"].get("labels", {}).get(ENROL_KEY) == ENROL_VALUE)
        ]
        return 200, _list(items)

    def _remove(self, namespace: str, name: str) -> Reply:
        for pod in self.pods:
            meta = pod["metadata"]
            if meta["namespace"] == namespace and meta["name"] == name:
                self.pods.remove(pod)
                self.deleted.append(name)
                return 200, b"{}"
        return 404, status_body(404)


def _list(items: Sequence[Doc]) -> bytes:
    return json.dumps({"kind": "List", "items": copy.deepcopy(list(items))}).encode()


__all__ = [
    "SELECTOR",
    "ScriptedWorld",
    "container_doc",
    "deployment_doc",
    "owner",
    "pod_doc",
    "stamp",
    "status_doc",
]
