"""Smoke tests of the e2e harness itself: the real control plane and the simulated kubelet.

Scenario tests build on these promises, so each is pinned here: workloads really run (ReplicaSets,
replacement pods, completed Jobs), RBAC really denies, and every kubelet knob shows the pod state
a real node would. The control plane's own version and failure path are
``test_controlplane_harness.py``.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from tests.e2e.controlplane import ControlPlane
from tests.e2e.helpers import (
    apps_api,
    batch_api,
    core_api,
    deployment,
    image_ids,
    is_ready,
    job,
    pod,
    rbac_api,
)
from tests.e2e.kubelet import SimulatedKubelet
from tests.e2e.kubelet_behaviour import BEHAVIOUR_ANNOTATION as BEHAVIOUR
from tests.e2e.kubelet_behaviour import Behaviour
from tests.e2e.kubelet_images import StaticResolver
from tests.support.wait import eventually

pytestmark = pytest.mark.e2e

HOST = "127.0.0.1:5999"
DIGEST_A = "sha256:" + "a" * 64
DIGEST_B = "sha256:" + "b" * 64
CHILD = "sha256:" + "c" * 64


@dataclass(frozen=True)
class SimNode:
    """What each test of the simulated node works with: the API client, the session's
    simulated kubelet, the registry it resolves tags against, the test's namespace, and an
    image no other test uses (pods of earlier tests, still being cleaned up, never resolve it
    against this test's registry)."""

    kube: Any
    kubelet: SimulatedKubelet
    registry: StaticResolver
    namespace: str
    image: str

    def tag_at(self, digest: str | None) -> None:
        """Point the image's tag at ``digest`` (``None``: the registry does not answer)."""
        self.registry.set(self.image, digest)

    def repo_digest(self, digest: str) -> str:
        """The imageID containerd reports for the image pulled at ``digest``."""
        return f"{self.image.rpartition(':')[0]}@{digest}"

    def create_pod(self, manifest: dict[str, Any]) -> str:
        core_api(self.kube).create_namespaced_pod(self.namespace, manifest)
        return str(manifest["metadata"]["name"])

    def read_pod(self, name: str) -> Any:
        return core_api(self.kube).read_namespaced_pod(name, self.namespace)

    def ready(self, name: str, what: str = "ready") -> Any:
        """Pod ``name`` once it is Ready (30 s at most)."""

        def probe() -> Any:
            p = self.read_pod(name)
            assert is_ready(p), "not ready"
            return p

        return eventually(probe, timeout=30, what=what)


@pytest.fixture
def sim(kube: Any, kubelet: SimulatedKubelet, registry: StaticResolver, namespace: str) -> SimNode:
    return SimNode(kube, kubelet, registry, namespace, f"{HOST}/{namespace}/app:latest")


def pods_of(kube: Any, namespace: str, app: str) -> list[Any]:
    items = core_api(kube).list_namespaced_pod(namespace, label_selector=f"app={app}").items
    return list(items)


def wait_ready_pods(kube: Any, namespace: str, app: str, count: int) -> list[Any]:
    def probe() -> list[Any]:
        pods = [p for p in pods_of(kube, namespace, app) if not p.metadata.deletion_timestamp]
        ready = [p for p in pods if is_ready(p)]
        assert len(ready) == count == len(pods), (
            f"{len(ready)} ready of {len(pods)} live pods, want {count}"
        )
        return ready

    return eventually(probe, timeout=60, what=f"{count} ready pods of {app}")


# --- the control plane --------------------------------------------------------------


def test_rbac_denies_a_service_account_without_roles(
    control_plane: ControlPlane, kube: Any, namespace: str
) -> None:
    core = core_api(kube)
    core.create_namespaced_service_account(namespace, {"metadata": {"name": "nobody"}})
    token = core.create_namespaced_service_account_token(
        "nobody", namespace, {"spec": {"expirationSeconds": 600}}
    ).status.token
    config = client.Configuration()
    config.host = control_plane.server
    config.ssl_ca_cert = str(control_plane.ca_file)
    config.api_key = {"authorization": f"Bearer {token}"}
    as_nobody = core_api(client.ApiClient(config))

    with pytest.raises(ApiException) as denied:
        as_nobody.list_namespaced_pod(namespace)
    assert denied.value.status == 403

    rbac_api(kube).create_namespaced_role_binding(
        namespace,
        {
            "metadata": {"name": "nobody-view"},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": "view",
            },
            "subjects": [{"kind": "ServiceAccount", "name": "nobody", "namespace": namespace}],
        },
    )

    # The aggregated `view` role is filled in by kube-controller-manager: allowed once it is.
    def allowed() -> None:
        try:
            as_nobody.list_namespaced_pod(namespace)
        except ApiException as exc:
            raise AssertionError(f"still {exc.status}") from exc

    eventually(allowed, timeout=20, what="the view binding to take effect")


