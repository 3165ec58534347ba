"""The real ``KubeRest`` over a scripted ``ApiClient`` (``tests/support/fake_api_client.py``), for
the adapter's tests: ``FakeRest`` answers the lists from fixtures and records every call,
``NodesRest`` also answers the Nodes' metadata list.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import unquote

from kubernetes import client

from autoroll.core.model import WorkloadKind
from autoroll.kube.transport import KubeRest
from tests.support.fake_api_client import FakeApiClient, Reply, status_body
from tests.support.kube_models import as_json, k8s_pod


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
