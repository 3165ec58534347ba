"""A simulated kubelet: a Node, pods bound to it, pod status written as containerd reports it.

The control plane has no scheduler and no real nodes. This thread stands in for both: it binds
every unscheduled pod to its Node (``pods/binding``), "pulls" each container image by asking an
injected ``resolve(image) -> digest | None`` (a real registry in e2e tests), and then writes pod
status as kubelet + containerd would: phase, ``containerStatuses[].imageID`` as
``<host>/<repo>@sha256:<digest>``, the Ready condition, ``startTime``. Pods marked for deletion
are finalized with grace 0, since no container has to stop.

Knobs (``Behaviour``), chosen per pod by annotation, else per digest, else per image string:

- ``crash_loop``: the container never becomes Ready; ``restartCount`` grows; waiting
  ``CrashLoopBackOff`` (a run-to-completion pod fails instead).
- ``ready_after``: seconds from container start to Ready (slow readiness probe).
- ``pull_seconds``: seconds in ``ContainerCreating`` with no imageID (``math.inf``: forever).
- ``report_child``: imageID carries the platform child digest of an index (CRI-O has done so);
  needs a ``resolve_child`` callable.
- ``keep_old_digest``: the runtime keeps reporting the digest this node first saw for the image.
- ``terminate_seconds``: how long a deleted pod stays Terminating.
- ``run_seconds``: for ``restartPolicy`` Never/OnFailure pods (Jobs), time until exit 0.

The status of a pod is a pure function (``pod_status``) of its spec, what the kubelet recorded
about it (when seen, when pulled, which digests) and the clock; the thread only writes when
that function's answer changed.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import requests

log = logging.getLogger("autoroll.e2e.kubelet")

Resolve = Callable[[str], str | None]

BEHAVIOUR_ANNOTATION = "kubelet.e2e.autoroll/behaviour"
NODE_NAME = "sim-node"
#: A label every simulated Node carries: a DaemonSet meant for simulated nodes selects it, so it
#: wants no pod on the real node (whose binder would not send one here, and the reverse).
SIMULATED_NODE_LABEL = ("e2e.autoroll/simulated-node", "true")
# A crash-looping container restarts this often (the real back-off grows to 5 min; tests wait
# for a growing restartCount, not for the exact schedule).
CRASH_PERIOD_SECONDS = 1.0

# The manifest media types a runtime accepts; with the index types listed, a multi-arch tag
# answers with the index digest, which is what containerd records as the repo digest.
MANIFEST_ACCEPT = ", ".join(
    [
        "application/vnd.oci.image.index.v1+json",
        "application/vnd.oci.image.manifest.v1+json",
        "application/vnd.docker.distribution.manifest.list.v2+json",
        "application/vnd.docker.distribution.manifest.v2+json",
    ]
)
INDEX_TYPES = {
    "application/vnd.oci.image.index.v1+json",
    "application/vnd.docker.distribution.manifest.list.v2+json",
}


@dataclass(frozen=True)
class Behaviour:
    """How the simulated runtime treats a container (see the module docstring)."""

    crash_loop: bool = False
    ready_after: float = 0.0
    pull_seconds: float = 0.0
    report_child: bool = False
    keep_old_digest: bool = False
    terminate_seconds: float = 0.0
    run_seconds: float = 0.5

    @classmethod
    def from_annotation(cls, text: str) -> Behaviour:
        """Parse the pod annotation (a JSON object of fields); a bad one is a ValueError."""
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{BEHAVIOUR_ANNOTATION}: not JSON ({exc})") from exc
        if not isinstance(data, dict):
            raise ValueError(f"{BEHAVIOUR_ANNOTATION}: expected a JSON object, got {text!r}")
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(
                f"{BEHAVIOUR_ANNOTATION}: unknown field(s) {unknown}; expected some of "
                f"{sorted(known)}"
            )
        return cls(**data)

    def annotation(self) -> str:
        """The annotation value that selects this behaviour for one pod."""
        return json.dumps(dataclasses.asdict(self), sort_keys=True)


# --- image references -----------------------------------------------------------


@dataclass(frozen=True)
class ImageRef:
    """``host/repo[:tag][@digest]`` split the way a runtime does (no Docker Hub defaults)."""

    host: str
    repository: str
    tag: str | None
    digest: str | None

    @classmethod
    def parse(cls, image: str) -> ImageRef:
        name, _, digest = image.partition("@")
        slash = name.rfind("/")
        colon = name.rfind(":")
        tag = None
        if colon > slash:
            name, tag = name[:colon], name[colon + 1 :]
        host, _, repository = name.partition("/")
        if not repository or not ("." in host or ":" in host or host == "localhost"):
            # Docker Hub short names: what containerd would expand them to.
            host, repository = "docker.io", name if "/" in name else f"library/{name}"
        return cls(host=host, repository=repository, tag=tag or None, digest=digest or None)

    def repo_digest(self, digest: str) -> str:
        """The imageID containerd reports: ``host/repo@sha256:…``."""
        return f"{self.host}/{self.repository}@{digest}"


# --- resolvers ------------------------------------------------------------------


class StaticResolver:
    """An in-memory registry: image string → digest; ``None`` (or absent) is "pull fails"."""

    def __init__(self, digests: Mapping[str, str | None] | None = None) -> None:
        self._lock = threading.Lock()
        self._digests: dict[str, str | None] = dict(digests or {})
        self.calls: list[str] = []

    def set(self, image: str, digest: str | None) -> None:
        with self._lock:
            self._digests[image] = digest

    def __call__(self, image: str) -> str | None:
        with self._lock:
            self.calls.append(image)
            return self._digests.get(image)


class RegistryResolver:
    """Resolve tags against a real OCI registry over HTTP, as a container runtime pulls them.

    ``resolve`` HEADs the manifest with the index types accepted (the index digest for a
    multi-arch tag); ``child`` GETs the index and picks the platform's manifest digest.
    Every failure is ``None`` ("the pull failed"), never an exception.
    """

    def __init__(
        self,
        *,
        scheme: str = "http",
        auth: tuple[str, str] | None = None,
        timeout: float = 3.0,
        platform: tuple[str, str] = ("linux", "amd64"),
        session: requests.Session | None = None,
    ) -> None:
        self.scheme = scheme
        self.auth = auth
        self.timeout = timeout
        self.platform = platform
        self.session = session or requests.Session()

    def _url(self, ref: ImageRef) -> str:
        reference = ref.digest or ref.tag or "latest"
        return f"{self.scheme}://{ref.host}/v2/{ref.repository}/manifests/{reference}"

    def __call__(self, image: str) -> str | None:
        ref = ImageRef.parse(image)
        try:
            response = self.session.head(
                self._url(ref),
                headers={"Accept": MANIFEST_ACCEPT},
                auth=self.auth,
                timeout=self.timeout,
            )
        except requests.RequestException:
            return None
        digest = response.headers.get("Docker-Content-Digest", "")
        return digest if response.status_code == 200 and digest.startswith("sha256:") else None

    def child(self, image: str) -> str | None:
        ref = ImageRef.parse(image)
        try:
            response = self.session.get(
                self._url(ref),
                headers={"Accept": MANIFEST_ACCEPT},
                auth=self.auth,
                timeout=self.timeout,
            )
            body = response.json() if response.status_code == 200 else None
        except (requests.RequestException, ValueError):
            return None
        if not isinstance(body, dict) or body.get("mediaType") not in INDEX_TYPES:
            return None
        os_name, arch = self.platform
        for manifest in body.get("manifests", []):
            platform = manifest.get("platform", {})
            if platform.get("os") == os_name and platform.get("architecture") == arch:
                digest = manifest.get("digest")
                return digest if isinstance(digest, str) else None
        return None


# --- the pure part: pod status from what the kubelet knows ------------------------


@dataclass
class PodRecord:
    """What the simulated kubelet remembers about one pod (by uid)."""

    seen_at: float
    pod_ip: str
    pulled_at: float | None = None
    image_ids: dict[str, str] = field(default_factory=dict)
    pull_error: str | None = None
    deleting_since: float | None = None
    delete_sent: bool = False
    last_written: dict[str, Any] | None = None


def _ts(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


def _condition(kind: str, ok: bool, since: float, reason: str | None = None) -> dict[str, Any]:
    cond: dict[str, Any] = {
        "type": kind,
        "status": "True" if ok else "False",
        "lastProbeTime": None,
        "lastTransitionTime": _ts(since),
    }
    if reason:
        cond["reason"] = reason
    return cond


def runs_to_completion(pod: Mapping[str, Any]) -> bool:
    """Job pods (restartPolicy Never/OnFailure) exit; Deployment pods run forever."""
    return bool(pod.get("spec", {}).get("restartPolicy", "Always") != "Always")


def pod_status(
    *,
    pod: Mapping[str, Any],
    record: PodRecord,
    behaviour: Behaviour,
    now: float,
    host_ip: str = "127.0.0.1",
) -> dict[str, Any]:
    """The status fields kubelet owns, for this pod at ``now``."""
    containers = pod["spec"]["containers"]
    base: dict[str, Any] = {
        "hostIP": host_ip,
        "hostIPs": [{"ip": host_ip}],
        "startTime": _ts(record.seen_at),
    }
    init_statuses = [
        {
            "name": c["name"],
            "image": c["image"],
            "imageID": record.image_ids.get(c["name"], ""),
            "ready": True,
            "restartCount": 0,
            "state": {"terminated": {"exitCode": 0, "reason": "Completed"}},
        }
        for c in pod["spec"].get("initContainers", [])
    ]
    if init_statuses:
        base["initContainerStatuses"] = init_statuses
    scheduled = _condition("PodScheduled", True, record.seen_at)

    if record.pulled_at is None:
        # Still pulling (or the pull failed): no imageID yet, nothing ready.
        waiting = (
            {"reason": "ErrImagePull", "message": record.pull_error}
            if record.pull_error
            else {"reason": "ContainerCreating"}
        )
        return base | {
            "phase": "Pending",
            "conditions": [
                scheduled,
                _condition("Initialized", True, record.seen_at),
                _condition("ContainersReady", False, record.seen_at, "ContainersNotReady"),
                _condition("Ready", False, record.seen_at, "ContainersNotReady"),
            ],
            "containerStatuses": [_status(c, "", {"waiting": waiting}) for c in containers],
        }

    started = record.pulled_at
    ip = {"podIP": record.pod_ip, "podIPs": [{"ip": record.pod_ip}]}
    initialized = _condition("Initialized", True, started)

    if runs_to_completion(pod):
        exit_at = started + behaviour.run_seconds
        if now >= exit_at:
            failed = behaviour.crash_loop
            code = 1 if failed else 0
            terminated = {
                "exitCode": code,
                "reason": "Error" if failed else "Completed",
                "startedAt": _ts(started),
                "finishedAt": _ts(exit_at),
            }
            return (
                base
                | ip
                | {
                    "phase": "Failed" if failed else "Succeeded",
                    "conditions": [
                        scheduled,
                        initialized,
                        _condition("ContainersReady", False, exit_at, "PodCompleted"),
                        _condition("Ready", False, exit_at, "PodCompleted"),
                    ],
                    "containerStatuses": [
                        _status(c, record.image_ids[c["name"]], {"terminated": terminated})
                        for c in containers
                    ],
                }
            )

    if behaviour.crash_loop and not runs_to_completion(pod):
        restarts = 1 + int((now - started) / CRASH_PERIOD_SECONDS)
        last_exit = started + (restarts - 1) * CRASH_PERIOD_SECONDS
        return (
            base
            | ip
            | {
                "phase": "Running",
                "conditions": [
                    scheduled,
                    initialized,
                    _condition("ContainersReady", False, started, "ContainersNotReady"),
                    _condition("Ready", False, started, "ContainersNotReady"),
                ],
                "containerStatuses": [
                    _status(
                        c,
                        record.image_ids[c["name"]],
                        {
                            "waiting": {
                                "reason": "CrashLoopBackOff",
                                "message": f"back-off restarting failed container {c['name']}",
                            }
                        },
                        restarts=restarts,
                        last={
                            "terminated": {
                                "exitCode": 1,
                                "reason": "Error",
                                "startedAt": _ts(last_exit),
                                "finishedAt": _ts(last_exit),
                            }
                        },
                    )
                    for c in containers
                ],
            }
        )

    ready_at = started + behaviour.ready_after
    ready = now >= ready_at
    since = ready_at if ready else started
    return (
        base
        | ip
        | {
            "phase": "Running",
            "conditions": [
                scheduled,
                initialized,
                _condition(
                    "ContainersReady", ready, since, None if ready else "ContainersNotReady"
                ),
                _condition("Ready", ready, since, None if ready else "ContainersNotReady"),
            ],
            "containerStatuses": [
                _status(
                    c,
                    record.image_ids[c["name"]],
                    {"running": {"startedAt": _ts(started)}},
                    ready=ready,
                    started=True,
                )
                for c in containers
            ],
        }
    )


def _status(
    container: Mapping[str, Any],
    image_id: str,
    state: dict[str, Any],
    *,
    ready: bool = False,
    started: bool = False,
    restarts: int = 0,
    last: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """One ``containerStatuses[]`` entry, as the kubelet writes it."""
    status = {
        "name": container["name"],
        "image": container["image"],
        "imageID": image_id,
        "ready": ready,
        "started": started,
        "restartCount": restarts,
        "state": state,
    }
    return status if last is None else {**status, "lastState": last}


# --- the imperative shell: a thread against the API --------------------------------


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
        from kubernetes.client.exceptions import ApiException

        now = _ts(time.time())
        body = {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": self.node_name,
                "labels": self.node_labels,
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
                    {"type": "Hostname", "address": self.node_name},
                ],
                "capacity": {"cpu": "16", "memory": "64Gi", "pods": "250"},
                "allocatable": {"cpu": "16", "memory": "64Gi", "pods": "250"},
                "nodeInfo": {
                    "architecture": self.arch,
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
            self.core.delete_node(self.node_name, grace_period_seconds=0)
        self.core.create_node(body, _preload_content=False)
        # Nodes keep status on create, but write it through the status subresource as well so
        # the Node is Ready whatever the API server version does on create.
        # The labels go with it: a status write replaces the metadata it is sent with.
        self.core.replace_node_status(
            self.node_name,
            {**body, "metadata": {"name": self.node_name, "labels": self.node_labels}},
            _preload_content=False,
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
        ours = self._namespaces()
        live = set()
        now = time.time()
        for pod in pods:
            uid = pod["metadata"]["uid"]
            live.add(uid)
            node = pod["spec"].get("nodeName")
            if not node:
                mine = ours is None or pod["metadata"]["namespace"] in ours
                if mine and not pod["metadata"].get("deletionTimestamp") and self.takes(pod):
                    self._bind(pod)
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
        now = _ts(time.time())
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
        self.core.patch_node_status(
            self.node_name, {"status": {"conditions": [condition]}}, _preload_content=False
        )

    def _namespaces(self) -> set[str] | None:
        """The namespaces whose pods this kubelet binds (None: all)."""
        if self.only_namespaces_labelled is None:
            return None
        listed = self.core.list_namespace(
            label_selector=self.only_namespaces_labelled, _preload_content=False
        )
        return {ns["metadata"]["name"] for ns in json.loads(listed.data)["items"]}

    def _bind(self, pod: Mapping[str, Any]) -> None:
        from kubernetes.client.exceptions import ApiException

        meta = pod["metadata"]
        body = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": meta["name"], "uid": meta["uid"]},
            "target": {"apiVersion": "v1", "kind": "Node", "name": self.node_name},
        }
        try:
            # _preload_content=False: the client cannot deserialize the Status it gets back.
            self.core.create_namespaced_pod_binding(
                meta["name"], meta["namespace"], body, _preload_content=False
            )
        except ApiException as exc:
            if exc.status not in (404, 409):  # gone, or already bound: next pass sees it
                raise

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
                self._finalize(pod)
                record.delete_sent = True
            return

        if record.pulled_at is None and now >= record.seen_at + behaviour.pull_seconds:
            self._pull(pod, record, behaviour, now)
            behaviour = self.behaviour_for(pod, record)  # a knob may be keyed by the digest

        status = pod_status(pod=pod, record=record, behaviour=behaviour, now=now)
        if status != record.last_written:
            self._write_status(pod, status)
            record.last_written = status

    def _pull(
        self, pod: Mapping[str, Any], record: PodRecord, behaviour: Behaviour, now: float
    ) -> None:
        """Resolve every container image; all succeed or the pod stays in ErrImagePull."""
        with self._lock:
            resolve, resolve_child = self._resolve, self._resolve_child
        ids: dict[str, str] = {}
        for container in [*pod["spec"].get("initContainers", []), *pod["spec"]["containers"]]:
            image = container["image"]
            ref = ImageRef.parse(image)
            policy = container.get("imagePullPolicy", "IfNotPresent")
            with self._lock:
                cached = self._cached_digest.get(image)
                first = self._first_digest.get(image)
            if ref.digest:
                digest: str | None = ref.digest
            elif policy != "Always" and cached:
                digest = cached  # IfNotPresent/Never: the node's copy, no registry call
            else:
                digest = resolve(image)
            if digest is None:
                record.pull_error = f"failed to resolve reference {image!r}"
                return
            with self._lock:
                self._cached_digest[image] = digest
                self._first_digest.setdefault(image, digest)
                first = self._first_digest[image]
            reported = digest
            if behaviour.keep_old_digest or self._digest_knob(digest).keep_old_digest:
                reported = first
            if behaviour.report_child or self._digest_knob(digest).report_child:
                child = resolve_child(image) if resolve_child else None
                if child is None:
                    record.pull_error = f"no platform manifest for {image!r}"
                    return
                reported = child
            ids[container["name"]] = ref.repo_digest(reported)
        record.image_ids = ids
        record.pull_error = None
        record.pulled_at = now

    def _digest_knob(self, digest: str) -> Behaviour:
        with self._lock:
            return self._behaviours.get(digest, Behaviour())

    def _write_status(self, pod: Mapping[str, Any], owned: Mapping[str, Any]) -> None:
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
            self.core.replace_namespaced_pod_status(
                meta["name"], meta["namespace"], body, _preload_content=False
            )
        except ApiException as exc:
            if exc.status not in (404, 409):
                raise

    def _finalize(self, pod: Mapping[str, Any]) -> None:
        from kubernetes.client.exceptions import ApiException

        meta = pod["metadata"]
        try:
            # All options in the body: the API server ignores query options when a body is sent.
            self.core.delete_namespaced_pod(
                meta["name"],
                meta["namespace"],
                body={"gracePeriodSeconds": 0, "preconditions": {"uid": meta["uid"]}},
                _preload_content=False,
            )
        except ApiException as exc:
            if exc.status not in (404, 409):
                raise


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
