"""A bad build stopped everywhere, on the real node (issue 26): three enrolled Deployments on
one tag, the controller as the chart installs it (its pod, its RBAC, its ConfigMap), a
health window, notifications to a local JSON receiver (the stand-in for a chat service).

1. A push of an image that serves (Ready) and exits a few seconds later: the digest goes to
   one workload first; its replacement crashes inside the window; the roll halts and the
   digest is quarantined. Exactly one pod is replaced in all, one Warning Event is recorded,
   one ``quarantined`` notification arrives, and ``autoroll plan`` in the pod names the
   quarantine and how to clear it.
2. A good push (the tag moves: the quarantine ends) rolls all three in wave order (each
   workload's ``autoroll.aethnet.se/wave``): no pod of a later wave goes before every pod of
   the earlier waves is Ready on the new digest and past its window. The one broken pod is
   deleted by hand first, as a person does after pushing a fix: autoroll never deletes from
   a workload that is not settled (ADR 001), and a pod that crash-loops keeps it unsettled.

Kubelet, containerd and runc are real: "Ready" is the kubelet's verdict on a readiness
probe, the crash is the container's own exit, the restart is the kubelet's.
"""

from __future__ import annotations

import json
import re
import time
from typing import Any

import pytest

from tests.e2e.controller import Autoroll, StartAutoroll
from tests.e2e.controlplane import ControlPlane
from tests.e2e.helpers import core_api
from tests.e2e.node import Node
from tests.e2e.scenario import App, PodSeen, Recorder, became_ready, deletions, metric
from tests.e2e.test_plan_in_pod import exec_in_controller
from tests.support.autoroll_cli import run_autoroll
from tests.support.notify_receivers import JsonReceiver
from tests.support.registry import ImagePusher, RegistryServer
from tests.support.wait import eventually

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(1200)]

#: The health window the controller is installed with, and how long the bad build serves
#: before it exits (inside the window, after Ready: Ready comes about a second after the
#: start, so the restart shows about 8 s before the window ends). Six pods roll one window
#: after another, so the window is most of this test's time.
WINDOW = 14
CRASH_AFTER = 6
NAMES = ("wave-a", "wave-b", "wave-c")
WAVE = "autoroll.aethnet.se/wave"
QUARANTINE_CONFIGMAP = "autoroll-quarantine"  # <fullname>-quarantine of release "autoroll"


def package_event(repository: str, tag: str = "latest") -> bytes:
    owner, _, name = repository.partition("/")
    package = {"type": "container", "name": name, "version": tag, "owner": {"login": owner}}
    return json.dumps({"action": "created", "package": package}).encode()


@pytest.fixture
def chat(node: Node) -> Any:
    """The JSON receiver on the host's 127.0.0.1, reachable from the controller's pod."""
    with JsonReceiver() as receiver:
        node.bridge.import_port(receiver.port)
        yield receiver


def apps(kube: Any, namespace: str, registry: RegistryServer) -> list[App]:
    """Three Deployments of one image (one repository, one tag), pushed through the first."""
    pusher = ImagePusher(registry)
    repository = f"e2e/{namespace}"
    return [
        App(
            kube=kube,
            namespace=namespace,
            name=name,
            repository=repository,
            pusher=pusher,
            test=namespace,
            ready_after=1.0,
        )
        for name in NAMES
    ]


def annotate_waves(kube: Any, namespace: str) -> None:
    """Wave 0, 1, 2 on the workload objects (never the pod template: nothing rolls)."""
    from kubernetes import client

    apps_api = client.AppsV1Api(kube)
    for wave, name in enumerate(NAMES):
        body = {"metadata": {"annotations": {WAVE: str(wave)}}}
        apps_api.patch_namespaced_deployment(name, namespace, body)


def quarantine_entries(kube: Any, namespace: str) -> list[dict[str, Any]]:
    from kubernetes.client.exceptions import ApiException

    try:
        found = core_api(kube).read_namespaced_config_map(QUARANTINE_CONFIGMAP, namespace)
    except ApiException as exc:
        if exc.status == 404:
            return []
        raise
    return [json.loads(text) for text in (found.data or {}).values()]


def warnings(kube: Any, namespace: str) -> list[Any]:
    events = core_api(kube).list_namespaced_event(namespace).items
    return [
        e for e in events if e.type == "Warning" and e.reporting_component == "aethnet.se/autoroll"
    ]


def titles(chat: JsonReceiver, word: str) -> list[str]:
    return [p["title"] for p in chat.received() if word in p["title"]]