# --- workloads on the simulated node -----------------------------------------------


def test_deployment_gets_a_replicaset_and_three_ready_pods_with_image_ids(sim: SimNode) -> None:
    sim.tag_at(DIGEST_A)
    apps = apps_api(sim.kube)
    apps.create_namespaced_deployment(sim.namespace, deployment("web", sim.image, replicas=3))

    ready = wait_ready_pods(sim.kube, sim.namespace, "web", 3)

    replicasets = apps.list_namespaced_replica_set(sim.namespace).items
    assert len(replicasets) == 1
    assert replicasets[0].metadata.owner_references[0].name == "web"
    for p in ready:
        assert p.spec.node_name == sim.kubelet.node_name
        assert p.status.phase == "Running"
        assert p.status.start_time is not None
        assert image_ids(p) == [sim.repo_digest(DIGEST_A)]
        assert p.metadata.owner_references[0].name == replicasets[0].metadata.name
    eventually(
        lambda: _assert_equal(
            apps.read_namespaced_deployment("web", sim.namespace).status.ready_replicas, 3
        ),
        what="Deployment status readyReplicas=3",
    )


def _assert_equal(actual: object, expected: object) -> None:
    assert actual == expected, f"{actual!r} != {expected!r}"


def test_a_deleted_pod_is_replaced_by_a_ready_one(sim: SimNode) -> None:
    sim.tag_at(DIGEST_A)
    apps_api(sim.kube).create_namespaced_deployment(
        sim.namespace, deployment("web", sim.image, replicas=2)
    )
    before = wait_ready_pods(sim.kube, sim.namespace, "web", 2)
    victim = before[0].metadata

    core_api(sim.kube).delete_namespaced_pod(victim.name, sim.namespace)  # default grace period

    def replaced() -> None:
        pods = pods_of(sim.kube, sim.namespace, "web")
        assert victim.uid not in {p.metadata.uid for p in pods}, "the deleted pod is still there"
        wait_ready_pods(sim.kube, sim.namespace, "web", 2)

    eventually(replaced, timeout=60, what="the deleted pod to be replaced")


def test_a_job_runs_to_completion(sim: SimNode) -> None:
    sim.tag_at(DIGEST_A)
    batch = batch_api(sim.kube)
    batch.create_namespaced_job(sim.namespace, job("once", sim.image, completions=2))

    def complete() -> None:
        status = batch.read_namespaced_job_status("once", sim.namespace).status
        kinds = {c.type for c in status.conditions or [] if c.status == "True"}
        assert status.succeeded == 2 and "Complete" in kinds, f"{status}"

    eventually(complete, timeout=60, what="the Job to complete")
    pods = core_api(sim.kube).list_namespaced_pod(sim.namespace, label_selector="job-name=once")
    assert {p.status.phase for p in pods.items} == {"Succeeded"}


# --- knobs ---------------------------------------------------------------------------


def test_crash_looping_image_never_becomes_ready_and_restarts(sim: SimNode) -> None:
    sim.tag_at(DIGEST_B)
    sim.kubelet.behave(
        DIGEST_B, Behaviour(crash_loop=True)
    )  # keyed by the digest the tag points at
    name = sim.create_pod(pod("crash", sim.image))

    def restarted_twice() -> Any:
        p = sim.read_pod(name)
        status = p.status.container_statuses[0] if p.status.container_statuses else None
        assert status and status.restart_count >= 2, f"restarts: {status and status.restart_count}"
        return p

    p = eventually(restarted_twice, timeout=30, what="two restarts")
    status = p.status.container_statuses[0]
    assert not is_ready(p)
    assert status.state.waiting.reason == "CrashLoopBackOff"
    assert status.last_state.terminated.exit_code == 1
    assert image_ids(p) == [sim.repo_digest(DIGEST_B)]


def test_slow_readiness_keeps_a_running_pod_unready_for_the_given_time(sim: SimNode) -> None:
    sim.tag_at(DIGEST_A)
    slow = Behaviour(ready_after=3.0).annotation()
    name = sim.create_pod(pod("slow", sim.image, annotations={BEHAVIOUR: slow}))

    def running_unready() -> None:
        p = sim.read_pod(name)
        assert p.status.phase == "Running" and image_ids(p) == [sim.repo_digest(DIGEST_A)]
        assert not is_ready(p)

    eventually(running_unready, timeout=30, interval=0.1, what="running but unready")
    p = sim.ready(name)
    started = p.status.container_statuses[0].state.running.started_at
    ready_since = next(c for c in p.status.conditions if c.type == "Ready").last_transition_time
    assert (ready_since - started).total_seconds() >= 2  # 3 s, to whole-second timestamps


