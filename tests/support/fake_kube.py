"""A small fake Kubernetes API on 127.0.0.1 that fails on request: the one fake API server.

It serves what ``autoroll.kube.KubeCluster`` reads and writes — the Deployment list, the
(empty) StatefulSet and DaemonSet lists, the pod list of one namespace, pod DELETE with a
UID precondition — as real API JSON, so the real Kubernetes client sits between it and the
controller. The fault matrix queues faults per route (``list-deployments``,
``read-deployment`` for the fresh read of ``web``, ``list-workloads`` for the other kinds,
``list-pods``, ``delete``), consumed one per request; a
fault can answer an error status (with headers such as ``Retry-After``), answer late, hang
until released, or drop the connection. The server can be stopped and started again on
the same port (an API server restart). Without faults it is the plain fake API of
``tests/integration/test_fake_api.py``, which reads ``KubeApiServer.seen`` (method and
path with query, of every request) to check what the client puts on the wire.

The world: Deployment ``shop/web`` (2 replicas, enrolled) with two Ready pods running
``running``. A DELETE that succeeds removes the pod and adds an unready replacement
running ``target``, so after one deletion the Deployment is not settled and nothing more
may be deleted until ``make_ready``.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from tests.support.kube_wire import (
    ROUTES,
    Route,
    is_release,
    list_document,
    removal,
    status_document,
)
from tests.support.local_http import LocalHttpServer, Request, cut, reply

SELECTOR = "aethnet.se/autoroll=true"
NAMESPACE = "shop"
CREATED = "2026-01-01T00:00:00Z"

LEASE_NAMESPACE = "autoroll"
LEASE_NAME = "rel-autoroll"
_LEASES = f"/apis/coordination.k8s.io/v1/namespaces/{LEASE_NAMESPACE}/leases"


@dataclass(frozen=True)
class Fault:
    """How one request misbehaves. ``status`` 0 means "answer normally" (after the delay)."""

    status: int = 500
    headers: tuple[tuple[str, str], ...] = ()
    delay_seconds: float = 0.0
    hang: threading.Event | None = None  # answer only once this is set (or 60 s pass)
    drop: bool = False  # close the connection without an answer
    #: the server stops (listener closed, other connections cut) before this answer is
    #: sent, and this connection closes after it: the next request finds nobody there
    go_down: bool = False
    #: answer 200 with headers, then send the body one byte a second until this is set (or
    #: 300 s pass): each read gets a byte within its timeout, so the call never times out
    drip: threading.Event | None = None


@dataclass
class FaultyKubeApi:
    """The fake API's state, routes and fault queues; ``serve`` puts it on a port."""

    image: str
    running: str
    target: str
    pods: dict[str, dict[str, Any]] = field(default_factory=dict)
    faults: dict[str, deque[Fault]] = field(default_factory=dict)
    #: (route, status answered) per answered request, in order (0 = dropped)
    log: list[tuple[str, int]] = field(default_factory=list)
    #: route of every request, on arrival (before any fault's delay)
    arrivals: list[str] = field(default_factory=list)
    #: DELETE requests received: (pod name, precondition uid)
    deletes: list[tuple[str, str | None]] = field(default_factory=list)
    #: pods actually removed by a DELETE
    deleted: list[str] = field(default_factory=list)
    #: set when a request of the route arrives (tests wait on these)
    arrived: dict[str, threading.Event] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)
    serial: int = 0
    #: the leader-election Lease (None until a replica creates it)
    lease: dict[str, Any] | None = None
    lease_version: int = 0
    #: seconds a PATCH that releases the Lease (holderIdentity null) waits before it is
    #: carried out: a slow API met on the way out
    release_delay_seconds: float = 0.0

    def __post_init__(self) -> None:
        for name in ("web-1", "web-2"):
            self.pods[name] = self.pod(name, self.running, ready=True)
        for route in ROUTES:
            self.arrived[route] = threading.Event()

    # -- test controls -------------------------------------------------------------------------

    def inject(self, route: Route, fault: Fault, times: int = 1) -> None:
        with self.lock:
            self.faults.setdefault(route, deque()).extend([fault] * times)

    def clear(self) -> None:
        with self.lock:
            self.faults.clear()

    def make_ready(self) -> None:
        with self.lock:
            for name, pod in list(self.pods.items()):
                digest = pod["status"]["containerStatuses"][0]["imageID"].rpartition("@")[2]
                self.pods[name] = self.pod(name, digest, ready=True, uid=pod["metadata"]["uid"])

    def requests_to(self, route: Route) -> int:
        with self.lock:
            return sum(1 for r in self.arrivals if r == route)

    # -- objects -------------------------------------------------------------------------------

    def pod(
        self, name: str, digest: str, *, ready: bool, uid: str = "", created: str = CREATED
    ) -> dict[str, Any]:
        """A pod of the web Deployment; ``created`` also stamps its Ready condition's
        transition, as an API server does for a new pod."""
        repo = self.image.rpartition(":")[0]
        return {
            "metadata": {
                "name": name,
                "namespace": NAMESPACE,
                "uid": uid or f"uid-{name}",
                "labels": {"app": "web", "pod-template-hash": "abc"},
                "creationTimestamp": created,
                "ownerReferences": [
                    {
                        "apiVersion": "apps/v1",
                        "kind": "ReplicaSet",
                        "name": "web-abc",
                        "uid": "uid-rs-web-abc",
                        "controller": True,
                    }
                ],
            },
            "spec": {
                "containers": [{"name": "app", "image": self.image, "imagePullPolicy": "Always"}]
            },
            "status": {
                "phase": "Running",
                "conditions": [
                    {
                        "type": "Ready",
                        "status": "True" if ready else "False",
                        "lastTransitionTime": created,  # as an API server sets it
                    }
                ],
                "containerStatuses": [
                    {
                        "name": "app",
                        "image": self.image,
                        "imageID": f"{repo}@{digest}",
                        "ready": ready,
                        "restartCount": 0,
                    }
                ],
            },
        }

    def deployment(self) -> dict[str, Any]:
        """``shop/web``, with the status its controller would write for the pods now."""
        container = {"name": "app", "image": self.image, "imagePullPolicy": "Always"}
        ready = sum(
            1
            for p in self.pods.values()
            if any(
                c["type"] == "Ready" and c["status"] == "True" for c in p["status"]["conditions"]
            )
        )
        return {
            "metadata": {
                "name": "web",
                "namespace": NAMESPACE,
                "uid": "uid-deploy",
                "generation": 1,
                "labels": {"aethnet.se/autoroll": "true"},
                "creationTimestamp": CREATED,
            },
            "spec": {
                "replicas": 2,
                "selector": {"matchLabels": {"app": "web"}},
                "template": {
                    "metadata": {"labels": {"app": "web"}},
                    "spec": {"containers": [container]},
                },
            },
            "status": {
                "observedGeneration": 1,
                "replicas": len(self.pods),
                "updatedReplicas": len(self.pods),
                "readyReplicas": ready,
                "availableReplicas": ready,
                "unavailableReplicas": max(0, 2 - ready),
            },
        }

    # -- routing ---------------------------------------------------------------------------------

    def route(self, method: str, path: str, query: dict[str, list[str]]) -> Route | None:
        if path == _LEASES and method == "GET" and query.get("watch") == ["true"]:
            return "watch-lease"
        if path == _LEASES and method == "POST":
            return "create-lease"
        if path == f"{_LEASES}/{LEASE_NAME}":
            return "get-lease" if method == "GET" else "patch-lease" if method == "PATCH" else None
        if method == "GET" and path == "/apis/apps/v1/deployments":
            return "list-deployments"
        if method == "GET" and path == f"/apis/apps/v1/namespaces/{NAMESPACE}/deployments":
            return "read-deployment"
        if method == "GET" and path in ("/apis/apps/v1/statefulsets", "/apis/apps/v1/daemonsets"):
            return "list-workloads"
        if method == "GET" and path == f"/api/v1/namespaces/{NAMESPACE}/pods":
            return "list-pods"
        pods = f"/api/v1/namespaces/{NAMESPACE}/pods/"
        if method == "DELETE" and path.startswith(pods):
            return "delete"
        if method == "POST" and path.startswith(pods) and path.endswith("/eviction"):
            return "delete"
        return None

    def next_fault(self, route: Route | None) -> Fault | None:
        with self.lock:
            queue = self.faults.get(route or "")
            return queue.popleft() if queue else None

    def answer(
        self, route: Route | None, path: str, query: dict[str, list[str]], body: bytes
    ) -> tuple[int, dict[str, Any]]:
        with self.lock:
            if route in ("list-deployments", "read-deployment"):
                selected = query.get("labelSelector") == [SELECTOR]
                named = query.get("fieldSelector", ["metadata.name=web"]) == ["metadata.name=web"]
                return 200, list_document(
                    "DeploymentList", "apps/v1", [self.deployment()] if selected and named else []
                )
            if route == "list-workloads":
                return 200, list_document("List", "apps/v1", [])  # only Deployments in this world
            if route == "list-pods":
                return 200, list_document("PodList", "v1", list(self.pods.values()))
            if route == "delete":
                name, uid = removal(path, body)
                pod = self.pods.get(name)
                if pod is None:
                    return 404, status_document(404, "NotFound")
                if uid is not None and uid != pod["metadata"]["uid"]:
                    return 409, status_document(409, "Conflict")
                del self.pods[name]
                self.deleted.append(name)
                self.serial += 1
                fresh = f"web-new-{self.serial}"
                # Created now: a replacement dated months ago would be "not Ready for
                # months", which halts the roll and quarantines the digest.
                now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
                self.pods[fresh] = self.pod(fresh, self.target, ready=False, created=now)
                return 200, {"kind": "Status", "apiVersion": "v1", "status": "Success"}
            if route in ("get-lease", "create-lease", "patch-lease"):
                return self._lease_call(route, json.loads(body or b"{}"))
            return 404, status_document(404, "NotFound")

    def _lease_call(self, route: Route, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        """The Lease as the API server keeps it: a resourceVersion, 409 on a stale write."""
        if route == "create-lease":
            if self.lease is not None:
                return 409, status_document(409, "AlreadyExists")
            self.lease = {"metadata": {"name": LEASE_NAME, "namespace": LEASE_NAMESPACE}}
            return 201, self._write_lease(body)
        if self.lease is None:
            return 404, status_document(404, "NotFound")
        if route == "get-lease":
            return 200, self.lease
        wanted = (body.get("metadata") or {}).get("resourceVersion")
        if wanted is not None and wanted != self.lease["metadata"]["resourceVersion"]:
            return 409, status_document(409, "Conflict")
        return 200, self._write_lease(body)

    def _write_lease(self, patch: dict[str, Any]) -> dict[str, Any]:
        """A JSON merge patch of spec and annotations, and a new resourceVersion."""
        assert self.lease is not None
        spec = {**self.lease.get("spec", {}), **(patch.get("spec") or {})}
        self.lease["spec"] = {k: v for k, v in spec.items() if v is not None}
        annotations = (patch.get("metadata") or {}).get("annotations") or {}
        if annotations:
            self.lease["metadata"].setdefault("annotations", {}).update(annotations)
        self.lease_version += 1
        self.lease["metadata"]["resourceVersion"] = str(self.lease_version)
        copy: dict[str, Any] = json.loads(json.dumps(self.lease))
        return copy

    def holder(self) -> str:
        """Who holds the Lease now ("" when released or never created)."""
        with self.lock:
            return str(((self.lease or {}).get("spec") or {}).get("holderIdentity") or "")


class KubeApiServer(LocalHttpServer):
    """``FaultyKubeApi`` on 127.0.0.1; ``stop``/``start`` keep the port (a restart)."""

    methods = ("GET", "DELETE", "POST", "PATCH")

    def __init__(self, api: FaultyKubeApi, port: int | None = None) -> None:
        super().__init__(port)
        self.api = api

    def write_kubeconfig(self, path: Path) -> Path:
        path.write_text(
            "apiVersion: v1\nkind: Config\n"
            f'clusters: [{{name: c, cluster: {{server: "{self.url}"}}}}]\n'
            "users: [{name: u, user: {token: fake}}]\n"
            "contexts: [{name: x, context: {cluster: c, user: u}}]\ncurrent-context: x\n"
        )
        return path

    def handle(self, request: Request) -> None:
        api = self.api
        parts = urlsplit(request.path)
        length = int(request.headers.get("Content-Length") or 0)
        body = request.rfile.read(length) if length else b""
        route = api.route(request.command, parts.path, parse_qs(parts.query))
        if route is not None:
            with api.lock:
                api.arrivals.append(route)
            api.arrived[route].set()
        fault = api.next_fault(route)
        if fault is not None and fault.drip is not None:
            self._drip(request, route, fault.drip)
            return
        if fault is not None:
            if fault.hang is not None:
                fault.hang.wait(60)
            if fault.delay_seconds:
                time.sleep(fault.delay_seconds)
            if fault.drop:
                with api.lock:
                    api.log.append((route or request.path, 0))
                cut(request)
                return
        if route == "watch-lease":
            self._quiet_watch(request, parse_qs(parts.query))
            return
        if route == "patch-lease" and api.release_delay_seconds and is_release(body):
            time.sleep(api.release_delay_seconds)
        if route == "delete":
            with api.lock:
                api.deletes.append(removal(parts.path, body))
        if fault is not None and fault.status:
            status, document = fault.status, status_document(fault.status, "Injected")
        else:
            status, document = api.answer(route, parts.path, parse_qs(parts.query), body)
        if fault is not None and fault.go_down:
            self.stop(keep=request.connection)
            request.close_connection = True
        with api.lock:
            api.log.append((route or request.path, status))
        headers = {"Content-Type": "application/json", **dict(fault.headers if fault else ())}
        reply(request, status, headers, json.dumps(document).encode())

    def _drip(self, request: Request, route: Route | None, release: threading.Event) -> None:
        """A 200 whose body arrives a byte a second: a call that hangs past every timeout."""
        request.send_response(200)
        request.send_header("Content-Type", "application/json")
        request.send_header("Content-Length", "1000000")
        request.end_headers()
        deadline = time.monotonic() + 300
        try:
            while not release.wait(1.0) and time.monotonic() < deadline:
                request.wfile.write(b" ")
                request.wfile.flush()
        except OSError:
            pass  # the client gave up (or was stopped)
        with self.api.lock:
            self.api.log.append((route or request.path, 200))
        cut(request)

    def _quiet_watch(self, request: Request, query: dict[str, list[str]]) -> None:
        """A watch that sends no event and ends at its ``timeoutSeconds`` (or a stop)."""
        request.send_response(200)
        request.send_header("Content-Type", "application/json")
        request.send_header("Transfer-Encoding", "chunked")
        request.end_headers()
        seconds = float((query.get("timeoutSeconds") or ["60"])[0])
        deadline = time.monotonic() + seconds
        with contextlib.suppress(OSError):
            while time.monotonic() < deadline and self._server is not None:
                time.sleep(0.2)
            request.wfile.write(b"0\r\n\r\n")
        request.close_connection = True
