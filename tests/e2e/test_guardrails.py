"""Issue 18's guardrails on the real control plane and registry: the real ``autoroll serve``
(and ``autoroll plan``), a real kube-apiserver, kube-controller-manager and docker-registry.

- 200 enrolled Deployments on one moved tag with a budget of 10 deletions per period roll at
  most 10 pods per period, and all finish. The period is ``ROLL_BUDGET_PERIOD_SECONDS``,
  set to 3 s here instead of a minute: the controller is a real process on real clocks (the
  API server stamps the pods, the kubelet makes them Ready), so its time cannot be faked
  from outside; the budget's arithmetic is the same for any period, and 200 pods at 10 a
  minute would take 20 minutes (``AUTOROLL_E2E_BUDGET_PERIOD=60`` runs that, outside CI).
  Signed webhooks nudge a pass every second, so the budget, not the poll interval, is what
  paces the roll. On the simulated kubelet: one real node
  takes at most 110 pods (the kubelet's default maxPods) and this machine has 2 cores.
- A Deployment whose window is closed rolls nothing, says so every pass, and ``autoroll
  plan`` shows when the window next opens; annotating it ``always`` (on the object: no new
  ReplicaSet) lets it roll. On the simulated kubelet (nothing about a window depends on
  what runs the pods).
- With platform awareness (and the chart's own ClusterRole for it), a push of a multi-arch
  index that changes only the arm64 image restarts every arm64 pod and no amd64 pod: once
  with the amd64 pods on the real node (kubelet + containerd) and the arm64 ones on a
  simulated arm64 node, and once with both on simulated kubelets.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from tests.e2e.controller import run_plan, running_autoroll
from tests.e2e.controlplane import ControlPlane
from tests.e2e.helpers import apps_api, core_api, deployment, rbac_api
from tests.e2e.images import APP_PORT, push_index
from tests.e2e.kubelet import RegistryResolver, SimulatedKubelet
from tests.e2e.node import Node
from tests.e2e.rbac import service_account_kubeconfig
from tests.e2e.scenario import (
    ENROLL_LABEL,
    TEST_LABEL,
    PodSeen,
    Recorder,
    deletions,
    label_selector,
    metric,
    nudging,
)
from tests.support.registry import ImagePusher, RegistryServer
from tests.support.wait import eventually

pytestmark = pytest.mark.e2e

WINDOW = "autoroll.aethnet.se/window"
# ROLL_BUDGET_PERIOD_SECONDS: "a minute" of the budget, shortened (module docstring).
# AUTOROLL_E2E_BUDGET_PERIOD=60 runs the real minute (about 20 minutes; not in CI).
PERIOD = int(os.environ.get("AUTOROLL_E2E_BUDGET_PERIOD", "3"))
BUDGET = 10  # ROLL_BUDGET_DELETIONS
#: How much earlier than the controller's deletion the watch may deliver one deletion and
#: how much later another: both are the watch's arrival times on a busy 2-core machine.
WATCH_JITTER = 0.5


def enrolled(name: str, image: str, test: str, *, replicas: int, **extra: Any) -> dict[str, Any]:
    manifest = deployment(
        name,
        image,
        replicas=replicas,
        labels={ENROLL_LABEL: "true", TEST_LABEL: test},
        http_port=extra.get("http_port"),
    )
    annotations = extra.get("annotations")
    if annotations:
        manifest["metadata"]["annotations"] = dict(annotations)
    selector = extra.get("node_selector")
    if selector:
        manifest["spec"]["template"]["spec"]["nodeSelector"] = dict(selector)
    return manifest


def live(kube: Any, namespace: str, selector: str = "") -> list[PodSeen]:
    response = core_api(kube).list_namespaced_pod(
        namespace, label_selector=selector, _preload_content=False
    )
    now = time.monotonic()
    return [PodSeen.from_raw(now, "LIST", p) for p in json.loads(response.data)["items"]]


def all_on(kube: Any, namespace: str, digest: str, count: int, selector: str = "") -> None:
    pods = live(kube, namespace, selector)
    done = [p for p in pods if p.ready and p.digest == digest and not p.terminating]
    assert len(done) == count and len(pods) == count, (
        f"{len(done)} of {count} Ready on {digest[:19]}; {len(pods)} pods"
    )


def densest(times: Sequence[float], span: float) -> int:
    """The most events in any window of ``span`` seconds."""
    ordered = sorted(times)
    best, start = 0, 0
    for end, at in enumerate(ordered):
        while at - ordered[start] >= span:
            start += 1
        best = max(best, end - start + 1)
    return best


# --- the budget ------------------------------------------------------------------------------


# 200 pods to start and 20 periods of rolling, on a shared machine
@pytest.mark.timeout(max(900, 200 // 10 * PERIOD * 3))
def test_a_budget_of_ten_per_period_rolls_200_deployments_ten_at_a_time_on_the_simulated_kubelet(
    control_plane: ControlPlane,
    kube: Any,
    namespace: str,
    docker_registry: RegistryServer,
    kubelet: SimulatedKubelet,
) -> None:
    resolver = RegistryResolver(auth=docker_registry.auth)
    kubelet.use_resolver(resolver)
    pusher = ImagePusher(docker_registry)
    repository = f"e2e/{namespace}"
    image = f"{docker_registry.host}/{repository}:latest"
    first = pusher.push_image(repository, "latest", content=b"build 1").digest
    apps = apps_api(kube)
    count = 200
    for i in range(count):
        apps.create_namespaced_deployment(
            namespace, enrolled(f"d{i:03d}", image, namespace, replicas=1)
        )
    eventually(lambda: all_on(kube, namespace, first, count), timeout=360, what="200 pods Ready")
    with (
        Recorder(core_api(kube).list_namespaced_pod, namespace) as recorder,
        running_autoroll(
            plane=control_plane,
            registry=docker_registry,
            poll_seconds=5,
            extra_env={
                "LABEL_SELECTOR": label_selector(namespace),
                "ROLL_BUDGET_DELETIONS": str(BUDGET),
                "ROLL_BUDGET_PERIOD_SECONDS": str(PERIOD),
                "ROLL_BUDGET_IN_FLIGHT": "0",
            },
        ) as autoroll,
    ):
        try:
            autoroll.wait_for_line(rf"{namespace}/deployment/d199 app: current", timeout=60)
            second = pusher.push_image(repository, "latest", content=b"build 2").digest
            pushed = time.monotonic()
            with nudging(autoroll):
                eventually(
                    lambda: all_on(kube, namespace, second, count),
                    timeout=count / BUDGET * PERIOD * 3,
                    interval=1.0,
                    what="every Deployment rolled",
                )
            finished = time.monotonic()
            held = metric(
                autoroll,
                "autoroll_deletions_held_total",
                {"reason": "budget", "kind": "deployment"},
            )
        finally:
            print("--- autoroll output (tail) ---", *autoroll.output[-40:], sep="\n")
    gone = [d for d in deletions(recorder.pods()) if d.at >= pushed]
    assert len(gone) == count  # one per Deployment: no pod deleted twice, none missed
    # When the API server took each delete, by its own clock (whole seconds), not when the
    # watch delivered it (a loaded machine delays a batch by seconds). The controller counts
    # a deletion from after its call returns and sends the next only a period later, so any
    # BUDGET + 1 consecutive requests span at least a period: PERIOD - 1 in whole seconds.
    requested = sorted(d.delete_requested for d in gone if d.delete_requested is not None)
    assert len(requested) == count
    spans = [
        (requested[i + BUDGET] - requested[i]).total_seconds()
        for i in range(len(requested) - BUDGET)
    ]
    assert min(spans) >= PERIOD - 1, f"{BUDGET + 1} deletions within {min(spans)}s"
    # The budget paced it: held deletions, and no faster than 10 per period allows.
    assert held > 0
    assert finished - pushed >= (count / BUDGET - 1) * PERIOD - WATCH_JITTER
    by_second: dict[datetime, int] = {}
    for at in requested:
        by_second[at] = by_second.get(at, 0) + 1
    densest_server = max(
        sum(n for at, n in by_second.items() if start <= at < start + timedelta(seconds=PERIOD))
        for start in by_second
    )
    print(
        f"200 rolled in {finished - pushed:.1f}s; {BUDGET + 1} consecutive deletions span"
        f" at least {min(spans):.0f}s (API server stamps); densest {PERIOD}s of whole-second"
        f" stamps: {densest_server}; densest {PERIOD}s by watch arrival:"
        f" {densest([d.at for d in gone], PERIOD)}; held (budget): {held:.0f}"
    )


# --- a maintenance window ---------------------------------------------------------------------


def closed_window(now: datetime, zone: str = "Asia/Tokyo") -> tuple[str, str]:
    """A 30-minute window opening six hours from ``now``, and how ``plan`` names its opening."""
    opens = (now + timedelta(hours=6)).astimezone(ZoneInfo(zone)).replace(second=0, microsecond=0)
    closes = opens + timedelta(minutes=30)
    text = f"{opens:%a} {opens:%H:%M}-{closes:%H:%M} {zone}"
    return text, f"{opens:%a %Y-%m-%d %H:%M} {zone}"


def test_a_closed_window_rolls_nothing_and_plan_shows_when_it_opens_on_the_simulated_kubelet(
    control_plane: ControlPlane,
    kube: Any,
    namespace: str,
    docker_registry: RegistryServer,
    kubelet: SimulatedKubelet,
) -> None:
    resolver = RegistryResolver(auth=docker_registry.auth)
    kubelet.use_resolver(resolver)
    pusher = ImagePusher(docker_registry)
    repository = f"e2e/{namespace}"
    image = f"{docker_registry.host}/{repository}:latest"
    first = pusher.push_image(repository, "latest", content=b"build 1").digest
    window, opening = closed_window(datetime.now(UTC))
    apps = apps_api(kube)
    apps.create_namespaced_deployment(
        namespace, enrolled("web", image, namespace, replicas=2, annotations={WINDOW: window})
    )
    eventually(lambda: all_on(kube, namespace, first, 2), timeout=60, what="2 pods Ready")
    before = {p.uid for p in live(kube, namespace)}
    with (
        Recorder(core_api(kube).list_namespaced_pod, namespace) as recorder,
        running_autoroll(
            plane=control_plane,
            registry=docker_registry,
            poll_seconds=5,
            extra_env={"LABEL_SELECTOR": label_selector(namespace)},
        ) as autoroll,
    ):
        try:
            autoroll.wait_for_line(rf"{namespace}/deployment/web app: current", timeout=30)
            second = pusher.push_image(repository, "latest", content=b"build 2").digest
            assert autoroll.webhook() == 202
            hold = (
                rf"{namespace}/deployment/web: not deleting stale pod \S+ yet:"
                r" held \(outside-window\)"
            )
            eventually(
                lambda: _at_least(autoroll.lines(hold), 3),
                timeout=40,
                what="three passes holding the deletion",
            )
            assert deletions(recorder.pods()) == []
            assert {p.uid for p in live(kube, namespace)} == before
            line = autoroll.lines(hold)[0]
            assert f"next opens {opening}" in line
            assert (
                metric(
                    autoroll,
                    "autoroll_deletions_held_total",
                    {"reason": "outside-window", "kind": "deployment"},
                )
                >= 3
            )

            text = run_plan(control_plane, docker_registry, label_selector(namespace))
            assert "held (outside-window)" in text and f"next opens {opening}" in text
            assert "0 pod(s) would be deleted now; 1 held by the guardrails." in text

            # Lift the window on the object: the pod template is untouched (the same one
            # ReplicaSet; the Deployment's generation counts annotation changes, so it is no
            # witness), and now autoroll rolls it.
            replica_sets = [
                rs.metadata.name for rs in apps.list_namespaced_replica_set(namespace).items
            ]
            apps.patch_namespaced_deployment(
                "web", namespace, {"metadata": {"annotations": {WINDOW: "always"}}}
            )
            assert autoroll.webhook() == 202
            eventually(
                lambda: all_on(kube, namespace, second, 2), timeout=60, what="rolled once open"
            )
            after = [rs.metadata.name for rs in apps.list_namespaced_replica_set(namespace).items]
            assert after == replica_sets and len(after) == 1
        finally:
            print("--- autoroll output (tail) ---", *autoroll.output[-30:], sep="\n")
    assert len(deletions(recorder.pods())) == 2


def _at_least(lines: list[str], n: int) -> None:
    assert len(lines) >= n, lines


# --- platform awareness -------------------------------------------------------------------------


@dataclass(frozen=True)
class Arm64Node:
    """A simulated arm64 node that binds only the pods sent to it (``nodeSelector``), and a
    kubeconfig for a ServiceAccount bound to the chart's ClusterRole rendered with
    ``platformAware: true``."""

    kubelet: SimulatedKubelet
    kubeconfig: Path
    resolver: RegistryResolver


@pytest.fixture
def arm64_node(
    control_plane: ControlPlane,
    namespace: str,
    docker_registry: RegistryServer,
    tmp_path: Path,
) -> Iterator[Arm64Node]:
    kube = control_plane.api_client()  # as admin, like the session's ``kube``
    resolver = RegistryResolver(auth=docker_registry.auth)
    arm = SimulatedKubelet(
        control_plane.api_client(),
        resolver,
        resolve_child=resolver.child,
        node_name=f"sim-arm64-{namespace[-5:]}",
        arch="arm64",
        bind_unselected=False,
    )
    # The controller as the chart deploys it: the rendered ClusterRole for platform
    # awareness (nodes: list), nothing more.
    kubeconfig = service_account_kubeconfig(
        control_plane,
        kube,
        namespace,
        tmp_path / "kubeconfig",
        values=("guardrails.platformAware=true",),
        lease_role=False,
    )
    arm.start()
    try:
        yield Arm64Node(arm, kubeconfig, resolver)
    finally:
        arm.stop()
        with contextlib.suppress(Exception):
            core_api(kube).delete_node(arm.node_name, grace_period_seconds=0)
        with contextlib.suppress(Exception):
            rbac_api(kube).delete_cluster_role_binding(f"autoroll-{namespace}")
            rbac_api(kube).delete_cluster_role(f"autoroll-{namespace}")
        assert not arm.errors, f"the simulated arm64 kubelet failed: {arm.errors}"


@dataclass(frozen=True)
class Pushed:
    digest: str
    children: tuple[str, ...]  # amd64, arm64


def only_arm64_changes(
    *,
    control_plane: ControlPlane,
    kube: Any,
    namespace: str,
    registry: RegistryServer,
    kubeconfig: Path,
    push: Callable[[str, str], Pushed],
    http_port: int | None = None,
    amd64_node: str | None = None,
) -> None:
    """Two Deployments on one multi-arch tag, one per arch; a push changes only the arm64
    child; with platform awareness every arm64 pod rolls, once, and no amd64 pod does."""
    old = push("1", "1")
    image = f"{registry.host}/e2e/{namespace}:latest"
    apps = apps_api(kube)
    for arch in ("amd64", "arm64"):
        manifest = enrolled(
            arch,
            image,
            namespace,
            replicas=2,
            node_selector={"kubernetes.io/arch": arch},
            http_port=http_port,
        )
        apps.create_namespaced_deployment(namespace, manifest)
    for arch in ("amd64", "arm64"):
        eventually(
            partial(all_on, kube, namespace, old.digest, 2, f"app={arch}"),
            timeout=120,
            what=f"{arch} pods Ready",
        )
    amd_before = {p.uid for p in live(kube, namespace, "app=amd64")}
    if amd64_node is not None:
        placed = core_api(kube).list_namespaced_pod(namespace, label_selector="app=amd64").items
        assert {p.spec.node_name for p in placed} == {amd64_node}
    with (
        Recorder(core_api(kube).list_namespaced_pod, namespace) as recorder,
        running_autoroll(
            plane=control_plane,
            registry=registry,
            poll_seconds=5,
            extra_env={
                "KUBECONFIG": str(kubeconfig),
                "LABEL_SELECTOR": label_selector(namespace),
                "PLATFORM_AWARE": "true",
            },
        ) as autoroll,
    ):
        try:
            autoroll.wait_for_line(rf"{namespace}/deployment/arm64 app: current", timeout=60)
            new = push("1", "2")
            assert new.children[0] == old.children[0]  # the amd64 image is the same
            assert new.children[1] != old.children[1]
            assert autoroll.webhook() == 202
            eventually(
                partial(all_on, kube, namespace, new.digest, 2, "app=arm64"),
                timeout=120,
                what="arm64 pods rolled",
            )
            # Two more passes after the arm64 roll: still nothing for amd64.
            current = (
                rf"{namespace}/deployment/amd64 app: current \(up-to-date\)"
                r".*only other platforms"
            )
            seen = len(autoroll.lines(current))
            eventually(
                lambda: _at_least(autoroll.lines(current), seen + 2),
                timeout=60,
                what="two more passes calling amd64 current",
            )
        finally:
            print("--- autoroll output (tail) ---", *autoroll.output[-30:], sep="\n")
    gone = {d.uid for d in deletions(recorder.pods())}
    assert not gone & amd_before  # no amd64 pod restarted
    assert {p.uid for p in live(kube, namespace, "app=amd64")} == amd_before
    assert len(gone) == 2  # both arm64 pods, once each


def test_a_push_changing_only_arm64_restarts_no_amd64_pod_on_simulated_kubelets(
    *,
    control_plane: ControlPlane,
    kube: Any,
    namespace: str,
    docker_registry: RegistryServer,
    kubelet: SimulatedKubelet,
    arm64_node: Arm64Node,
) -> None:
    """Both arches on simulated kubelets (the session's amd64 one and ``arm64_node``)."""
    kubelet.use_resolver(arm64_node.resolver, arm64_node.resolver.child)
    pusher = ImagePusher(docker_registry)

    def push(amd64: str, arm64: str) -> Pushed:
        index = pusher.push_index(
            f"e2e/{namespace}",
            "latest",
            contents={"amd64": f"amd64 build {amd64}".encode(), "arm64": f"arm64 {arm64}".encode()},
        )
        return Pushed(index.digest, tuple(index.children))

    only_arm64_changes(
        control_plane=control_plane,
        kube=kube,
        namespace=namespace,
        registry=docker_registry,
        kubeconfig=arm64_node.kubeconfig,
        push=push,
    )


def test_a_push_changing_only_arm64_restarts_no_amd64_pod_on_the_real_node(
    *,
    control_plane: ControlPlane,
    kube: Any,
    namespace: str,
    docker_registry: RegistryServer,
    node: Node,
    arm64_node: Arm64Node,
) -> None:
    """The amd64 pods run on the real node (kubelet + containerd pull the index and run its
    amd64 child); the arm64 pods on the simulated arm64 node, since this amd64 machine
    cannot run arm64 containers. The controller runs as a local process with the chart's
    ClusterRole (a ServiceAccount token), not as the chart's pod."""
    pusher = ImagePusher(docker_registry)

    def push(amd64: str, arm64: str) -> Pushed:
        index = push_index(
            pusher, f"e2e/{namespace}", build=amd64, builds={"amd64": amd64, "arm64": arm64}
        )
        return Pushed(index.digest, tuple(index.children))

    only_arm64_changes(
        control_plane=control_plane,
        kube=kube,
        namespace=namespace,
        registry=docker_registry,
        kubeconfig=arm64_node.kubeconfig,
        push=push,
        http_port=APP_PORT,
        amd64_node=node.name,
    )
