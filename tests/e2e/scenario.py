"""Tools for the end-to-end scenarios: an enrolled app on the real registry, a watch that
records every pod and Deployment change with its arrival time, and autoroll's metrics.

The scenario tests assert on what the cluster did (the watch's history), not on what autoroll
says it did; autoroll's log and metrics are checked as a second, independent witness.

The history is pure data (``PodSeen``), so the safety checks (``deletions``,
``unsettled_deletions``) are plain functions over it.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from tests.e2e.background import BackgroundThread
from tests.e2e.controller import Autoroll
from tests.e2e.helpers import apps_api, core_api, daemonset, deployment, statefulset
from tests.e2e.images import APP_PORT, Image, Pusher, push_app, push_index
from tests.support.serve import scrape_metric
from tests.support.wait import eventually

ENROLL_LABEL = "aethnet.se/autoroll"
# Each test's controller only sees its own Deployments: namespaces of earlier tests may still
# be terminating, and their Deployments must not take part in this test's counts.
TEST_LABEL = "e2e.autoroll/test"


#: The AppsV1Api method name of each kind (``read_namespaced_<name>``).
_API_NAME = {"deployment": "deployment", "statefulset": "stateful_set", "daemonset": "daemon_set"}


def label_selector(test: str) -> str:
    """``LABEL_SELECTOR`` for a controller that sees only the Deployments of test ``test``."""
    return f"{ENROLL_LABEL}=true,{TEST_LABEL}={test}"


# --- what the watch saw ------------------------------------------------------------------


@dataclass(frozen=True)
class PodSeen:
    """One pod event as the watch delivered it: ``at`` is ``time.monotonic()`` on arrival."""

    at: float
    kind: str  # INITIAL (from the first list), ADDED, MODIFIED, DELETED
    name: str
    uid: str
    ready: bool
    terminating: bool
    digest: str  # from the first container's imageID; "" while pulling
    restarts: int
    #: when the API server took the delete request, by its own clock (deletionTimestamp less
    #: the grace period; whole seconds); None while not terminating
    delete_requested: datetime | None = None

    @classmethod
    def from_raw(cls, at: float, kind: str, raw: Mapping[str, Any]) -> PodSeen:
        meta = raw["metadata"]
        status = raw.get("status") or {}
        conditions = status.get("conditions") or []
        containers = status.get("containerStatuses") or [{}]
        return cls(
            at=at,
            kind=kind,
            name=meta["name"],
            uid=meta["uid"],
            ready=any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions),
            terminating=bool(meta.get("deletionTimestamp")),
            digest=(containers[0].get("imageID") or "").rpartition("@")[2],
            restarts=int(containers[0].get("restartCount") or 0),
            delete_requested=_delete_requested(meta),
        )


def _delete_requested(meta: Mapping[str, Any]) -> datetime | None:
    stamp = meta.get("deletionTimestamp")
    if not stamp:
        return None
    at = datetime.fromisoformat(str(stamp).replace("Z", "+00:00"))
    return at - timedelta(seconds=int(meta.get("deletionGracePeriodSeconds") or 0))


def deletions(history: Iterable[PodSeen]) -> list[PodSeen]:
    """The event at which each pod was deleted: first seen terminating, or gone without that."""
    out: list[PodSeen] = []
    done: set[str] = set()
    for seen in history:
        if seen.uid in done:
            continue
        if seen.terminating or seen.kind == "DELETED":
            done.add(seen.uid)
            out.append(seen)
    return out


def unsettled_deletions(history: Sequence[PodSeen], replicas: int) -> list[str]:
    """Every deletion made while the app was not settled, described; [] when none was.

    Replays the history: just before each deletion, no other pod may be terminating, every
    pod must be Ready and at least ``replicas`` must be. That is the rule which guarantees
    that two pods are never down at once because of autoroll.
    """
    state: dict[str, PodSeen] = {}
    problems: list[str] = []
    deleted: set[str] = set()
    for seen in history:
        if seen.uid not in deleted and (seen.terminating or seen.kind == "DELETED"):
            deleted.add(seen.uid)
            others = [p for uid, p in state.items() if uid != seen.uid]
            terminating = [p.name for p in others if p.terminating]
            unready = [p.name for p in others if not p.ready and not p.terminating]
            ready = [p for p in state.values() if p.ready and not p.terminating]
            if terminating or unready or len(ready) < replicas:
                problems.append(
                    f"{seen.name} deleted while terminating={terminating} unready={unready} "
                    f"ready={len(ready)}/{replicas}"
                )
        if seen.kind == "DELETED":
            state.pop(seen.uid, None)
        else:
            state[seen.uid] = seen
    return problems


def became_ready(history: Iterable[PodSeen], digest: str) -> list[PodSeen]:
    """The first Ready event of each pod that runs ``digest``, in order."""
    out: list[PodSeen] = []
    seen_uids: set[str] = set()
    for seen in history:
        if seen.ready and seen.digest == digest and seen.uid not in seen_uids:
            seen_uids.add(seen.uid)
            out.append(seen)
    return out


# --- the watch ---------------------------------------------------------------------------


class Recorder(BackgroundThread):
    """Watch one kind in one namespace from a thread; keep every raw event with its arrival.

    ``list_function`` is a namespaced list call of the Kubernetes client (for example
    ``CoreV1Api.list_namespaced_pod``). Start with ``with``; the thread restarts the watch
    every second from the last resourceVersion, so stopping takes at most about a second.
    ``events`` holds ``(time.monotonic(), type, object)``; ``errors`` what broke the watch.
    """

    def __init__(self, list_function: Callable[..., Any], namespace: str, **selectors: str) -> None:
        """``selectors``: ``label_selector``/``field_selector`` for the list and the watch."""
        self.list_function = list_function
        self.namespace = namespace
        self.selectors = selectors
        self.events: list[tuple[float, str, dict[str, Any]]] = []
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> Recorder:
        listed = self.list_function(self.namespace, _preload_content=False, **self.selectors)
        body = json.loads(listed.data)
        now = time.monotonic()
        for item in body["items"]:
            self.events.append((now, "INITIAL", item))
        version = body["metadata"]["resourceVersion"]
        self._start_thread(self._run, "e2e-recorder", version)
        return self

    def _run(self, version: str) -> None:
        from kubernetes import watch

        new_watch: Any = watch.Watch
        while not self._stop.is_set():
            stream = new_watch()
            try:
                for event in stream.stream(
                    self.list_function,
                    self.namespace,
                    resource_version=version,
                    timeout_seconds=1,
                    **self.selectors,
                ):
                    raw = event["raw_object"]
                    if event["type"] == "ERROR":
                        self.errors.append(str(raw))
                        self._stop.set()
                        break
                    version = raw["metadata"]["resourceVersion"]
                    self.events.append((time.monotonic(), event["type"], raw))
            except Exception as exc:  # recorded; the test asserts on ``errors``
                self.errors.append(repr(exc))
                time.sleep(0.2)

    def pods(self) -> list[PodSeen]:
        """The history so far, as pod events."""
        return [PodSeen.from_raw(at, kind, raw) for at, kind, raw in list(self.events)]


# --- the app -------------------------------------------------------------------------------


@dataclass
class App:
    """An enrolled workload of ``image`` (``<registry>/<repository>:latest``) in ``namespace``:
    a Deployment unless ``kind`` says ``statefulset`` or ``daemonset``.

    Its images are real (``images.py``): containers serve HTTP on ``APP_PORT`` and get a
    readiness probe first asked ``ready_after`` seconds after they start, so on the real node
    "Ready" is the kubelet's verdict; the simulated kubelet ignores the probe.
    """

    kube: Any
    namespace: str
    name: str
    repository: str
    pusher: Pusher
    test: str
    pushes: int = 0
    ready_after: float = 1.0
    kind: str = "deployment"

    #: the host the workload's image names, when not the pusher's (a proxy in front of it)
    image_host: str = ""

    @property
    def image(self) -> str:
        return f"{self.image_host or self.pusher.server.host}/{self.repository}:latest"

    def push(self, *, crash: bool = False, crash_after: int = 0) -> str:
        """Push a new single-arch ``:latest`` (distinct config each time); its digest.
        ``crash_after``: the build serves that many seconds, then exits 3."""
        return self.push_image(crash=crash, crash_after=crash_after).digest

    def push_image(self, *, crash: bool = False, crash_after: int = 0) -> Image:
        self.pushes += 1
        build = f"{self.repository} build {self.pushes}"
        return push_app(
            self.pusher, self.repository, build=build, crash=crash, crash_after=crash_after
        )

    def push_index(self) -> Image:
        """Push a new multi-arch (amd64, arm64) index as ``:latest``."""
        self.pushes += 1
        return push_index(self.pusher, self.repository, build=f"{self.repository} {self.pushes}")

    def deploy(
        self, *, replicas: int = 3, pull_policy: str = "Always", **kind_args: Any
    ) -> dict[str, Any]:
        """Create the enrolled workload; returns it as the API server stored it.
        ``kind_args``: a StatefulSet's ``on_delete``/``partition`` (``helpers.statefulset``);
        a DaemonSet ignores ``replicas`` (one pod per node)."""
        common: dict[str, Any] = {
            "labels": {ENROLL_LABEL: "true", TEST_LABEL: self.test},
            "pull_policy": pull_policy,
            "http_port": APP_PORT,
            "ready_after": self.ready_after,
        }
        apps = apps_api(self.kube)
        if self.kind == "statefulset":
            manifest = statefulset(self.name, self.image, replicas=replicas, **common, **kind_args)
            apps.create_namespaced_stateful_set(self.namespace, manifest)
        elif self.kind == "daemonset":
            apps.create_namespaced_daemon_set(
                self.namespace, daemonset(self.name, self.image, **common, **kind_args)
            )
        else:
            manifest = deployment(self.name, self.image, replicas=replicas, **common, **kind_args)
            apps.create_namespaced_deployment(self.namespace, manifest)
        return self.workload()

    def workload(self) -> dict[str, Any]:
        """The workload object as the API server has it now."""
        reader = getattr(apps_api(self.kube), f"read_namespaced_{_API_NAME[self.kind]}")
        response = reader(self.name, self.namespace, _preload_content=False)
        body: dict[str, Any] = json.loads(response.data)
        return body

    def deployment(self) -> dict[str, Any]:
        """The Deployment (``workload`` of a Deployment app)."""
        return self.workload()

    def workload_list_function(self) -> Callable[..., Any]:
        """The namespaced list call of its kind (for a ``Recorder`` of the object)."""
        function: Callable[..., Any] = getattr(
            apps_api(self.kube), f"list_namespaced_{_API_NAME[self.kind]}"
        )
        return function

    def live_pods(self) -> list[PodSeen]:
        """The app's pods now (including terminating ones)."""
        response = core_api(self.kube).list_namespaced_pod(
            self.namespace, label_selector=f"app={self.name}", _preload_content=False
        )
        now = time.monotonic()
        return [PodSeen.from_raw(now, "LIST", p) for p in json.loads(response.data)["items"]]

    def wait_rolled(self, digest: str, *, replicas: int, timeout: float) -> list[PodSeen]:
        """Wait until exactly ``replicas`` pods exist, all Ready on ``digest``; return them."""

        def rolled() -> list[PodSeen]:
            pods = self.live_pods()
            summary = [(p.name, p.digest[:19], p.ready, p.terminating) for p in pods]
            assert len(pods) == replicas, summary
            assert all(p.ready and p.digest == digest and not p.terminating for p in pods), summary
            return pods

        return eventually(rolled, timeout=timeout, what=f"{replicas} pods Ready on {digest[:19]}")


# --- autoroll's own account ----------------------------------------------------------------


def metric(autoroll: Autoroll, name: str, labels: Mapping[str, str] | None = None) -> float:
    """A sample from ``GET /metrics`` (0 when the labelled sample does not exist yet)."""
    return scrape_metric(autoroll.url, name, **dict(labels or {}))


def decision_lines(autoroll: Autoroll, app: App, pattern: str = "", *, since: int = 0) -> list[str]:
    """autoroll's decision lines about ``app`` that also match ``pattern``, from output line
    ``since`` on."""
    key = f"{app.namespace}/{app.kind}/{app.name} "
    return [line for line in autoroll.lines(pattern, since=since) if key in line]


@contextlib.contextmanager
def nudging(autoroll: Autoroll, every: float = 1.0) -> Iterator[None]:
    """A signed webhook every ``every`` seconds, as after a burst of pushes: each asks for a
    full pass, the same pass the poll timer runs, so a test that counts passes needs not wait
    a poll interval for each (the poll still runs its own)."""
    stop = threading.Event()

    def run() -> None:
        while not stop.wait(every):
            with contextlib.suppress(Exception):  # a refused or lost nudge: the next one
                autoroll.webhook()

    thread = threading.Thread(target=run, name="e2e-nudger", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(5)
