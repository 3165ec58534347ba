"""Issue 29 on the real control plane and the real node: the chart's pinning webhook
(docs/adr/028) pins each new pod of an enrolled workload to its approved digest.

The controller is the chart's pod (``helm install`` with ``pinning.enabled``), its webhook
called by the real kube-apiserver through its egress selector (``egress.py``: the API server
reaches the Service's ClusterIP inside the node's network as a cluster's konnectivity
proxy would), over TLS with the certificate the controller made, published in the
MutatingWebhookConfiguration's caBundle and rotated every 40 s here
(``pinning.certificateSeconds: 60``). The app is applied the way GitOps applies it
(server-side apply, field manager ``gitops``, no ``replicas``: its scale is someone else's,
an HPA's here played by the test through the scale subresource).

- A maturing delay: a new digest is pushed, the Deployment is scaled up, and the new pod runs
  the *old* approved digest (the tag already names the new one); once the delay is over the
  roll proceeds, its replacements pinned to the new digest, and pods made from then on get
  it. The serving certificate rotated meanwhile. A dry-run server-side apply of the GitOps
  manifest changes nothing: the workload object was never written.
- The same for a closed window, lifted by annotating the object ``always``.
- With the webhook's pod stopped, a scale-up still makes its pod (unpinned: failurePolicy
  Ignore), and the controller, back, says so with a ``PodAdmittedUnpinned`` Warning Event.
- With pinning on, an ``imagePullPolicy: IfNotPresent`` container is rolled: its replacement
  names the digest, so the node's cached ``:latest`` is not reused.

- A quarantined digest (issue 26, docs/adr/026: a build that crash-loops halts its roll) is
  never what new pods are pinned to: a scale-up while it is quarantined, and the replacement
  of the crash-looping pod a person deletes, both run the old approved digest, and the roll
  stays held (the quarantine is a ``DigestHolds``, ``autoroll.edge.services.QuarantineHolds``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

import pytest

from tests.e2e.controller import Autoroll, StartAutoroll
from tests.e2e.enrolled_app import make_app
from tests.e2e.helpers import apps_api, core_api, deployment
from tests.e2e.images import APP_PORT
from tests.e2e.node import Node
from tests.e2e.pinned_pods import (
    START,
    newest,
    pods,
    ready,
    running,
    spec_image,
    summary,
    wait_pods,
)
from tests.e2e.scenario import ENROLL_LABEL, TEST_LABEL, App, metric, nudging
from tests.e2e.test_bad_build import quarantine_entries
from tests.support.ports import free_port
from tests.support.registry import RegistryServer
from tests.support.wait import eventually

# Each scenario waits on real pods being made, pulled and probed, several times over.
pytestmark = [pytest.mark.e2e, pytest.mark.timeout(900)]

MIN_AGE = "autoroll.aethnet.se/min-age"
WINDOW = "autoroll.aethnet.se/window"
GITOPS = "gitops"


@pytest.fixture
def app(kube: Any, namespace: str, docker_registry: RegistryServer, node: Node) -> App:
    return make_app(kube, namespace, docker_registry, node)


def pinning_values(namespace: str) -> dict[str, Any]:
    """The chart values of pinning here: its port free on the node (hostNetwork), the test's
    namespace reviewed (the release shares it), a certificate rotated every 40 s."""
    return {
        "pinning": {
            "enabled": True,
            "port": free_port(),
            "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": namespace}},
            "certificateSeconds": 60,
        }
    }


def start(start_autoroll: StartAutoroll, app: App, **env: str) -> Autoroll:
    """The controller with pinning on, once its webhook serves and a pass has published the
    app's approvals (before that, new pods are admitted unpinned, by design)."""
    namespace = app.namespace
    controller = start_autoroll(values=pinning_values(namespace), EMIT_EVENTS="true", **env)
    controller.wait_for_line("pinning webhook: serving POST /pin", timeout=60)

    def published() -> None:
        assert metric(controller, "autoroll_pinning_workloads", {"state": "target"}) >= 1

    eventually(published, timeout=60, what="the app's approvals published")

    def reached() -> None:
        # A pod created in dry run is reviewed too (sideEffects: None): once one reaches the
        # webhook, the Service has its endpoint and kube-proxy routes to it.
        core_api(app.kube).create_namespaced_pod(
            namespace,
            {
                "metadata": {"generateName": "probe-"},
                "spec": {"containers": [{"name": "c", "image": "example.invalid/probe:1"}]},
            },
            dry_run="All",
        )
        assert metric(controller, "autoroll_admissions_total", {"result": "no-controller"}) >= 1

    eventually(reached, timeout=60, what="the API server reaching the webhook")
    return controller


