"""A corpus of cluster shapes users have (issue 23), on the real node and control plane.

Every shape runs the app's real containers (kubelet + containerd), the real Deployment,
ReplicaSet, Job and disruption controllers of kube-controller-manager, and autoroll as the
chart installs it (``start_autoroll``). Each test keeps a pod watch and asserts on what the
cluster did; autoroll's own lines are a second witness:

(a) a canary Deployment sharing the app's label, (b) a Job and (c) a ``helm test`` pod carrying
the app's selector labels: never counted, never deleted; (d) a scale-up in the middle of a
roll; (e) ``minReadySeconds`` with an image that crashes 20 s after Ready: one pod replaced,
then the roll halts; (f) a template change applied as Argo CD applies it while the tag moves:
nothing deleted until the Deployment's rollout is complete; (h) a native sidecar on a moved
tag. The shapes that hold a roll ((g) a pause set mid-pass, (i) ``spec.paused``, (j) a budget
of none) are in ``test_cluster_shapes_held.py``, the helpers both use in
``deployment_pods.py``. The charts other people wrote are in ``test_public_charts.py``.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.e2e.controller import StartAutoroll, run_plan
from tests.e2e.deployment_pods import (
    ROLL_TIMEOUT,
    autoroll_deleted,
    controlled_by,
    create,
    enrolled_deployment,
    image_of,
    is_ready,
    passes_about,
    pods_of,
    raw_pods,
    rolled_out,
    wait_own,
)
from tests.e2e.enrolled_app import POLL, SLACK, START_TIMEOUT, app, pass_done_now
from tests.e2e.helpers import apps_api, batch_api, container, core_api, deployment, pod
from tests.e2e.images import APP_PORT, push_sidecar
from tests.e2e.scenario import App, Recorder, decision_lines, deletions, label_selector
from tests.support.registry import RegistryServer
from tests.support.wait import eventually

__all__ = ["app", "pods_of"]  # fixtures, shared with test_cluster_shapes_held

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600)]


# --- (a) (b) (c) pods of other controllers under the app's labels -----------------------------


def test_a_canary_a_jobs_pod_and_a_helm_test_pod_under_the_apps_labels_are_never_touched(
    *,
    app: App,
    kube: Any,
    namespace: str,
    docker_registry: RegistryServer,
    start_autoroll: StartAutoroll,
    control_plane: Any,
    pods_of: Recorder,
) -> None:
    old = app.push()
    served = container(app.image, http_port=APP_PORT, ready_after=1)
    # (a) an unenrolled canary Deployment: selector app=web,track=canary; its pods carry app=web
    canary = deployment("canary", app.image, replicas=1, http_port=APP_PORT, ready_after=1)
    canary["spec"]["selector"]["matchLabels"] = {"app": "web", "track": "canary"}
    canary["spec"]["template"]["metadata"]["labels"] = {"app": "web", "track": "canary"}
    apps_api(kube).create_namespaced_deployment(namespace, canary)
    # (b) a Job whose pod carries the app's labels and keeps serving (Running, Ready)
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "migrate"},
        "spec": {
            "backoffLimit": 0,
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [served], "restartPolicy": "Never"},
            },
        },
    }
    batch_api(kube).create_namespaced_job(namespace, job)
    # (c) a helm test pod as `helm create`'s scaffold makes it: the selector labels, a hook
    test_pod = pod("web-test-connection", app.image, annotations={"helm.sh/hook": "test"})
    test_pod["metadata"]["labels"] = {"app": "web", "app.kubernetes.io/name": "web"}
    test_pod["spec"]["containers"] = [served]
    core_api(kube).create_namespaced_pod(namespace, test_pod)
    create(app, enrolled_deployment(app, 2))
    autoroll = start_autoroll()
    wait_own(app, old, replicas=2, timeout=START_TIMEOUT)

    def foreign_running() -> list[dict[str, Any]]:
        found = [p for p in raw_pods(kube, namespace) if not controlled_by(p, "web")]
        assert len(found) == 3 and all(is_ready(p) for p in found), [
            (p["metadata"]["name"], is_ready(p)) for p in found
        ]
        return found

    foreign = eventually(foreign_running, timeout=START_TIMEOUT, what="the three foreign pods")
    pass_done_now(autoroll, app)
    new = app.push()
    wait_own(app, new, replicas=2, timeout=ROLL_TIMEOUT)
    passes_about(autoroll, app, 2, pattern=r": current \(")

    deleted = deletions(pods_of.pods())
    foreign_uids = {p["metadata"]["uid"] for p in foreign}
    assert not foreign_uids & {d.uid for d in deleted}, "a foreign pod was deleted"
    assert all(p.digest == old for p in deleted) and len(deleted) == 2, deleted
    assert sorted(autoroll_deleted(autoroll, app)) == sorted(d.name for d in deleted)
    # The Job never ran again: one pod, the first, still there.
    job_pods = raw_pods(kube, namespace, "job-name=migrate")
    assert [p["metadata"]["uid"] for p in job_pods] == [
        p["metadata"]["uid"] for p in foreign if p["metadata"]["name"].startswith("migrate-")
    ]
    plan = run_plan(control_plane, docker_registry, label_selector(namespace))
    for name, owner in [
        (
            next(p["metadata"]["name"] for p in foreign if "canary" in p["metadata"]["name"]),
            "Deployment/canary",
        ),
        (job_pods[0]["metadata"]["name"], "Job/migrate"),
        ("web-test-connection", "no controller"),
    ]:
        assert f"pod {name} matches the selector, controlled by {owner}" in plan, plan


# --- (d) a scale-up in the middle of a roll -------------------------------------------------


def test_a_scale_up_in_the_middle_of_a_roll_waits_for_the_new_pods(
    *, app: App, kube: Any, namespace: str, start_autoroll: StartAutoroll, pods_of: Recorder
) -> None:
    app.ready_after = 3  # a replacement is Ready 3 s after it starts
    autoroll, _ = rolled_out(app, start_autoroll, 3)
    pass_done_now(autoroll, app)
    new = app.push()

    def first_deleted() -> None:
        assert deletions(pods_of.pods()), "no deletion yet"

    eventually(first_deleted, timeout=POLL + 2 * SLACK + 30, what="the roll's first deletion")
    # What an HPA does: write the scale subresource. One etcd: its resourceVersion orders
    # the scale-up against every pod event.
    scale = apps_api(kube).patch_namespaced_deployment_scale(
        "web", namespace, {"spec": {"replicas": 5}}
    )
    scaled_at = int(scale.metadata.resource_version)
    wait_own(app, new, replicas=5, timeout=ROLL_TIMEOUT + 60)

    # Replay the watch: at each deletion, every other pod of web was there and Ready, as many
    # as it wanted then (3 before the scale-up, 5 after).
    state: dict[str, dict[str, Any]] = {}
    problems: list[str] = []
    gone: set[str] = set()
    for _, kind, raw in list(pods_of.events):
        if not controlled_by(raw, "web"):
            continue
        uid, meta = raw["metadata"]["uid"], raw["metadata"]
        if uid not in gone and (meta.get("deletionTimestamp") or kind == "DELETED"):
            gone.add(uid)
            others = [p for u, p in state.items() if u != uid]
            wanted = 5 if int(meta["resourceVersion"]) > scaled_at else 3
            unready = [p["metadata"]["name"] for p in others if not is_ready(p)]
            terminating = [
                p["metadata"]["name"] for p in others if p["metadata"].get("deletionTimestamp")
            ]
            if unready or terminating or len(others) + 1 < wanted:
                problems.append(f"{meta['name']}: unready {unready}, terminating {terminating}")
        if kind == "DELETED":
            state.pop(uid, None)
        else:
            state[uid] = raw
    assert not problems, problems
    assert len(autoroll_deleted(autoroll, app)) == 3


# --- (e) minReadySeconds, and an image that crashes 20 s after Ready ---------------------------


def test_an_image_that_crashes_after_ready_within_min_ready_seconds_halts_after_one_pod(
    *, app: App, start_autoroll: StartAutoroll, pods_of: Recorder
) -> None:
    autoroll, old = rolled_out(app, start_autoroll, 3, minReadySeconds=20)

    def available() -> None:
        status = app.deployment().get("status") or {}
        assert status.get("availableReplicas") == 3, status

    eventually(available, timeout=90, what="3 available after minReadySeconds")
    pass_done_now(autoroll, app)
    bad = app.push(crash_after=14)  # about 12 s after Ready: inside minReadySeconds

    def replacement_crashed() -> None:
        replaced = [
            raw
            for _, _, raw in list(pods_of.events)
            if controlled_by(raw, "web")
            and image_of(raw) == bad
            and any(
                s.get("restartCount", 0) >= 1 for s in raw["status"].get("containerStatuses") or ()
            )
        ]
        assert replaced, "the replacement has not crashed yet"

    start = len(autoroll.output)
    eventually(replacement_crashed, timeout=ROLL_TIMEOUT, what="the replacement crashing")
    passes_about(autoroll, app, 3, pattern="waiting")
    deleted = deletions([p for p in pods_of.pods() if p.name.startswith("web-")])
    assert [d.digest for d in deleted] == [old], deleted  # one pod replaced, then halted
    # Between Ready and the crash the replacement was not yet available: autoroll said so.
    said = decision_lines(autoroll, app, "pod not available yet", since=start)
    assert said, "autoroll never waited on minReadySeconds"


# --- (f) a template change, applied as Argo CD does, while the tag moves ----------------------


def test_a_template_rollout_and_a_moved_tag_nothing_is_deleted_before_the_rollout_completes(
    *, app: App, kube: Any, namespace: str, start_autoroll: StartAutoroll, pods_of: Recorder
) -> None:
    app.ready_after = 4  # a slow rollout: one surge pod at a time, each Ready after 4 s
    autoroll, old = rolled_out(app, start_autoroll, 3)
    pass_done_now(autoroll, app)
    before = {p["metadata"]["labels"]["pod-template-hash"] for p in raw_pods(kube, namespace)}
    with Recorder(
        apps_api(kube).list_namespaced_deployment, namespace, field_selector="metadata.name=web"
    ) as deployments:
        # Argo CD's server-side apply of a changed template (a new env var)
        applied = {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "web"},
            "spec": {
                "selector": {"matchLabels": {"app": "web"}},
                "template": {
                    "metadata": {"labels": {"app": "web"}},
                    "spec": {
                        "containers": [
                            {
                                "name": "app",
                                "image": app.image,
                                "env": [{"name": "CHANGED", "value": "1"}],
                            }
                        ]
                    },
                },
            },
        }
        apps_api(kube).patch_namespaced_deployment(
            "web",
            namespace,
            applied,
            field_manager="argocd-controller",
            force=True,
            _content_type="application/apply-patch+yaml",
        )

        def a_new_pod_runs_old() -> str:
            found = [
                p
                for p in raw_pods(kube, namespace)
                if p["metadata"]["labels"].get("pod-template-hash") not in before
                and image_of(p) == old
            ]
            assert found, "no pod of the new template has started yet"
            return str(found[0]["metadata"]["labels"]["pod-template-hash"])

        new_hash = eventually(a_new_pod_runs_old, timeout=60, what="a new-template pod on old")
        new = app.push()  # the tag moves while the Deployment controller rolls the template
        wait_own(app, new, replicas=3, timeout=ROLL_TIMEOUT + 60)
        passes_about(autoroll, app, 2, pattern=r": current \(")
    ours = autoroll_deleted(autoroll, app)
    assert ours, "autoroll never rolled the new-template pod that pulled the old build"
    # One etcd: resourceVersions order the pod's deletion and the Deployment's statuses.
    versions = [
        (
            int(raw["metadata"]["resourceVersion"]),
            raw.get("status") or {},
            raw["metadata"].get("generation"),
        )
        for _, _, raw in deployments.events
    ]
    for name in ours:
        deleted_at = next(
            int(raw["metadata"]["resourceVersion"])
            for _, _, raw in pods_of.events
            if raw["metadata"]["name"] == name and raw["metadata"].get("deletionTimestamp")
        )
        _, status, generation = max(v for v in versions if v[0] < deleted_at)
        assert status.get("observedGeneration") == generation, (name, status)
        assert status.get("updatedReplicas") == status.get("replicas") == 3, (name, status)
        assert status.get("availableReplicas") == 3, (name, status)
        assert name.startswith(f"web-{new_hash}-"), f"{name} is not of the new template"


# --- (h) a native sidecar on a moved tag ----------------------------------------------------


def test_a_native_sidecar_on_a_moved_tag_is_rolled_one_pod_at_a_time(
    *,
    app: App,
    docker_registry: RegistryServer,
    start_autoroll: StartAutoroll,
    pods_of: Recorder,
) -> None:
    app_image = app.push_image()
    pinned = f"{docker_registry.host}/{app.repository}@{app_image.digest}"  # never moves
    sidecar_repo = f"{app.repository}-proxy"
    sidecar = f"{docker_registry.host}/{sidecar_repo}:latest"
    first = push_sidecar(app.pusher, sidecar_repo, build="1").digest
    manifest = enrolled_deployment(app, 2)
    spec = manifest["spec"]["template"]["spec"]
    spec["containers"][0]["image"] = pinned
    spec["initContainers"] = [
        {"name": "proxy", "image": sidecar, "imagePullPolicy": "Always", "restartPolicy": "Always"}
    ]
    create(app, manifest)
    autoroll = start_autoroll()
    wait_own(app, first, replicas=2, timeout=START_TIMEOUT, container_name="proxy")
    pass_done_now(autoroll, app)
    second = push_sidecar(app.pusher, sidecar_repo, build="2").digest
    wait_own(app, second, replicas=2, timeout=ROLL_TIMEOUT, container_name="proxy")
    passes_about(autoroll, app, 2, pattern=r"proxy: current \(")
    deleted = deletions([p for p in pods_of.pods() if p.name.startswith("web-")])
    assert len(deleted) == 2
    assert len(autoroll_deleted(autoroll, app)) == 2
    assert decision_lines(autoroll, app, r" proxy: ")  # the sidecar is decided on, by name