def test_a_build_that_crashes_after_ready_replaces_one_pod_in_all_then_a_good_one_rolls_in_waves(
    *,
    start_autoroll: StartAutoroll,
    kube: Any,
    namespace: str,
    docker_registry: RegistryServer,
    chat: JsonReceiver,
    node: Node,
    control_plane: ControlPlane,
    record_property: Any,
) -> None:
    autoroll: Autoroll = start_autoroll(
        poll=10,
        ROLL_HEALTHY_SECONDS=str(WINDOW),
        NOTIFY_URLS=chat.apprise_url(),
        NOTIFY_THROTTLE_SECONDS="0",
    )
    three = apps(kube, namespace, docker_registry)
    first = three[0]
    with Recorder(core_api(kube).list_namespaced_pod, namespace) as pods:
        old = first.push()
        for app in three:
            app.deploy(replicas=2)
        for app in three:
            app.wait_rolled(old, replicas=2, timeout=180)

        # --- 1. the bad build ------------------------------------------------------------
        bad = first.push(crash_after=CRASH_AFTER)
        pushed = time.monotonic()
        assert autoroll.webhook(package_event(first.repository)) == 202

        def quarantined() -> list[dict[str, Any]]:
            found = [e for e in quarantine_entries(kube, namespace) if e["digest"] == bad]
            assert found, "nothing quarantined yet"
            return found

        [entry] = eventually(quarantined, timeout=240, what="the digest quarantined")
        found_after = time.monotonic() - pushed
        assert entry["reason"] == "failed-health-window", entry
        eventually(
            lambda: _at_least(metric(autoroll, "autoroll_digests_quarantined"), 1),
            timeout=60,
            what="the quarantine gauge",
        )
        eventually(
            lambda: _one(titles(chat, "digest quarantined")),
            timeout=60,
            what="the quarantine notification",
        )
        # More passes: a webhook and the poll. Nothing more may go.
        assert autoroll.webhook(package_event(first.repository)) == 202
        passes = metric(autoroll, "autoroll_ticks_total", {"outcome": "ok"})
        eventually(
            lambda: _at_least(
                metric(autoroll, "autoroll_ticks_total", {"outcome": "ok"}), passes + 2
            ),
            timeout=90,
            what="two more passes",
        )
        gone = deletions(p for p in pods.pods() if p.name.startswith("wave-"))
        assert [d.digest for d in gone] == [old], [(d.name, d.digest[:19]) for d in gone]
        [warning] = warnings(kube, namespace)
        assert warning.reason == "DigestQuarantined", warning.message
        assert _one(titles(chat, "digest quarantined"))
        # The quarantine's key names the registry too (host/repository:tag).
        key = re.escape(f"{docker_registry.host}/{first.repository}:latest")
        autoroll.wait_for_line(rf"quarantined for {key}: ")  # the pod's log lags its Event
        plan = exec_in_controller(kube, node, namespace, "autoroll", "plan")
        assert "QUARANTINED" in plan, plan
        clear = f"autoroll quarantine clear {docker_registry.host}/{first.repository}:latest"
        assert clear in plan, plan

        # --- 2. a good build, in waves ---------------------------------------------------
        annotate_waves(kube, namespace)
        good = first.push()
        fixed = time.monotonic()
        assert autoroll.webhook(package_event(first.repository)) == 202
        # The one pod on the bad build, in whichever workload the digest reached first.
        [broken] = [p for app in three for p in app.live_pods() if p.digest == bad]
        core_api(kube).delete_namespaced_pod(broken.name, namespace)
        for app in three:
            app.wait_rolled(good, replicas=2, timeout=420)
        rolled_after = time.monotonic() - fixed
    history = [p for p in pods.pods() if p.name.startswith("wave-")]
    assert quarantine_entries(kube, namespace) == [], "the tag moved: the quarantine ended"
    _assert_wave_order(history, good, old, since=fixed)
    assert len(warnings(kube, namespace)) == 1
    record_property("quarantined_after_push_s", round(found_after, 1))
    record_property("rolled_in_waves_s", round(rolled_after, 1))
    print(
        f"\nbad build: quarantined {found_after:.0f}s after the push, one pod replaced;"
        f" good build: three waves rolled in {rolled_after:.0f}s (window {WINDOW}s)"
    )
    history_cli = run_autoroll(
        "history",
        "-n",
        namespace,
        env={"KUBECONFIG": str(control_plane.kubeconfig), "PATH": "/usr/bin:/bin"},
    )
    assert history_cli.returncode == 0, history_cli.stderr
    assert "quarantined" in history_cli.stdout and "done" in history_cli.stdout


def _assert_wave_order(history: list[PodSeen], good: str, old: str, *, since: float) -> None:
    """No pod of a wave goes (autoroll's deletions: pods on the old build, after the good
    push) before every pod of the earlier waves is Ready on ``good`` and has been for the
    window."""
    ready = became_ready(history, good)
    gone = [d for d in deletions(history) if d.digest == old and d.at >= since]
    for later in range(1, len(NAMES)):
        earlier_ready = [r.at for r in ready if r.name.startswith(NAMES[later - 1])]
        assert len(earlier_ready) == 2, (NAMES[later - 1], earlier_ready)
        first_gone = min(d.at for d in gone if d.name.startswith(NAMES[later]))
        assert first_gone >= max(earlier_ready) + WINDOW - 1, (
            f"{NAMES[later]} lost a pod {max(earlier_ready) + WINDOW - first_gone:.1f}s before"
            f" {NAMES[later - 1]} was through its window"
        )


def _at_least(value: float, wanted: float) -> float:
    assert value >= wanted, f"{value} < {wanted}"
    return value


def _one(found: list[str]) -> list[str]:
    assert len(found) == 1, found
    return found
