"""High availability on the real API: two ``autoroll serve`` processes elect a leader.

Both run as a ServiceAccount holding exactly the rules the chart renders with
``replicaCount: 2`` and ``emitEvents: true`` (its ClusterRole and its namespaced Lease Role),
so the RBAC verbs the election uses (leases create; get, patch, watch on one name) are
proven here, not assumed. Pods come from the real Deployment and ReplicaSet controllers and
run on the real node (kubelet + containerd, readiness probes); images from a real
docker-registry.

A ledger watches the Deployment's pods and checks, at every deletion, that the Deployment was
settled just before it (every live pod Ready, none terminating, at least ``replicas`` live):
that is "never two pods deleted within one settle window", whichever replica deleted.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import requests
from kubernetes import client, watch
from prometheus_client.parser import text_string_to_metric_families

from tests.conftest import require_tool
from tests.e2e.controller import Autoroll, running_autoroll
from tests.e2e.controlplane import ControlPlane
from tests.e2e.helpers import apps_api, core_api, deployment, is_ready
from tests.e2e.images import APP_PORT, push_app
from tests.e2e.node import Node
from tests.e2e.rbac import LEASE, delete_cluster_rules, service_account_kubeconfig
from tests.support.registry import ImagePusher, RegistryServer, running_registry
from tests.support.serve import scrape_metric
from tests.support.wait import eventually, wait_until

pytestmark = pytest.mark.e2e

REPLICAS = 4
READY_AFTER = 2.0  # a replacement pod needs this long to become Ready: the settle window
APP = "web"


# --------------------------------------------------------------------------------------------
# The ledger: every deletion, and whether the Deployment was settled just before it


@dataclass
class Ledger:
    """Pod states from a watch; a deletion while unsettled is a violation."""

    replicas: int
    pods: dict[str, tuple[bool, bool, str]] = field(default_factory=dict)  # ready, deleting, digest
    deletions: list[tuple[float, str]] = field(default_factory=list)
    violations: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def apply(self, kind: str, pod: Any) -> None:
        name = pod.metadata.name
        deleting = kind == "DELETED" or pod.metadata.deletion_timestamp is not None
        statuses = (pod.status.container_statuses or []) if pod.status else []
        digest = (statuses[0].image_id or "").rpartition("@")[2] if statuses else ""
        with self.lock:
            before = self.pods.get(name)
            if deleting and (before is None or not before[1]):
                self._check_settled(name)
                self.deletions.append((time.monotonic(), name))
            if kind == "DELETED":
                self.pods.pop(name, None)
            else:
                self.pods[name] = (is_ready(pod), deleting, digest)

    def _check_settled(self, name: str) -> None:
        live = {n: s for n, s in self.pods.items() if not s[1]}
        unready = sorted(n for n, s in live.items() if not s[0] and n != name)
        terminating = sorted(n for n, s in self.pods.items() if s[1])
        if unready or terminating or len(live) < self.replicas:
            self.violations.append(
                f"{name} deleted while unsettled: live={sorted(live)} unready={unready}"
                f" terminating={terminating}"
            )

    def rolled(self, digest: str) -> bool:
        with self.lock:
            live = [s for s in self.pods.values() if not s[1]]
            return len(live) == self.replicas and all(s[0] and s[2] == digest for s in live)


@contextlib.contextmanager
def watching(kube: Any, namespace: str, ledger: Ledger) -> Iterator[Ledger]:
    core = core_api(kube)
    stop = threading.Event()
    listed = core.list_namespaced_pod(namespace, label_selector=f"app={APP}")
    for item in listed.items:
        ledger.apply("ADDED", item)
    version = listed.metadata.resource_version

    def run() -> None:
        nonlocal version
        while not stop.is_set():
            w: Any = watch.Watch()  # type: ignore[no-untyped-call]
            for event in w.stream(
                core.list_namespaced_pod,
                namespace,
                label_selector=f"app={APP}",
                resource_version=version,
                timeout_seconds=2,
            ):
                ledger.apply(event["type"], event["object"])
                version = event["object"].metadata.resource_version
                if stop.is_set():
                    w.stop()

    thread = threading.Thread(target=run, name="ha-ledger", daemon=True)
    thread.start()
    try:
        yield ledger
    finally:
        stop.set()
        thread.join(10)


# --------------------------------------------------------------------------------------------
# Setup: the chart's RBAC for a ServiceAccount, the registry, the app


@dataclass
class Scene:
    plane: ControlPlane
    kube: Any
    namespace: str
    registry: RegistryServer
    image: str
    kubeconfig: Path
    selector: str
    secret: str = field(default_factory=lambda: secrets.token_hex(32))

    def push(self, version: int) -> str:
        repo = self.image.removeprefix(f"{self.registry.host}/").rpartition(":")[0]
        build = f"{self.namespace} v{version}"
        return push_app(ImagePusher(self.registry), repo, build=build).digest

    def holder(self) -> str:
        api = client.CoordinationV1Api(self.kube)
        try:
            lease = api.read_namespaced_lease(LEASE, self.namespace)
        except client.exceptions.ApiException as exc:
            if exc.status == 404:
                return ""
            raise
        spec: Any = lease.spec
        return str(spec.holder_identity or "") if spec is not None else ""

    @contextlib.contextmanager
    def controller(self, name: str, *, poll_seconds: int) -> Iterator[Autoroll]:
        env = {
            "KUBECONFIG": str(self.kubeconfig),
            "LABEL_SELECTOR": self.selector,
            "WEBHOOK_SECRET": self.secret,
            "EMIT_EVENTS": "true",
            "LEADER_ELECTION": "true",
            "LEADER_ELECTION_NAMESPACE": self.namespace,
            "LEADER_ELECTION_LEASE": LEASE,
            "POD_NAME": name,
        }
        with running_autoroll(
            plane=self.plane, registry=self.registry, poll_seconds=poll_seconds, extra_env=env
        ) as autoroll:
            autoroll.secret = self.secret
            yield autoroll


@pytest.fixture
def scene(
    control_plane: ControlPlane,
    kube: Any,
    namespace: str,
    node: Node,
    tmp_path: Path,
) -> Iterator[Scene]:
    binary = require_tool("docker-registry")
    require_tool("htpasswd")
    with running_registry(binary, tmp_path / "registry", user="ha") as registry:
        node.trust_registry(registry.host, registry.authorization)
        image = f"{registry.host}/{namespace}/{APP}:latest"
        kubeconfig = service_account_kubeconfig(
            control_plane, kube, namespace, tmp_path / "autoroll.kubeconfig"
        )
        scene = Scene(
            plane=control_plane,
            kube=kube,
            namespace=namespace,
            registry=registry,
            image=image,
            kubeconfig=kubeconfig,
            selector=f"aethnet.se/autoroll=true,ha-test={namespace}",
        )
        first = scene.push(1)
        manifest = deployment(
            APP,
            image,
            replicas=REPLICAS,
            labels={"aethnet.se/autoroll": "true", "ha-test": namespace},
            http_port=APP_PORT,
            ready_after=READY_AFTER,
        )
        apps_api(kube).create_namespaced_deployment(namespace, manifest)
        ledger = Ledger(REPLICAS)
        with watching(kube, namespace, ledger):
            eventually(
                lambda: _assert(ledger.rolled(first), f"pods: {ledger.pods}"),
                timeout=120,
                what=f"{REPLICAS} Ready pods on the first image",
            )
        yield scene
        with contextlib.suppress(Exception):
            delete_cluster_rules(kube, namespace)


def _assert(condition: bool, message: str) -> None:
    assert condition, message


def ticks(autoroll: Autoroll) -> float:
    return scrape_metric(autoroll.url, "autoroll_ticks_total", outcome="ok")


def pass_done_at(autoroll: Autoroll, since: int) -> datetime:
    """When the first pass to end after output line ``since`` ended, by the controller's own
    log stamp. Not when a /metrics scrape first shows it: on a loaded CI machine the scrape
    alone has taken over 2 s, which is no part of the hand-off being measured."""
    done = r" INFO .*pass done: ok "
    wait_until(lambda: autoroll.lines(done, since=since), timeout=10, what="the leader's pass")
    stamp = autoroll.lines(done, since=since)[0].split(" ", 1)[0]
    return datetime.fromisoformat(stamp)


def leader_gauge(autoroll: Autoroll) -> float:
    # Prometheus' default scrape timeout: /metrics asks the reconcile process, which can be
    # slow to answer on a loaded CI machine (over 2 s was seen with two e2e workers beside
    # the other suites); what is asserted is the gauge, not the latency.
    text = requests.get(f"{autoroll.url}/metrics", timeout=10).text
    [family] = [f for f in text_string_to_metric_families(text) if f.name == "autoroll_leader"]
    return float(family.samples[0].value)


def kill_hard(autoroll: Autoroll) -> None:
    """SIGKILL the whole process group (gunicorn master and its worker): a crashed pod."""
    assert autoroll.process is not None  # the HA tests run local processes
    os.killpg(autoroll.process.pid, signal.SIGKILL)
    autoroll.process.wait(10)


# --------------------------------------------------------------------------------------------
# The tests


def test_killing_the_leader_mid_rollout_moves_leadership_and_the_roll_completes(
    scene: Scene, record_property: Any
) -> None:
    with scene.controller("ctl-a", poll_seconds=5) as a:
        wait_until(lambda: scene.holder() == "ctl-a", timeout=20, what="ctl-a leads")
        with scene.controller("ctl-b", poll_seconds=5) as b:
            assert leader_gauge(a) == 1 and leader_gauge(b) == 0
            ledger = Ledger(REPLICAS)
            with watching(scene.kube, scene.namespace, ledger):
                target = scene.push(2)
                sent = time.monotonic()
                assert b.webhook() == 202  # at the follower: handed to the leader
                wait_until(lambda: len(ledger.deletions) >= 1, timeout=10, what="first deletion")
                first_deletion = ledger.deletions[0][0] - sent
                # The watch can see the deletion before the leader's log line is read.
                a.wait_for_line(r"deleted stale pod", timeout=5)  # the leader made it

                kill_hard(a)
                killed = time.monotonic()
                failover = wait_until(
                    lambda: scene.holder() == "ctl-b", timeout=30, interval=0.1, what="ctl-b leads"
                )
                b.wait_for_line(r"became leader", timeout=5)
                assert leader_gauge(b) == 1

                eventually(
                    lambda: _assert(ledger.rolled(target), f"pods: {ledger.pods}"),
                    timeout=120,
                    what="every pod Ready on the new image",
                )
                roll_seconds = time.monotonic() - killed

            assert ledger.violations == []
            assert len(ledger.deletions) == REPLICAS, ledger.deletions
            b.wait_for_line(r"deleted stale pod")  # the new leader finished the roll

            # One Event per roll, never one per deletion: the start by the leader that
            # deleted first (the Event follows its deletion, so a leader killed in between
            # may not have recorded it), the completion by the survivor.
            def completed() -> list[Any]:
                events = (
                    core_api(scene.kube)
                    .list_namespaced_event(
                        scene.namespace, field_selector=f"involvedObject.name={APP}"
                    )
                    .items
                )
                done = [e for e in events if e.reason == "RollCompleted"]
                assert done, [e.reason for e in events]
                return list(events)

            events = eventually(completed, timeout=60, what="the roll's completion Event")
            started = [e for e in events if e.reason == "RollStarted"]
            done = [e for e in events if e.reason == "RollCompleted"]
            assert len(started) <= 1 and len(done) == 1, [(e.reason, e.message) for e in events]
            assert done[0].reporting_instance == "ctl-b"
            repository = scene.image.removeprefix(f"{scene.registry.host}/")
            assert target[:19] in done[0].message and repository in done[0].message
            assert all(e.reason != "StalePodDeleted" for e in events)

    record_property("handoff_to_first_deletion_seconds", round(first_deletion, 2))
    record_property("failover_seconds", round(failover, 2))
    record_property("roll_after_kill_seconds", round(roll_seconds, 2))
    print(
        f"\nHA: webhook at follower → first deletion {first_deletion:.2f}s; leader killed →"
        f" new leader {failover:.2f}s; roll completed {roll_seconds:.1f}s after the kill"
    )
    assert failover < 20, "leadership must move within about the 15 s lease duration"


def test_a_webhook_at_the_follower_makes_the_leader_tick_within_two_seconds(
    scene: Scene, record_property: Any
) -> None:
    # A poll interval of an hour: every pass below comes from a webhook or an election.
    with scene.controller("ctl-a", poll_seconds=3600) as a:
        wait_until(lambda: scene.holder() == "ctl-a", timeout=20, what="ctl-a leads")
        wait_until(lambda: ticks(a) >= 1, timeout=10, what="the leader's first pass")
        with scene.controller("ctl-b", poll_seconds=3600) as b:
            latencies, trail = [], []  # trail: what each side logged, for a failure
            for _ in range(3):
                since, sent = len(a.output), datetime.now(UTC)
                assert b.webhook() == 202
                latencies.append((pass_done_at(a, since) - sent).total_seconds())
                assert a.lines("webhook handed over by another replica", since=since)
                trail += [f"webhook sent {sent.isoformat()}", *b.lines("handed to the leader")[-1:]]
                trail += a.lines("", since=since)
                time.sleep(0.6)  # past the follower's hand-off rate limit
            assert ticks(b) == 0  # the follower never reconciled

            before = ticks(a)
            for i in range(20):
                assert b.webhook(f"forged {i}".encode(), sign=False) == 403
                response = requests.post(
                    f"{b.url}/webhook",
                    data=b"{}",
                    headers={"X-Forgejo-Signature": "0" * 64},
                    timeout=5,
                )
                assert response.status_code == 403
            time.sleep(2.0)
            assert ticks(a) == before  # bad signatures never reach the leader

            # A clean shutdown releases the lease: the follower leads well before 15 s.
            stopped = time.monotonic()
            a.terminate(20)
            assert a.process is not None
            assert a.process.returncode == 0
            wait_until(lambda: scene.holder() == "ctl-b", timeout=10, interval=0.05, what="ctl-b")
            handover = time.monotonic() - stopped  # includes a's graceful shutdown
            assert a.lines(r"released the lease")
            wait_until(lambda: ticks(b) >= 1, timeout=5, what="the new leader's first pass")

    worst = max(latencies)
    record_property("handoff_latency_max_seconds", round(worst, 3))
    print(
        f"\nHA: follower webhook → leader pass {', '.join(f'{x:.3f}' for x in latencies)}s;"
        f" SIGTERM → new leader {handover:.2f}s"
    )
    assert worst < 2.0, "\n".join(trail)
