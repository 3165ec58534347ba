"""Measurements 2 and 3 against a real ``autoroll serve`` (gunicorn, one worker) on 127.0.0.1
(the serve itself: ``bench.serve``).

2. Push-to-first-deletion: a new image is pushed to the registry under ``:latest``, the
   signed webhook is sent as Forgejo would, and a pod watch (started before the first push)
   timestamps the first deletion of a pod of that Deployment. Targeted (today's design): the
   body is Forgejo's ``package`` event naming that repository and tag, and the controller
   runs with its watched cache (the default), so the pass looks at that tag's workloads
   only. Full pass (the design before it): ``WATCH_CACHE=false`` and a body that names no
   package, so every push starts a pass over everything enrolled, listed from the API.
   Each push targets its own settled Deployment (the previous one is rolling and, with no
   controller manager, never gets its replacement). The controller is idle before each
   push; the poll timer is an hour, so only webhooks start passes.
3. The webhook under load: first a control with the controller idle (bad signatures, so
   no pass starts); then one signed webhook starts a pass over the large enrolled set;
   while it runs, a second process (``bench.loadgen``) sends the bad-signature half; after
   the controller is idle again, the same with the good half. Passes are counted from
   ``autoroll_ticks_total``: the bad half must add none beyond the pass it was sent during.
   Then a watch burst: bad-signature requests while thousands of enrolled pods are patched
   (each patch is a watch event the cache files), with no pass running.
"""

from __future__ import annotations

import json
import queue
import threading
import time
from collections.abc import Callable
from typing import Any

import requests

from bench.child import run_module
from bench.controlplane import ApiServer
from bench.populate import (
    ENROLL_LABEL,
    ApiWriter,
    Layout,
    create_deployment,
    create_running_pod,
    run_all,
)
from bench.serve import TAG_PASS_INTERVAL_SECONDS, Serve
from tests.support.registry import ImagePusher

LATENCY_NAMESPACE = "bench-latency"
LATENCY_LABEL = "bench.autoroll/latency"

#: A signed body that names no package: a full pass, as every webhook was before issue 17.
FULL_PASS_BODY = b'{"ref": "refs/heads/main"}'


def package_body(repository: str, tag: str) -> bytes:
    """Forgejo's ``package`` event for a container ``repository:tag`` (the fields it reads;
    Gitea 1.27's own deliveries are in tests/unit/data/)."""
    owner, _, name = repository.partition("/")
    return json.dumps(
        {
            "action": "created",
            "package": {
                "id": 1,
                "type": "container",
                "name": name,
                "version": tag,
                "owner": {"login": owner},
            },
            "sender": {"login": "ci"},
        }
    ).encode()


# --------------------------------------------------------------------------------------------
# Measurement 2


def create_latency_targets(
    writer: ApiWriter, pusher: ImagePusher, registry_host: str, *, group: str, count: int
) -> list[str]:
    """``count`` settled Deployments, each on its own repository; returns their names."""
    names = []
    for k in range(count):
        name = f"lat-{group}-{k:03d}"
        repository = f"lat/{group}-{k:03d}"
        digest = pusher.push_image(repository, "latest").digest
        image = f"{registry_host}/{repository}:latest"
        labels = {ENROLL_LABEL: "true", LATENCY_LABEL: group}
        create_deployment(writer, LATENCY_NAMESPACE, name, image, labels)
        for replica in range(3):
            create_running_pod(
                writer,
                LATENCY_NAMESPACE,
                f"{name}-{replica}",
                app=name,
                image=image,
                image_id=f"{registry_host}/{repository}@{digest}",
            )
        names.append(name)
    return names


