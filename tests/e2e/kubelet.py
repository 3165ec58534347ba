"""A simulated kubelet: a Node, pods bound to it, pod status written as containerd reports it.

The control plane has no scheduler and no real nodes. This thread stands in for both: it binds
every unscheduled pod to its Node (``pods/binding``), "pulls" each container image by asking an
injected ``resolve(image) -> digest | None`` (a real registry in e2e tests), and then writes pod
status as kubelet + containerd would: phase, ``containerStatuses[].imageID`` as
``<host>/<repo>@sha256:<digest>``, the Ready condition, ``startTime``. Pods marked for deletion
are finalized with grace 0, since no container has to stop.

Its parts live beside it: the knobs a test sets per pod, digest or image (``Behaviour``, in
``kubelet_behaviour``), image names, resolvers and the pull (``kubelet_images``), the pure
status builder (``pod_status``, in ``kubelet_pod_status``) and the API writes
(``kubelet_api``). This module holds the thread that decides, on each pass, what to call; it
only writes a pod's status when ``pod_status``'s answer changed.
"""

from __future__ import annotations

import contextlib
import json
import logging
import threading
import time
from collections.abc import Iterator, Mapping
from typing import Any

from tests.e2e import kubelet_api
from tests.e2e.kubelet_behaviour import BEHAVIOUR_ANNOTATION, Behaviour
from tests.e2e.kubelet_images import Resolve, pull
from tests.e2e.kubelet_pod_status import PodRecord, pod_status

log = logging.getLogger("autoroll.e2e.kubelet")

NODE_NAME = "sim-node"
#: A label every simulated Node carries: a DaemonSet meant for simulated nodes selects it, so it
#: wants no pod on the real node (whose binder would not send one here, and the reverse).
SIMULATED_NODE_LABEL = ("e2e.autoroll/simulated-node", "true")


