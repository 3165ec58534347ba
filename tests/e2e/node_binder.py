"""The e2e cluster's scheduler: ``Binder`` binds every unscheduled pod to the real node.

There is no kube-scheduler: with one node, binding is the only decision a scheduler could
make (see ``node.py``). Apart from the node because it runs beside it, as a scheduler does:
one thread with its own API client, started by the session (``conftest.py``) or the demo.
"""

from __future__ import annotations

import json
import threading
from typing import Any

from tests.e2e.background import BackgroundThread

SIMULATED_LABEL = "e2e.autoroll/node"  # =simulated: the simulated kubelet's namespaces


# --- scheduling ---------------------------------------------------------------------------


def terminating_namespace(exc: Any) -> bool:
    """Is ``exc`` the API server's 403 for creating anything (a binding too) in a namespace
    that is being deleted? A test's namespace goes while its last pods are still unbound."""
    return bool(exc.status == 403 and "being terminated" in str(exc.body or ""))


class Binder(BackgroundThread):
    """The cluster's scheduler: binds each unscheduled pod to the node.

    Skips namespaces labelled ``e2e.autoroll/node=simulated`` (the simulated kubelet binds
    those), and, as a scheduler does, a pod whose ``nodeSelector`` the node's labels do not
    match (a second, simulated node of another architecture takes it). One thread, its own
    API client; failures are kept in ``errors``.
    """

    def __init__(self, kube: Any, node: str, *, interval: float = 0.2) -> None:
        from kubernetes import client

        self.core: Any = client.CoreV1Api(kube)
        self.node = node
        self.interval = interval
        self.errors: list[str] = []
        self.bound = 0
        self._labels: dict[str, str] | None = None  # the node's, read once
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> Binder:
        self._start_thread(self._run, "e2e-binder")
        return self

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.bind_once()
            except Exception as exc:  # kept for the test to see; the loop goes on
                detail = str(getattr(exc, "body", "") or "")[:300]
                self.errors.append(f"{exc!r} {detail}".strip())
            self._stop.wait(self.interval)

    def bind_once(self) -> int:
        from kubernetes.client.exceptions import ApiException

        # Pods first, then namespaces: a pod in the list was made after its namespace was
        # labelled simulated, so the later namespace list sees the label (the other order
        # raced a test's label-then-create and bound its pod here).
        pods = json.loads(
            self.core.list_pod_for_all_namespaces(
                field_selector="spec.nodeName=", _preload_content=False
            ).data
        )["items"]
        simulated = {
            ns["metadata"]["name"]
            for ns in json.loads(
                self.core.list_namespace(
                    label_selector=f"{SIMULATED_LABEL}=simulated", _preload_content=False
                ).data
            )["items"]
        }
        count = 0
        for pod in pods:
            meta = pod["metadata"]
            if meta["namespace"] in simulated or meta.get("deletionTimestamp"):
                continue
            if not self._selects_node(pod):
                continue
            body = {
                "apiVersion": "v1",
                "kind": "Binding",
                "metadata": {"name": meta["name"], "uid": meta["uid"]},
                "target": {"apiVersion": "v1", "kind": "Node", "name": self.node},
            }
            try:
                self.core.create_namespaced_pod_binding(
                    meta["name"], meta["namespace"], body, _preload_content=False
                )
                count += 1
            except ApiException as exc:
                if exc.status in (404, 409) or terminating_namespace(exc):
                    continue  # gone, bound already, or its namespace is being deleted
                raise
        self.bound += count
        return count

    def _selects_node(self, pod: dict[str, Any]) -> bool:
        """Does the pod's ``nodeSelector`` (if any) match the node's labels?"""
        selector = (pod.get("spec") or {}).get("nodeSelector") or {}
        if not selector:
            return True
        if self._labels is None:
            node = json.loads(self.core.read_node(self.node, _preload_content=False).data)
            self._labels = dict(node["metadata"].get("labels") or {})
        return all(self._labels.get(key) == value for key, value in selector.items())
