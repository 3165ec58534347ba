"""Whole passes over cluster shapes real users have, through the real Kubernetes adapter.

Each test is one finding of the cluster-shapes review (issue 23): the API answers are
scripted (``tests/support/scripted_cluster.py``) as the Deployment, ReplicaSet and Job
controllers and a kubelet write them, and the pass runs through ``KubeCluster`` and the
``Reconciler`` as in production. What is asserted is what a user sees: which pod gets a
DELETE, if any. The pass's rig is ``tests/support/shape_passes.py``; the shapes about the last
read before a DELETE and about leadership terms have their own modules
(``test_cluster_shapes_before_delete.py``, ``test_cluster_shapes_terms.py``).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from autoroll.core.images import TagRef
from autoroll.core.model import Digest, ImageContent, WorkloadKind
from autoroll.edge.plan import render, run_plan
from tests.support.answering_registry import AnsweringRegistry
from tests.support.scripted_cluster import (
    ScriptedWorld,
    container_doc,
    deployment_doc,
    owner,
    pod_doc,
    status_doc,
)
from tests.support.shape_passes import (
    HASH,
    HOST,
    IMAGE,
    NEW,
    NOW,
    OLD,
    REF,
    T0,
    app_pod,
    run_pass,
    web,
)

# --- 1. a workload claims only the pods it controls ------------------------------------------


def canary_pod() -> dict[str, Any]:
    """Deployment ``canary`` (selector app=web, track=canary): its pod carries ``app=web``."""
    return app_pod(
        "canary-7c9d5b8f4-x2x9q",
        rs="canary-7c9d5b8f4",
        pod_hash="7c9d5b8f4",
        labels={"app": "web", "track": "canary"},
        created=T0 - timedelta(days=3),  # the oldest: first in line if it were web's
    )


def test_a_canary_pod_under_the_apps_label_never_fills_the_count_nor_goes() -> None:
    # A ResourceQuota of 3 pods: web (3 replicas) got 2, the canary took the third.
    world = ScriptedWorld()
    world.add(
        WorkloadKind.DEPLOYMENT,
        web(
            status={
                "replicas": 2,
                "updatedReplicas": 2,
                "readyReplicas": 2,
                "availableReplicas": 2,
                "unavailableReplicas": 1,
            },
        ),
    )
    world.add(
        WorkloadKind.DEPLOYMENT,
        deployment_doc(
            "canary",
            replicas=1,
            selector={"app": "web", "track": "canary"},
            containers=[container_doc("app", IMAGE)],
            enrolled=False,
        ),
    )
    world.pods = [canary_pod(), app_pod(f"web-{HASH}-a"), app_pod(f"web-{HASH}-b")]
    # web is one replica short: nothing of it may go, and the canary's pod is not web's.
    assert run_pass(world) == []


@pytest.mark.parametrize(
    "foreign",
    [
        pytest.param(canary_pod(), id="a canary Deployment's pod"),
        pytest.param(
            app_pod(
                "migrate-x7k2p",
                controller=owner("Job", "migrate", api_version="batch/v1"),
                pod_hash="",
                created=T0 - timedelta(days=3),
            ),
            id="a Job's pod",
        ),
        pytest.param(
            app_pod(
                "web-test-connection", controller=None, pod_hash="", created=T0 - timedelta(days=3)
            ),
            id="a helm test pod",
        ),
    ],
)
def test_a_pod_its_selector_matches_but_another_controller_owns_is_never_deleted(
    foreign: dict[str, Any],
) -> None:
    world = ScriptedWorld()
    world.add(WorkloadKind.DEPLOYMENT, web(replicas=2))
    world.pods = [foreign, app_pod(f"web-{HASH}-a"), app_pod(f"web-{HASH}-b")]
    deleted = run_pass(world)
    assert foreign["metadata"]["name"] not in deleted
    assert deleted == [f"web-{HASH}-a"]  # one of web's own, the oldest first


# --- 2. settled means what the Deployment controller says -----------------------------------


def three_pods_ready_for_5s(deployment: dict[str, Any]) -> ScriptedWorld:
    """A world of ``deployment`` (web) with three pods on the old digest, Ready for 5 s."""
    world = ScriptedWorld()
    world.add(WorkloadKind.DEPLOYMENT, deployment)
    ready_since = NOW - timedelta(seconds=5)
    world.pods = [app_pod(f"web-{HASH}-{c}", ready_since=ready_since) for c in "abc"]
    return world


@pytest.mark.parametrize(
    "deployment",
    [
        pytest.param(
            web(min_ready_seconds=600, status={"availableReplicas": 0, "unavailableReplicas": 3}),
            id="minReadySeconds: Ready seconds ago, 0 available",
        ),
        pytest.param(web(paused=True), id="spec.paused"),
        pytest.param(
            web(generation=2, status={"observedGeneration": 1}), id="observedGeneration behind"
        ),
        pytest.param(web(status={"updatedReplicas": 2}), id="2 of 3 replicas updated"),
        pytest.param(web(status={"replicas": 4}), id="an old replica pending termination"),
        pytest.param(
            web(
                status={
                    "conditions": [
                        {
                            "type": "Progressing",
                            "status": "False",
                            "reason": "ProgressDeadlineExceeded",
                        }
                    ]
                }
            ),
            id="progress deadline exceeded",
        ),
        pytest.param(web(status={}), id="no status written yet"),
    ],
)
def test_a_deployment_its_controller_does_not_call_complete_loses_no_pod(
    deployment: dict[str, Any],
) -> None:
    world = three_pods_ready_for_5s(deployment)
    assert run_pass(world) == []


def test_min_ready_seconds_is_honoured_from_the_pods_even_when_the_status_lags() -> None:
    # The status still says all 3 available (written before the last replacement), but
    # one pod became Ready 5 s ago under minReadySeconds 30: it is not available yet.
    world = ScriptedWorld()
    world.add(WorkloadKind.DEPLOYMENT, web(min_ready_seconds=30))
    world.pods = [
        app_pod(f"web-{HASH}-a"),
        app_pod(f"web-{HASH}-b"),
        app_pod(
            f"web-{HASH}-c",
            digest=NEW,
            created=NOW - timedelta(seconds=20),
            ready_since=NOW - timedelta(seconds=5),
        ),
    ]
    assert run_pass(world) == []


# --- 5. a bare sha256: imageID is a child of the target index before it is a config ---------


def test_a_bare_digest_that_is_a_child_of_the_target_index_is_current() -> None:
    child = Digest("sha256:" + "d" * 64)
    registry = AnsweringRegistry({REF: NEW})
    registry.children[NEW] = frozenset({child})
    registry.content[NEW] = ImageContent(frozenset({Digest("sha256:" + "e" * 64)}))
    world = ScriptedWorld()
    world.add(WorkloadKind.DEPLOYMENT, web(replicas=2))
    world.pods = [app_pod(f"web-{HASH}-{c}") for c in "ab"]
    for pod in world.pods:
        pod["status"]["containerStatuses"][0]["imageID"] = str(child)
    assert run_pass(world, registry=registry) == []


# --- 6. native sidecars and init containers on a moved tag ----------------------------------


SIDECAR_IMAGE = IMAGE
APP_IMAGE = f"{HOST}/team/app@sha256:{'c' * 64}"  # pinned: only the sidecar can move


def pinned_web(replicas: int, *init_containers: dict[str, Any]) -> ScriptedWorld:
    """A world of the Deployment web alone: its app pinned (``APP_IMAGE``) beside
    ``init_containers``, native sidecars among them; no pods yet."""
    world = ScriptedWorld()
    world.add(
        WorkloadKind.DEPLOYMENT,
        deployment_doc(
            "web",
            replicas=replicas,
            containers=[container_doc("app", APP_IMAGE)],
            init_containers=list(init_containers),
        ),
    )
    return world


@pytest.mark.parametrize(
    "restart_policy", [pytest.param("Always", id="native sidecar"), pytest.param(None, id="init")]
)
def test_an_init_container_or_native_sidecar_on_a_moved_tag_is_rolled(
    restart_policy: str | None,
) -> None:
    extra = {"restartPolicy": restart_policy} if restart_policy else {}
    init = container_doc("proxy", SIDECAR_IMAGE, **extra)
    world = pinned_web(2, init)
    for suffix in "ab":
        pod = pod_doc(
            f"web-{HASH}-{suffix}",
            labels={"app": "web", "pod-template-hash": HASH},
            containers=[container_doc("app", APP_IMAGE)],
            statuses=[status_doc("app", APP_IMAGE, APP_IMAGE)],
            init_containers=[init],
            init_statuses=[status_doc("proxy", SIDECAR_IMAGE, f"{HOST}/team/web@{OLD}")],
            created=T0,
            controller=owner("ReplicaSet", f"web-{HASH}"),
        )
        world.pods.append(pod)
    assert run_pass(world) == [f"web-{HASH}-a"]


# --- what autoroll plan says about these shapes ---------------------------------------------


def plan_text(world: ScriptedWorld, registry: AnsweringRegistry | None = None) -> str:
    report = run_plan(
        cluster=world.cluster(),
        registry=registry or AnsweringRegistry({REF: NEW}),
        registries={HOST},
        now=NOW,
    )
    return render(report)


def test_plan_names_each_foreign_pod_once_with_its_controller() -> None:
    world = ScriptedWorld()
    world.add(WorkloadKind.DEPLOYMENT, web(replicas=2))
    job = owner("Job", "migrate", api_version="batch/v1")
    world.pods = [
        canary_pod(),
        app_pod("migrate-x7k2p", controller=job, pod_hash=""),
        app_pod("web-test-connection", controller=None, pod_hash=""),
        app_pod(f"web-{HASH}-a"),
        app_pod(f"web-{HASH}-b"),
    ]
    text = plan_text(world)
    assert "Not counted, never deleted (another controller's pods):" in text
    for pod, controller in [
        ("canary-7c9d5b8f4-x2x9q", "Deployment/canary"),
        ("migrate-x7k2p", "Job/migrate"),
        ("web-test-connection", "no controller"),
    ]:
        line = f"shop/deployment/web: pod {pod} matches the selector, controlled by {controller}"
        assert text.count(line) == 1, text
    assert f"stale → would delete pod web-{HASH}-a" in text


@pytest.mark.parametrize(
    ("deployment", "clause"),
    [
        (web(paused=True), "not-settled: rollout-paused (spec.paused is true"),
        (web(status={"updatedReplicas": 2}), "not-settled: rollout-in-progress"),
        (
            web(min_ready_seconds=600, status={"availableReplicas": 0}),
            "not-settled: pods-unavailable",
        ),
    ],
)
def test_plan_names_the_controller_status_clause_that_holds_a_workload(
    deployment: dict[str, Any], clause: str
) -> None:
    world = three_pods_ready_for_5s(deployment)
    assert clause in plan_text(world)


def test_plan_shows_sidecar_and_init_containers_as_such() -> None:
    sidecar = container_doc("proxy", SIDECAR_IMAGE, restartPolicy="Always")
    init = container_doc("migrate", f"{HOST}/team/migrate:latest")
    world = pinned_web(1, init, sidecar)
    text = plan_text(
        world, AnsweringRegistry({REF: NEW, TagRef(HOST, "team/migrate", "latest"): NEW})
    )
    rows = {line.split()[1] + " " + line.split()[2]: line for line in text.splitlines()[1:4]}
    assert "proxy (sidecar)" in rows and "migrate (init)" in rows, text