class DeletionWatch:
    """A pod watch on one namespace in a thread: (monotonic time, pod name) per deletion.

    A deletion is the first event that shows it: ``DELETED``, or ``MODIFIED`` with a
    ``deletionTimestamp`` (a pod bound to a node would linger as Terminating). The watch is
    read with a short read timeout and resumed from the last resourceVersion, so ``close``
    never has to interrupt a blocked read from another thread.
    """

    def __init__(self, api: ApiServer, namespace: str) -> None:
        self.events: queue.Queue[tuple[float, str]] = queue.Queue()
        self._session = requests.Session()
        self._session.trust_env = False
        self._session.verify = str(api.ca_file)
        self._session.headers["Authorization"] = f"Bearer {api.token}"
        self._base = f"{api.server}/api/v1/namespaces/{namespace}/pods"
        listed = self._session.get(self._base, timeout=30)
        listed.raise_for_status()
        self._version: str = listed.json()["metadata"]["resourceVersion"]
        self._seen: set[str] = set()
        self._stop = threading.Event()
        self.error: str = ""
        self._thread = threading.Thread(target=self._run, name="deletion-watch", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self._follow()
            except (requests.ConnectionError, requests.Timeout):
                continue  # idle for a second (read timeout): resume from the last version
            except (requests.RequestException, ValueError, KeyError) as exc:
                self.error = f"{type(exc).__name__}: {exc}"
                return

    def _follow(self) -> None:
        with self._session.get(
            self._base,
            params={"watch": "1", "resourceVersion": self._version, "allowWatchBookmarks": "1"},
            stream=True,
            timeout=(5, 1.0),
        ) as response:
            response.raise_for_status()
            for line in response.iter_lines():
                now = time.monotonic()
                if self._stop.is_set():
                    return
                if not line:
                    continue
                event = json.loads(line)
                if event["type"] == "ERROR":
                    raise ValueError(f"watch error: {event['object']}")
                meta = event["object"]["metadata"]
                self._version = meta.get("resourceVersion", self._version)
                name = meta.get("name", "")
                deleting = event["type"] == "DELETED" or (
                    event["type"] == "MODIFIED" and meta.get("deletionTimestamp")
                )
                if deleting and name not in self._seen:
                    self._seen.add(name)
                    self.events.put((now, name))

    def first_deletion(self, prefix: str, timeout: float) -> float:
        """The time of the first deletion of a pod named ``prefix…`` (others are skipped)."""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or self.error:
                raise RuntimeError(
                    f"no pod {prefix}* was deleted within {timeout}s {self.error}".strip()
                )
            try:
                when, name = self.events.get(timeout=min(left, 1.0))
            except queue.Empty:
                continue
            if name.startswith(prefix):
                return when

    def close(self) -> None:
        self._stop.set()
        self._thread.join(10)
        self._session.close()


def measure_push_latency(
    *,
    serve: Serve,
    watch: DeletionWatch,
    pusher: ImagePusher,
    targets: list[str],
    group: str,
    targeted: bool,
    say: Callable[[str], None],
) -> dict[str, Any]:
    """One push per target Deployment; seconds from tag moved to first pod deletion."""
    session = requests.Session()
    session.trust_env = False
    latencies, webhook_ms, push_s = [], [], []
    ticks = serve.ticks()
    for k, name in enumerate(targets):
        started = time.monotonic()
        repository = f"lat/{group}-{k:03d}"
        pusher.push_image(repository, "latest")
        moved = time.monotonic()  # the manifest PUT is acknowledged: the tag has moved
        body = package_body(repository, "latest") if targeted else FULL_PASS_BODY
        status = serve.webhook(session, body)
        answered = time.monotonic()
        if status != 202:
            raise RuntimeError(f"signed webhook answered {status}")
        deleted = watch.first_deletion(f"{name}-", timeout=120)
        latencies.append(deleted - moved)
        webhook_ms.append((answered - moved) * 1000)
        push_s.append(moved - started)
        ticks = serve.wait_ticks(ticks + 1, timeout=300)
    extra = serve.ticks() - ticks
    say(f"  {len(targets)} pushes done ({group}); passes beyond one per push: {extra}")
    return {
        "pushes": len(targets),
        "targeted": targeted,
        "latency_s": latencies,
        "webhook_ms": webhook_ms,
        "push_s": push_s,
        "tick_s": serve.tick_seconds(),
    }


# --------------------------------------------------------------------------------------------
# Measurement 3


def run_loadgen(serve: Serve, *, kind: str, count: int) -> dict[str, Any]:
    flags = [f"--url={serve.url}", f"--secret={serve.secret}", f"--count={count}", f"--kind={kind}"]
    return run_module("bench.loadgen", flags, timeout=600)


def measure_webhook_load(
    *, serve: Serve, requests_total: int, say: Callable[[str], None]
) -> dict[str, Any]:
    """An idle control, then half bad and half good, each half sent during a pass.

    Each half's pass is started by one signed webhook just before the load; the load's own
    passes are what the count shows beyond it.
    """
    session = requests.Session()
    session.trust_env = False
    phases = {}
    # Control: the same requests while no pass runs (bad signatures, so none starts one).
    before = serve.ticks()
    idle = run_loadgen(serve, kind="bad", count=requests_total // 4)
    time.sleep(1.0)
    idle["ticks_caused"] = serve.ticks() - before
    idle["tick_s"] = serve.tick_seconds()
    phases["idle"] = idle
    say(
        f"  {requests_total // 4} bad-signature webhooks, controller idle:"
        f" {idle['window_s']:.2f}s; passes caused: {idle['ticks_caused']}"
    )
    for kind in ("bad", "good"):
        before = serve.ticks()
        if serve.webhook(session, FULL_PASS_BODY) != 202:  # the full pass the load meets
            raise RuntimeError("the signed trigger webhook was refused")
        time.sleep(0.05)  # let the worker pick the nudge up and start listing
        result = run_loadgen(serve, kind=kind, count=requests_total // 2)
        # The trigger's pass, plus whatever the load caused; wait for all of it to end,
        # the per-tag debounce's trailing pass included (it comes one interval after the
        # load's first pass).
        time.sleep(max(1.0, 2 * serve.tick_seconds(), TAG_PASS_INTERVAL_SECONDS + 1.0))
        after = serve.wait_ticks(before + 1, timeout=300)
        while True:
            time.sleep(max(1.0, 1.5 * serve.tick_seconds()))
            settled = serve.ticks()
            if settled == after:
                break
            after = settled
        result["ticks_caused"] = after - before - 1  # minus the trigger's own pass
        result["tick_s"] = serve.tick_seconds()
        phases[kind] = result
        say(
            f"  {requests_total // 2} {kind}-signature webhooks in {result['window_s']:.2f}s;"
            f" passes caused: {result['ticks_caused']}"
        )
    return phases


def measure_watch_burst(
    *,
    serve: Serve,
    writer: ApiWriter,
    layout: Layout,
    deployments: int,
    requests_total: int,
    say: Callable[[str], None],
) -> dict[str, Any]:
    """Bad-signature webhooks (no pass) while enrolled pods are patched, so the controller's
    watches deliver a burst of events; patches go on until the load has been sent."""
    done = threading.Event()
    patched = [0]

    def patch(i: int, replica: int) -> Callable[[], None]:
        def task() -> None:
            if done.is_set():
                return
            name = f"{layout.deployment_name(i)}-{replica}"
            writer.send(
                "PATCH",
                f"/api/v1/namespaces/{layout.namespace(i)}/pods/{name}",
                {"metadata": {"annotations": {"bench.autoroll/burst": str(time.time())}}},
                content_type="application/merge-patch+json",
            )
            patched[0] += 1

        return task

    tasks = [patch(i, r) for i in range(deployments) for r in range(3)]
    patcher = threading.Thread(target=run_all, args=(tasks,), name="burst", daemon=True)
    before = serve.ticks()
    patcher.start()
    time.sleep(1.0)  # the burst is under way before the first request
    result = run_loadgen(serve, kind="bad", count=requests_total)
    done.set()
    patcher.join(600)
    result["patched"] = patched[0]
    result["ticks_caused"] = serve.ticks() - before
    say(
        f"  {requests_total} bad-signature webhooks during a watch burst of {patched[0]} pod"
        f" patches: passes caused {result['ticks_caused']}"
    )
    return result
