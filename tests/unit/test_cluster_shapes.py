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
from tests.support import scripted_cluster as scripted
from tests.support import shape_passes as shapes
from tests.support.answering_registry import AnsweringRegistry

# --- 1. a workload claims only the pods it controls ------------------------------------------


def canary_pod() -> dict[str, Any]:
    """Deployment ``canary`` (selector app=web, track=canary): its pod carries ``app=web``."""
    return shapes.app_pod(
        "canary-7c9d5b8f4-x2x9q",
        rs="canary-7c9d5b8f4",
        pod_hash="7c9d5b8f4",
        labels={"app": "web", "track": "canary"},
        created=shapes.T0 - timedelta(days=3),  # the oldest: first in line if it were web's
    )


def test_a_canary_pod_under_the_apps_label_never_fills_the_count_nor_goes() -> None:
    # A ResourceQuota of 3 pods: web (3 replicas) got 2, the canary took the third.
    world = scripted.ScriptedWorld()
    world.add(
        WorkloadKind.DEPLOYMENT,
        shapes.web(
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
        scripted.deployment_doc(
            "canary",
            replicas=1,
            selector={"app": "web", "track": "canary"},
            containers=[scripted.container_doc("app", shapes.IMAGE)],
            enrolled=False,
        ),
    )
    world.pods = [
        canary_pod(),
        shapes.app_pod(f"web-{shapes.HASH}-a"),
        shapes.app_pod(f"web-{shapes.HASH}-b"),
    ]
    # web is one replica short: nothing of it may go, and the canary's pod is not web's.
    assert shapes.run_pass(world) == []


@pytest.mark.parametrize(
    "foreign",
    [
        pytest.param(canary_pod(), id="a canary Deployment's pod"),
        pytest.param(
            shapes.app_pod(
                "migrate-x7k2p",
                controller=scripted.owner("Job", "migrate", api_version="batch/v1"),
                pod_hash="",
                created=shapes.T0 - timedelta(days=3),
            ),
            id="a Job's pod",
        ),
        pytest.param(
            shapes.app_pod(
                "web-test-connection",
                controller=None,
                pod_hash="",
                created=shapes.T0 - timedelta(days=3),
            ),
            id="a helm test pod",
        ),
    ],
)
def test_a_pod_its_selector_matches_but_another_controller_owns_is_never_deleted(
    foreign: dict[str, Any],
) -> None:
    world = scripted.ScriptedWorld()
    world.add(WorkloadKind.DEPLOYMENT, shapes.web(replicas=2))
    world.pods = [
        foreign,
        shapes.app_pod(f"web-{shapes.HASH}-a"),
        shapes.app_pod(f"web-{shapes.HASH}-b"),
    ]
    deleted = shapes.run_pass(world)
    assert foreign["metadata"]["name"] not in deleted
    assert deleted == [f"web-{shapes.HASH}-a"]  # one of web's own, the oldest first


# --- 2. settled means what the Deployment controller says -----------------------------------


def three_pods_ready_for_5s(deployment: dict[str, Any]) -> scripted.ScriptedWorld:
    """A world of ``deployment`` (web) with three pods on the old digest, Ready for 5 s."""
    world = scripted.ScriptedWorld()
    world.add(WorkloadKind.DEPLOYMENT, deployment)
    ready_since = shapes.NOW - timedelta(seconds=5)
    world.pods = [shapes.app_pod(f"web-{shapes.HASH}-{c}", ready_since=ready_since) for c in "abc"]
    return world


@pytest.mark.parametrize(
    "deployment",
    [
        pytest.param(
            shapes.web(
                min_ready_seconds=600, status={"availableReplicas": 0, "unavailableReplicas": 3}
            ),
            id="minReadySeconds: Ready seconds ago, 0 available",
        ),
        pytest.param(shapes.web(paused=True), id="spec.paused"),
        pytest.param(
            shapes.web(generation=2, status={"observedGeneration": 1}),
            id="observedGeneration behind",
        ),
        pytest.param(shapes.web(status={"updatedReplicas": 2}), id="2 of 3 replicas updated"),
        pytest.param(shapes.web(status={"replicas": 4}), id="an old replica pending termination"),
        pytest.param(
            shapes.web(
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
        pytest.param(shapes.web(status={}), id="no status written yet"),
    ],
)
def test_a_deployment_its_controller_does_not_call_complete_loses_no_pod(
    deployment: dict[str, Any],
) -> None:
    world = three_pods_ready_for_5s(deployment)
    assert shapes.run_pass(world) == []


def test_min_ready_seconds_is_honoured_from_the_pods_even_when_the_status_lags() -> None:
    # The status still says all 3 available (written before the last replacement), but
    # one pod became Ready 5 s ago under minReadySeconds 30: it is not available yet.
    world = scripted.ScriptedWorld()
    world.add(WorkloadKind.DEPLOYMENT, shapes.web(min_ready_seconds=30))
    world.pods = [
        shapes.app_pod(f"web-{shapes.HASH}-a"),
        shapes.app_pod(f"web-{shapes.HASH}-b"),
        shapes.app_pod(
            f"web-{shapes.HASH}-c",
            digest=shapes.NEW,
            created=shapes.NOW - timedelta(seconds=20),
            ready_since=shapes.NOW - timedelta(seconds=5),
        ),
    ]
    assert shapes.run_pass(world) == []


# --- 5. a bare sha256: imageID is a child of the target index before it is a config ---------


def test_a_bare_digest_that_is_a_child_of_the_target_index_is_current() -> None:
    child = Digest("sha256:" + "d" * 64)
    registry = AnsweringRegistry({shapes.REF: shapes.NEW})
    registry.children[shapes.NEW] = frozenset({child})
    registry.content[shapes.NEW] = ImageContent(frozenset({Digest("sha256:" + "e" * 64)}))
    world = scripted.ScriptedWorld()
    world.add(WorkloadKind.DEPLOYMENT, shapes.web(replicas=2))
    world.pods = [shapes.app_pod(f"web-{shapes.HASH}-{c}") for c in "ab"]
    for pod in world.pods:
        pod["status"]["containerStatuses"][0]["imageID"] = str(child)
    assert shapes.run_pass(world, registry=registry) == []


# --- 6. native sidecars and init containers on a moved tag ----------------------------------


SIDECAR_IMAGE = shapes.IMAGE
APP_IMAGE = f"{shapes.HOST}/team/app@sha256:{'c' * 64}"  # pinned: only the sidecar can move


def pinned_web(replicas: int, *init_containers: dict[str, Any]) -> scripted.ScriptedWorld:
    """A world of the Deployment web alone: its app pinned (``APP_IMAGE``) beside
    ``init_containers``, native sidecars among them; no pods yet."""
    world = scripted.ScriptedWorld()
    world.add(
        WorkloadKind.DEPLOYMENT,
        scripted.deployment_doc(
            "web",
            replicas=replicas,
            containers=[scripted.container_doc("app", APP_IMAGE)],
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
    init = scripted.container_doc("proxy", SIDECAR_IMAGE, **extra)
    world = pinned_web(2, init)
    for suffix in "ab":
        pod = scripted.pod_doc(
            f"web-{shapes.HASH}-{suffix}",
            labels={"app": "web", "pod-template-hash": shapes.HASH},
            containers=[scripted.container_doc("app", APP_IMAGE)],
            statuses=[scripted.status_doc("app", APP_IMAGE, APP_IMAGE)],
            init_containers=[init],
            init_statuses=[
                scripted.status_doc("proxy", SIDECAR_IMAGE, f"{shapes.HOST}/team/web@{shapes.OLD}")
            ],
            created=shapes.T0,
            controller=scripted.owner("ReplicaSet", f"web-{shapes.HASH}"),
        )
        world.pods.append(pod)
    assert shapes.run_pass(world) == [f"web-{shapes.HASH}-a"]


# --- what autoroll plan says about these shapes ---------------------------------------------


def plan_text(world: scripted.ScriptedWorld, registry: AnsweringRegistry | None = None) -> str:
    report = run_plan(
        cluster=world.cluster(),
        registry=registry or AnsweringRegistry({shapes.REF: shapes.NEW}),
        registries={shapes.HOST},
        now=shapes.NOW,
    )
    return render(report)


def test_plan_names_each_foreign_pod_once_with_its_controller() -> None:
    world = scripted.ScriptedWorld()
    world.add(WorkloadKind.DEPLOYMENT, shapes.web(replicas=2))
    job = scripted.owner("Job", "migrate", api_version="batch/v1")
    world.pods = [
        canary_pod(),
        shapes.app_pod("migrate-x7k2p", controller=job, pod_hash=""),
        shapes.app_pod("web-test-connection", controller=None, pod_hash=""),
        shapes.app_pod(f"web-{shapes.HASH}-a"),
        shapes.app_pod(f"web-{shapes.HASH}-b"),
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
    assert f"stale → would delete pod web-{shapes.HASH}-a" in text


@pytest.mark.parametrize(
    ("deployment", "clause"),
    [
        (shapes.web(paused=True), "not-settled: rollout-paused (spec.paused is true"),
        (shapes.web(status={"updatedReplicas": 2}), "not-settled: rollout-in-progress"),
        (
            shapes.web(min_ready_seconds=600, status={"availableReplicas": 0}),
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
    sidecar = scripted.container_doc("proxy", SIDECAR_IMAGE, restartPolicy="Always")
    init = scripted.container_doc("migrate", f"{shapes.HOST}/team/migrate:latest")
    world = pinned_web(1, init, sidecar)
    text = plan_text(
        world,
        AnsweringRegistry(
            {shapes.REF: shapes.NEW, TagRef(shapes.HOST, "team/migrate", "latest"): shapes.NEW}
        ),
    )
    rows = {line.split()[1] + " " + line.split()[2]: line for line in text.splitlines()[1:4]}
    assert "proxy (sidecar)" in rows and "migrate (init)" in rows, text