def test_still_pulling_pod_has_no_image_id(sim: SimNode) -> None:
    sim.tag_at(DIGEST_A)
    sim.kubelet.behave(sim.image, Behaviour(pull_seconds=math.inf))
    name = sim.create_pod(pod("pulling", sim.image))

    def creating() -> Any:
        p = sim.read_pod(name)
        statuses = p.status.container_statuses
        assert statuses and statuses[0].state.waiting.reason == "ContainerCreating", f"{statuses}"
        return p

    p = eventually(creating, timeout=30, what="ContainerCreating")
    assert p.status.phase == "Pending"
    assert image_ids(p) == [""]
    assert not is_ready(p)
    assert sim.registry.calls == [], "a pod still pulling has not resolved its image yet"


def test_failed_pull_waits_in_err_image_pull_and_recovers(sim: SimNode) -> None:
    sim.tag_at(None)  # the registry does not answer
    name = sim.create_pod(pod("offline", sim.image))

    def err_image_pull() -> None:
        statuses = sim.read_pod(name).status.container_statuses
        assert statuses and statuses[0].state.waiting.reason == "ErrImagePull", f"{statuses}"

    eventually(err_image_pull, timeout=30, what="ErrImagePull")
    sim.tag_at(DIGEST_A)
    p = sim.ready(name, "ready after recovery")
    assert image_ids(p) == [sim.repo_digest(DIGEST_A)]


def test_child_digest_runtime_reports_the_platform_manifest(sim: SimNode) -> None:
    sim.tag_at(DIGEST_A)  # the index digest
    sim.kubelet.use_resolver(sim.registry, StaticResolver({sim.image: CHILD}))
    sim.kubelet.behave(sim.image, Behaviour(report_child=True))
    name = sim.create_pod(pod("crio", sim.image))
    p = sim.ready(name)
    assert image_ids(p) == [sim.repo_digest(CHILD)]


def test_stale_runtime_keeps_reporting_the_first_digest(sim: SimNode) -> None:
    sim.tag_at(DIGEST_A)
    first = sim.create_pod(pod("first", sim.image))
    sim.ready(first, "first ready")

    sim.tag_at(DIGEST_B)  # the tag moves
    sim.kubelet.behave(sim.image, Behaviour(keep_old_digest=True))
    stale = sim.create_pod(pod("stale", sim.image))
    p = sim.ready(stale, "stale ready")
    assert image_ids(p) == [sim.repo_digest(DIGEST_A)]
    assert sim.registry.calls.count(sim.image) == 2, "it did pull (resolve) again"

    sim.kubelet.behave(sim.image, Behaviour())
    honest = sim.create_pod(pod("honest", sim.image))
    p = sim.ready(honest, "honest ready")
    assert image_ids(p) == [sim.repo_digest(DIGEST_B)]


def test_if_not_present_reuses_the_node_image_without_pulling(sim: SimNode) -> None:
    sim.tag_at(DIGEST_A)
    first = sim.create_pod(pod("first", sim.image))
    sim.ready(first, "first ready")
    sim.tag_at(DIGEST_B)

    cached = sim.create_pod(pod("cached", sim.image, pull_policy="IfNotPresent"))
    p = sim.ready(cached, "cached ready")
    assert image_ids(p) == [sim.repo_digest(DIGEST_A)]
    assert sim.registry.calls.count(sim.image) == 1


def test_slow_termination_keeps_a_deleted_pod_terminating(sim: SimNode) -> None:
    sim.tag_at(DIGEST_A)
    sim.kubelet.behave(sim.image, Behaviour(terminate_seconds=2.0))
    name = sim.create_pod(pod("lingering", sim.image))
    sim.ready(name)
    core_api(sim.kube).delete_namespaced_pod(name, sim.namespace)
    deleted = time.monotonic()

    p = sim.read_pod(name)
    assert p.metadata.deletion_timestamp is not None

    def gone() -> None:
        try:
            sim.read_pod(name)
        except ApiException as exc:
            assert exc.status == 404, exc
            return
        raise AssertionError("still there")

    eventually(gone, timeout=30, what="the pod to be finalized")
    assert time.monotonic() - deleted >= 1.5, "it was finalized before terminate_seconds"