def held(controller: Autoroll, app: App, reason: str, *, since: int) -> None:
    """Wait for a pass to hold the app's deletion with ``reason``."""
    pattern = rf"{app.namespace}/deployment/{app.name}: not deleting .* held \({reason}\)"

    def found() -> None:
        assert controller.lines(pattern, since=since), f"not held ({reason}) yet"

    eventually(found, timeout=30, what=f"the new digest held ({reason})")


def pushed_and_held(controller: Autoroll, app: App, reason: str) -> str:
    """Push a new build, ask for a pass and wait for it to hold the roll (``reason``); the
    new digest."""
    new = app.push()
    seen = len(controller.output)
    assert controller.webhook() == 202
    held(controller, app, reason, since=seen)
    return new


def scaled_up_on_approved(app: App, replicas: int, old: str) -> None:
    """Scale to ``replicas``: the newest pod is pinned to ``old``, the approved digest."""
    scale(app, replicas)
    found = wait_pods(app, replicas, pinned=None, runs=old)
    assert spec_image(newest(found)) == f"{app.image}@{old}"


def manifest(
    app: App, *, pull_policy: str = "Always", annotations: Mapping[str, str]
) -> dict[str, Any]:
    """The app as its Git repository holds it: no ``replicas`` (its scale is an HPA's)."""
    body = deployment(
        app.name,
        app.image,
        labels={ENROLL_LABEL: "true", TEST_LABEL: app.test},
        pull_policy=pull_policy,
        http_port=APP_PORT,
        ready_after=app.ready_after,
    )
    body["metadata"]["annotations"] = dict(annotations)
    del body["spec"]["replicas"]
    return body


def apply(app: App, body: Mapping[str, Any], *, dry_run: bool = False) -> dict[str, Any]:
    """Server-side apply as a GitOps tool does (field manager ``gitops``)."""
    extra = {"dry_run": "All"} if dry_run else {}
    response = apps_api(app.kube).patch_namespaced_deployment(
        app.name,
        app.namespace,
        body,
        field_manager=GITOPS,
        force=True,
        _content_type="application/apply-patch+yaml",
        _preload_content=False,
        **extra,
    )
    result: dict[str, Any] = json.loads(response.data)
    return result


def scale(app: App, replicas: int) -> int:
    """Scale through the scale subresource (as an HPA); the Deployment's generation after."""
    apps_api(app.kube).patch_namespaced_deployment_scale(
        app.name, app.namespace, {"spec": {"replicas": replicas}}
    )
    return int(app.deployment()["metadata"]["generation"])


def annotate(app: App, key: str, value: str) -> None:
    apps_api(app.kube).patch_namespaced_deployment(
        app.name, app.namespace, {"metadata": {"annotations": {key: value}}}
    )


def ssa_diff_is_empty(app: App, body: Mapping[str, Any], generation: int) -> None:
    """GitOps stays quiet: applying the manifest again (dry run) changes nothing, and the
    generation is the one the test's own last scale left."""
    live = app.deployment()
    dry = apply(app, body, dry_run=True)
    assert dry["spec"] == live["spec"]
    assert dry["metadata"]["resourceVersion"] == live["metadata"]["resourceVersion"]
    assert live["metadata"]["generation"] == generation


