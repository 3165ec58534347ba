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

Platform awareness (a push that changes only the arm64 image) is in
``test_platform_awareness.py``; the helpers both use are in ``guardrail_deployments.py``.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from tests.e2e.controller import run_plan
from tests.e2e.controlplane import ControlPlane
from tests.e2e.guardrail_deployments import all_on, at_least, enrolled, live, watched_autoroll
from tests.e2e.helpers import apps_api
from tests.e2e.kubelet import SimulatedKubelet
from tests.e2e.kubelet_images import RegistryResolver
from tests.e2e.scenario import deletions, label_selector, metric, nudging
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


def densest(times: Sequence[float], span: float) -> int:
    """The most events in any window of ``span`` seconds."""
    ordered = sorted(times)
    best, start = 0, 0
    for end, at in enumerate(ordered):
        while at - ordered[start] >= span:
            start += 1
        best = max(best, end - start + 1)
    return best


@dataclass(frozen=True)
class Built:
    """The test's repository on docker-registry with its first build pushed, the simulated
    kubelet resolving its tag there."""

    pusher: ImagePusher
    repository: str
    image: str
    first: str

    def push(self, content: bytes) -> str:
        """Push a new build as ``latest``; return its digest."""
        return self.pusher.push_image(self.repository, "latest", content=content).digest


@pytest.fixture
def built(docker_registry: RegistryServer, kubelet: SimulatedKubelet, namespace: str) -> Built:
    kubelet.use_resolver(RegistryResolver(auth=docker_registry.auth))
    pusher = ImagePusher(docker_registry)
    repository = f"e2e/{namespace}"
    first = pusher.push_image(repository, "latest", content=b"build 1").digest
    return Built(pusher, repository, f"{docker_registry.host}/{repository}:latest", first)


# --- the budget ------------------------------------------------------------------------------


# 200 pods to start and 20 periods of rolling, on a shared machine
@pytest.mark.timeout(max(900, 200 // 10 * PERIOD * 3))
def test_a_budget_of_ten_per_period_rolls_200_deployments_ten_at_a_time_on_the_simulated_kubelet(
    control_plane: ControlPlane,
    kube: Any,
    namespace: str,
    docker_registry: RegistryServer,
    built: Built,
) -> None:
    image, first = built.image, built.first
    apps = apps_api(kube)
    count = 200
    for i in range(count):
        apps.create_namespaced_deployment(
            namespace, enrolled(f"d{i:03d}", image, namespace, replicas=1)
        )
    eventually(lambda: all_on(kube, namespace, first, count), timeout=360, what="200 pods Ready")
    with watched_autoroll(
        control_plane,
        kube,
        namespace,
        docker_registry,
        tail=40,
        ROLL_BUDGET_DELETIONS=str(BUDGET),
        ROLL_BUDGET_PERIOD_SECONDS=str(PERIOD),
        ROLL_BUDGET_IN_FLIGHT="0",
    ) as (recorder, autoroll):
        autoroll.wait_for_line(rf"{namespace}/deployment/d199 app: current", timeout=60)
        second = built.push(b"build 2")
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
    built: Built,
) -> None:
    image, first = built.image, built.first
    window, opening = closed_window(datetime.now(UTC))
    apps = apps_api(kube)
    apps.create_namespaced_deployment(
        namespace, enrolled("web", image, namespace, replicas=2, annotations={WINDOW: window})
    )
    eventually(lambda: all_on(kube, namespace, first, 2), timeout=60, what="2 pods Ready")
    before = {p.uid for p in live(kube, namespace)}
    watched = watched_autoroll(control_plane, kube, namespace, docker_registry, tail=30)
    with watched as (recorder, autoroll):
        autoroll.wait_for_line(rf"{namespace}/deployment/web app: current", timeout=30)
        second = built.push(b"build 2")
        assert autoroll.webhook() == 202
        hold = (
            rf"{namespace}/deployment/web: not deleting stale pod \S+ yet:"
            r" held \(outside-window\)"
        )
        eventually(
            lambda: at_least(autoroll.lines(hold), 3),
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
        eventually(lambda: all_on(kube, namespace, second, 2), timeout=60, what="rolled once open")
        after = [rs.metadata.name for rs in apps.list_namespaced_replica_set(namespace).items]
        assert after == replica_sets and len(after) == 1
    assert len(deletions(recorder.pods())) == 2