class SimulatedKubelet:
    """Run with ``with SimulatedKubelet(api_client, resolve): ...`` (or ``start``/``stop``).

    ``api_client`` is a ``kubernetes.client.ApiClient`` this thread may use alone.
    Failures inside a pass are logged and kept in ``errors`` and the loop goes on, so a test
    can assert that the kubelet itself never misbehaved.
    """

    def __init__(
        self,
        api_client: Any,
        resolve: Resolve,
        *,
        resolve_child: Resolve | None = None,
        node_name: str = NODE_NAME,
        interval: float = 0.2,
        arch: str = "amd64",
        bind_unselected: bool = True,
        only_namespaces_labelled: str | None = None,
    ) -> None:
        """``arch`` is the Node's ``kubernetes.io/arch``. A pod pinned to a node (a
        DaemonSet's, by its required node affinity) is bound only by that node's kubelet; a
        pod with a ``nodeSelector`` only by a kubelet whose Node's labels match it;
        ``bind_unselected=False`` leaves every other pod alone too (a second node that takes
        only the pods sent to it). ``only_namespaces_labelled`` (``key=value``): bind only
        pods in namespaces with that label, leaving every other pod to the real node's
        scheduler."""
        from kubernetes import client

        self.core: Any = client.CoreV1Api(api_client)
        self.node_name = node_name
        self.interval = interval
        self.arch = arch
        self.bind_unselected = bind_unselected
        self.only_namespaces_labelled = only_namespaces_labelled
        self.errors: list[str] = []
        self._resolve = resolve
        self._resolve_child = resolve_child
        self._lock = threading.Lock()
        self._behaviours: dict[str, Behaviour] = {}
        self._records: dict[str, PodRecord] = {}
        self._first_digest: dict[str, str] = {}  # image -> digest this node first pulled
        self._cached_digest: dict[str, str] = {}  # image -> digest this node pulled last
        self._ip_counter = 1
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # -- knobs ----------------------------------------------------------------------

    def behave(self, key: str, behaviour: Behaviour) -> None:
        """Set the behaviour for an image string (``host/repo:tag``) or a digest (``sha256:…``)."""
        with self._lock:
            self._behaviours[key] = behaviour

    def use_resolver(self, resolve: Resolve, resolve_child: Resolve | None = None) -> None:
        """Point "pulls" at another registry (e.g. the test's docker-registry)."""
        with self._lock:
            self._resolve = resolve
            self._resolve_child = resolve_child

    def forget_images(self) -> None:
        """Empty the node's image cache (as if the node were replaced)."""
        with self._lock:
            self._first_digest.clear()
            self._cached_digest.clear()

    def reset(self, resolve: Resolve, resolve_child: Resolve | None = None) -> None:
        """Back to defaults between tests: no knobs, no cached images, the given resolver."""
        with self._lock:
            self._behaviours.clear()
            self._first_digest.clear()
            self._cached_digest.clear()
            self._resolve = resolve
            self._resolve_child = resolve_child
            self.errors.clear()

    # -- lifecycle -------------------------------------------------------------------

    def start(self) -> None:
        self.register_node()
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="simulated-kubelet", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 10.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
            if self._thread.is_alive():
                raise RuntimeError(f"simulated kubelet did not stop within {timeout}s")
            self._thread = None

    def __enter__(self) -> SimulatedKubelet:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def register_node(self) -> None:
        """Create (or recreate) the Node, Ready, with room for plenty of pods."""
        kubelet_api.register_node(
            self.core, node_name=self.node_name, arch=self.arch, labels=self.node_labels
        )

    @property
    def node_labels(self) -> dict[str, str]:
        return {
            "kubernetes.io/hostname": self.node_name,
            "kubernetes.io/os": "linux",
            "kubernetes.io/arch": self.arch,
            SIMULATED_NODE_LABEL[0]: SIMULATED_NODE_LABEL[1],
        }

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.sync_once()
            except Exception as exc:  # survive, count, keep going (one bad pass is not fatal)
                log.exception("simulated kubelet pass failed")
                self.errors.append(repr(exc))
            self._stop.wait(self.interval)

    # -- one pass --------------------------------------------------------------------

    def sync_once(self) -> None:
        """Bind, pull, write status, finalize deletions — one pass over every pod."""
        response = self.core.list_pod_for_all_namespaces(_preload_content=False)
        pods = json.loads(response.data)["items"]
        ours = kubelet_api.namespaces(self.core, self.only_namespaces_labelled)
        live = set()
        now = time.time()
        for pod in pods:
            uid = pod["metadata"]["uid"]
            live.add(uid)
            node = pod["spec"].get("nodeName")
            if not node:
                mine = ours is None or pod["metadata"]["namespace"] in ours
                if mine and not pod["metadata"].get("deletionTimestamp") and self.takes(pod):
                    kubelet_api.bind(self.core, pod, self.node_name)
                continue
            if node != self.node_name:
                continue
            self._sync_pod(pod, now)
        for uid in set(self._records) - live:
            del self._records[uid]

    def takes(self, pod: Mapping[str, Any]) -> bool:
        """Would a scheduler put this unscheduled pod on this node? A pod pinned to a node
        goes there; one with a ``nodeSelector`` to a node whose labels match it; any other
        only to a kubelet that binds unselected pods."""
        pinned = pinned_node(pod)
        if pinned is not None:
            return pinned == self.node_name
        selector = pod["spec"].get("nodeSelector") or {}
        if selector:
            labels = self.node_labels
            return all(labels.get(key) == value for key, value in selector.items())
        return self.bind_unselected

    def set_ready(self, ready: bool) -> None:
        """Write the Node's Ready condition (no node lifecycle controller runs here, so its
        pods keep whatever readiness they had: a NotReady node under Ready pods)."""
        kubelet_api.set_ready(self.core, node_name=self.node_name, ready=ready)

    def _record(self, pod: Mapping[str, Any], now: float) -> PodRecord:
        uid = pod["metadata"]["uid"]
        record = self._records.get(uid)
        if record is None:
            ip = f"10.244.{self._ip_counter // 250}.{self._ip_counter % 250 + 1}"
            self._ip_counter += 1
            record = PodRecord(seen_at=now, pod_ip=ip)
            self._records[uid] = record
        return record

    def behaviour_for(self, pod: Mapping[str, Any], record: PodRecord) -> Behaviour:
        """Pod annotation, else a knob for a pulled digest, else for an image string."""
        text = pod["metadata"].get("annotations", {}).get(BEHAVIOUR_ANNOTATION)
        if text is not None:
            return Behaviour.from_annotation(text)
        with self._lock:
            for container in pod["spec"]["containers"]:
                image_id = record.image_ids.get(container["name"], "")
                digest = image_id.rpartition("@")[2]
                if digest in self._behaviours:
                    return self._behaviours[digest]
            for container in pod["spec"]["containers"]:
                if container["image"] in self._behaviours:
                    return self._behaviours[container["image"]]
        return Behaviour()

    def _sync_pod(self, pod: Mapping[str, Any], now: float) -> None:
        record = self._record(pod, now)
        behaviour = self.behaviour_for(pod, record)
        meta = pod["metadata"]

        if meta.get("deletionTimestamp"):
            if record.deleting_since is None:
                record.deleting_since = now
            if (
                not record.delete_sent
                and now >= record.deleting_since + behaviour.terminate_seconds
            ):
                kubelet_api.finalize(self.core, pod)
                record.delete_sent = True
            return

        if record.pulled_at is None and now >= record.seen_at + behaviour.pull_seconds:
            self._pull(pod, record, behaviour, now)
            behaviour = self.behaviour_for(pod, record)  # a knob may be keyed by the digest

        status = pod_status(pod=pod, record=record, behaviour=behaviour, now=now)
        if status != record.last_written:
            kubelet_api.write_status(self.core, pod, status)
            record.last_written = status

    def _pull(
        self, pod: Mapping[str, Any], record: PodRecord, behaviour: Behaviour, now: float
    ) -> None:
        """Resolve every container image through this node's cache (``kubelet_images.pull``)."""
        with self._lock:
            resolve, resolve_child = self._resolve, self._resolve_child
        pull(
            pod,
            record,
            behaviour,
            now,
            lock=self._lock,
            resolve=resolve,
            resolve_child=resolve_child,
            cached_digest=self._cached_digest,
            first_digest=self._first_digest,
            digest_knob=self._digest_knob,
        )

    def _digest_knob(self, digest: str) -> Behaviour:
        with self._lock:
            return self._behaviours.get(digest, Behaviour())


def pinned_node(pod: Mapping[str, Any]) -> str | None:
    """The one node a pod's required node affinity names (``matchFields`` on
    ``metadata.name``, as the DaemonSet controller writes it), or None."""
    affinity = ((pod.get("spec") or {}).get("affinity") or {}).get("nodeAffinity") or {}
    required = affinity.get("requiredDuringSchedulingIgnoredDuringExecution") or {}
    for term in required.get("nodeSelectorTerms") or ():
        for field_ in term.get("matchFields") or ():
            values = field_.get("values") or []
            by_name = field_.get("key") == "metadata.name" and field_.get("operator") == "In"
            if by_name and len(values) == 1:
                return str(values[0])
    return None


@contextlib.contextmanager
def running_kubelet(api_client: Any, resolve: Resolve, **kwargs: Any) -> Iterator[SimulatedKubelet]:
    """Start a ``SimulatedKubelet`` and stop it afterwards."""
    kubelet = SimulatedKubelet(api_client, resolve, **kwargs)
    kubelet.start()
    try:
        yield kubelet
    finally:
        kubelet.stop()