def unpinned_events(app: App) -> list[dict[str, Any]]:
    response = core_api(app.kube).list_namespaced_event(
        app.namespace, field_selector="reason=PodAdmittedUnpinned", _preload_content=False
    )
    items: list[dict[str, Any]] = json.loads(response.data)["items"]
    return items


def test_a_maturing_digest_keeps_new_pods_on_the_approved_one_until_its_roll_may_proceed(
    app: App, start_autoroll: StartAutoroll, namespace: str
) -> None:
    old = app.push()
    body = manifest(app, annotations={MIN_AGE: "45s"})
    apply(app, body)
    scale(app, 2)
    controller = start(start_autoroll, app)
    wait_pods(app, 2, pinned=None, runs=old)  # made before the webhook: not pinned
    scaled_up_on_approved(app, 3, old)  # the webhook pins from now on

    new = pushed_and_held(controller, app, "maturing")
    # The tag names the new digest; the new pod runs the old, approved one.
    scaled_up_on_approved(app, 4, old)

    # After the delay the roll proceeds; its replacements are pinned to the new digest.
    wait_pods(app, 4, pinned=new, runs=new, timeout=45 + 4 * START)
    generation = scale(app, 5)
    wait_pods(app, 5, pinned=new, runs=new)

    assert unpinned_events(app) == []
    assert metric(controller, "autoroll_pinning_certificate_rotations_total") >= 2
    assert metric(controller, "autoroll_admissions_total", {"result": "pinned"}) >= 6
    ssa_diff_is_empty(app, body, generation)


def test_a_closed_window_keeps_new_pods_on_the_approved_digest_until_it_opens(
    app: App, start_autoroll: StartAutoroll, namespace: str
) -> None:
    old = app.push()
    # A minute a week, on another day than today: closed for the whole test.
    closed = "Sun 03:00-03:01 UTC" if _utc_weekday() != 6 else "Mon 03:00-03:01 UTC"
    body = manifest(app, annotations={WINDOW: closed})
    apply(app, body)
    scale(app, 2)
    controller = start(start_autoroll, app)
    wait_pods(app, 2, pinned=None, runs=old)
    new = pushed_and_held(controller, app, "outside-window")
    scaled_up_on_approved(app, 3, old)

    annotate(app, WINDOW, "always")  # on the object: no new ReplicaSet
    assert controller.webhook() == 202
    wait_pods(app, 3, pinned=new, runs=new, timeout=3 * START)
    scale(app, 4)
    wait_pods(app, 4, pinned=new, runs=new)
    body["metadata"]["annotations"] = {WINDOW: "always"}
    ssa_diff_is_empty(app, body, int(app.deployment()["metadata"]["generation"]))


def test_with_the_webhook_stopped_pods_are_still_made_and_a_warning_event_says_so(
    app: App, start_autoroll: StartAutoroll, namespace: str
) -> None:
    old = app.push()
    apply(app, manifest(app, annotations={}))
    scale(app, 1)
    controller = start(start_autoroll, app)
    wait_pods(app, 1, pinned=None, runs=old)
    scaled_up_on_approved(app, 2, old)

    # The controller (and its webhook) stopped: the API server cannot reach it.
    apps = apps_api(app.kube)
    apps.patch_namespaced_deployment_scale("autoroll", namespace, {"spec": {"replicas": 0}})

    def stopped() -> None:
        assert _no_controller_pod(app), "the controller's pod is still there"

    eventually(stopped, timeout=60, what="the controller's pod gone")
    scale(app, 3)
    found = wait_pods(app, 3, pinned=None, runs=old)
    unpinned = newest(found)
    assert spec_image(unpinned) == app.image  # admitted as it was: failurePolicy Ignore

    apps.patch_namespaced_deployment_scale("autoroll", namespace, {"spec": {"replicas": 1}})

    def warned() -> dict[str, Any]:
        events = unpinned_events(app)
        assert events, "no PodAdmittedUnpinned Event yet"
        return events[0]

    event = eventually(warned, timeout=START, what="the PodAdmittedUnpinned Warning Event")
    assert event["type"] == "Warning"
    assert event["involvedObject"]["kind"] == "Deployment"
    assert unpinned["metadata"]["name"] in event["message"]
    controller.wait_for_line("admitted-unpinned|was admitted without its digest pinned")  # lags


def test_an_if_not_present_container_is_rolled_with_pinning_on(
    app: App, start_autoroll: StartAutoroll, namespace: str
) -> None:
    old = app.push()
    apply(app, manifest(app, pull_policy="IfNotPresent", annotations={}))
    scale(app, 2)
    start(start_autoroll, app)
    wait_pods(app, 2, pinned=None, runs=old)
    new = app.push()  # the node has :latest cached as the old build
    # Replacements name the digest, so IfNotPresent pulls it: every pod ends on the new one.
    wait_pods(app, 2, pinned=new, runs=new, timeout=4 * START)


def test_a_quarantined_digest_is_not_pinned_to(
    app: App, start_autoroll: StartAutoroll, namespace: str
) -> None:
    old = app.push()
    apply(app, manifest(app, annotations={}))
    scale(app, 2)
    # A bound of 5 s (the smallest accepted): the crash-looping build halts within the test.
    controller = start(start_autoroll, app, ROLLOUT_HALTED_AFTER_SECONDS="5")
    wait_pods(app, 2, pinned=None, runs=old)

    # A build that exits at once: its first replacement (pinned to it: its roll had begun)
    # crash-loops, the roll halts and the digest is quarantined for the tag.
    bad = app.push(crash=True)
    assert controller.webhook() == 202

    def quarantined() -> dict[str, Any]:
        found = [e for e in quarantine_entries(app.kube, namespace) if e["digest"] == bad]
        assert found, "nothing quarantined yet"
        return found[0]

    entry = eventually(quarantined, timeout=START, what="the bad digest quarantined")
    # crash-loop once the kubelet restarted it; not-ready if the halt came first.
    assert entry["reason"] in ("crash-loop", "not-ready"), entry

    def held_back() -> None:
        assert metric(controller, "autoroll_pinning_workloads", {"state": "held"}) >= 1

    eventually(held_back, timeout=60, what="the app's approval held back (quarantined)")
    before = {p["metadata"]["uid"] for p in pods(app)}
    [broken] = [p for p in pods(app) if spec_image(p) == f"{app.image}@{bad}"]

    # A scale-up while the digest is quarantined: the new pod runs the old approved digest.
    scale(app, 3)

    def scaled() -> dict[str, Any]:
        found = [p for p in pods(app) if p["metadata"]["uid"] not in before]
        assert len(found) == 1 and ready(found[0]) and running(found[0]) == old, summary(app)
        return found[0]

    added = eventually(scaled, timeout=START, what="the scaled-up pod Ready on the old digest")
    assert spec_image(added) == f"{app.image}@{old}"

    # The crash-looping pod deleted by hand, as a person does: its replacement is not the
    # quarantined build either, and autoroll, settled again, holds its roll (quarantined).
    seen = len(controller.output)
    core_api(app.kube).delete_namespaced_pod(broken["metadata"]["name"], namespace)
    found = wait_pods(app, 3, pinned=None, runs=old)
    made = [p for p in found if p["metadata"]["uid"] not in before]
    assert [spec_image(p) for p in made] == [f"{app.image}@{old}"] * 2, summary(app)
    with nudging(controller):
        held(controller, app, "quarantined", since=seen)
    assert metric(controller, "autoroll_pod_deletions_total", {"mode": "real"}) == 1
    assert [e["digest"] for e in quarantine_entries(app.kube, namespace)] == [bad]


def _utc_weekday() -> int:
    return datetime.now(UTC).weekday()


def _no_controller_pod(app: App) -> bool:
    response = core_api(app.kube).list_namespaced_pod(
        app.namespace, label_selector="app.kubernetes.io/instance=autoroll", _preload_content=False
    )
    return not json.loads(response.data)["items"]
