"""Smoke tests of the e2e harness itself: the real control plane and the simulated kubelet.

Scenario tests build on these promises, so each is pinned here: workloads really run (ReplicaSets,
replacement pods, completed Jobs), RBAC really denies, and every kubelet knob shows the pod state
a real node would. The control plane's own version and failure path are
``test_controlplane_harness.py``.
"""

from __future__ import annotations

import math
import time
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


@pytest.fixture
def image(namespace: str) -> str:
    """An image no other test uses: pods of earlier tests, still being cleaned up, never
    resolve it against this test's registry."""
    return f"{HOST}/{namespace}/app:latest"


def repo_digest(image: str, digest: str) -> str:
    """The imageID containerd reports for ``image`` pulled at ``digest``."""
    return f"{image.rpartition(':')[0]}@{digest}"


def read_pod(kube: Any, namespace: str, name: str) -> Any:
    return core_api(kube).read_namespaced_pod(name, namespace)


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


def test_deployment_gets_a_replicaset_and_three_ready_pods_with_image_ids(
    kube: Any,
    kubelet: SimulatedKubelet,
    registry: StaticResolver,
    namespace: str,
    image: str,
) -> None:
    registry.set(image, DIGEST_A)
    apps = apps_api(kube)
    apps.create_namespaced_deployment(namespace, deployment("web", image, replicas=3))

    ready = wait_ready_pods(kube, namespace, "web", 3)

    replicasets = apps.list_namespaced_replica_set(namespace).items
    assert len(replicasets) == 1
    assert replicasets[0].metadata.owner_references[0].name == "web"
    for p in ready:
        assert p.spec.node_name == kubelet.node_name
        assert p.status.phase == "Running"
        assert p.status.start_time is not None
        assert image_ids(p) == [repo_digest(image, DIGEST_A)]
        assert p.metadata.owner_references[0].name == replicasets[0].metadata.name
    eventually(
        lambda: _assert_equal(
            apps.read_namespaced_deployment("web", namespace).status.ready_replicas, 3
        ),
        what="Deployment status readyReplicas=3",
    )


def _assert_equal(actual: object, expected: object) -> None:
    assert actual == expected, f"{actual!r} != {expected!r}"


def test_a_deleted_pod_is_replaced_by_a_ready_one(
    kube: Any,
    kubelet: SimulatedKubelet,
    registry: StaticResolver,
    namespace: str,
    image: str,
) -> None:
    registry.set(image, DIGEST_A)
    apps_api(kube).create_namespaced_deployment(namespace, deployment("web", image, replicas=2))
    before = wait_ready_pods(kube, namespace, "web", 2)
    victim = before[0].metadata

    core_api(kube).delete_namespaced_pod(victim.name, namespace)  # default grace period

    def replaced() -> None:
        pods = pods_of(kube, namespace, "web")
        assert victim.uid not in {p.metadata.uid for p in pods}, "the deleted pod is still there"
        wait_ready_pods(kube, namespace, "web", 2)

    eventually(replaced, timeout=60, what="the deleted pod to be replaced")


def test_a_job_runs_to_completion(
    kube: Any,
    kubelet: SimulatedKubelet,
    registry: StaticResolver,
    namespace: str,
    image: str,
) -> None:
    registry.set(image, DIGEST_A)
    batch = batch_api(kube)
    batch.create_namespaced_job(namespace, job("once", image, completions=2))

    def complete() -> None:
        status = batch.read_namespaced_job_status("once", namespace).status
        kinds = {c.type for c in status.conditions or [] if c.status == "True"}
        assert status.succeeded == 2 and "Complete" in kinds, f"{status}"

    eventually(complete, timeout=60, what="the Job to complete")
    pods = core_api(kube).list_namespaced_pod(namespace, label_selector="job-name=once")
    assert {p.status.phase for p in pods.items} == {"Succeeded"}


# --- knobs ---------------------------------------------------------------------------


def create_pod(kube: Any, namespace: str, manifest: dict[str, Any]) -> str:
    core_api(kube).create_namespaced_pod(namespace, manifest)
    return str(manifest["metadata"]["name"])


def test_crash_looping_image_never_becomes_ready_and_restarts(
    kube: Any,
    kubelet: SimulatedKubelet,
    registry: StaticResolver,
    namespace: str,
    image: str,
) -> None:
    registry.set(image, DIGEST_B)
    kubelet.behave(DIGEST_B, Behaviour(crash_loop=True))  # keyed by the digest the tag points at
    name = create_pod(kube, namespace, pod("crash", image))

    def restarted_twice() -> Any:
        p = read_pod(kube, namespace, name)
        status = p.status.container_statuses[0] if p.status.container_statuses else None
        assert status and status.restart_count >= 2, f"restarts: {status and status.restart_count}"
        return p

    p = eventually(restarted_twice, timeout=30, what="two restarts")
    status = p.status.container_statuses[0]
    assert not is_ready(p)
    assert status.state.waiting.reason == "CrashLoopBackOff"
    assert status.last_state.terminated.exit_code == 1
    assert image_ids(p) == [repo_digest(image, DIGEST_B)]


def test_slow_readiness_keeps_a_running_pod_unready_for_the_given_time(
    kube: Any,
    kubelet: SimulatedKubelet,
    registry: StaticResolver,
    namespace: str,
    image: str,
) -> None:
    registry.set(image, DIGEST_A)
    slow = Behaviour(ready_after=3.0).annotation()
    name = create_pod(kube, namespace, pod("slow", image, annotations={BEHAVIOUR: slow}))

    def running_unready() -> None:
        p = read_pod(kube, namespace, name)
        assert p.status.phase == "Running" and image_ids(p) == [repo_digest(image, DIGEST_A)]
        assert not is_ready(p)

    eventually(running_unready, timeout=30, interval=0.1, what="running but unready")
    p = eventually(lambda: _ready(kube, namespace, name), timeout=30, what="ready")
    started = p.status.container_statuses[0].state.running.started_at
    ready_since = next(c for c in p.status.conditions if c.type == "Ready").last_transition_time
    assert (ready_since - started).total_seconds() >= 2  # 3 s, to whole-second timestamps


def _ready(kube: Any, namespace: str, name: str) -> Any:
    p = read_pod(kube, namespace, name)
    assert is_ready(p), "not ready"
    return p


def test_still_pulling_pod_has_no_image_id(
    kube: Any,
    kubelet: SimulatedKubelet,
    registry: StaticResolver,
    namespace: str,
    image: str,
) -> None:
    registry.set(image, DIGEST_A)
    kubelet.behave(image, Behaviour(pull_seconds=math.inf))
    name = create_pod(kube, namespace, pod("pulling", image))

    def creating() -> Any:
        p = read_pod(kube, namespace, name)
        statuses = p.status.container_statuses
        assert statuses and statuses[0].state.waiting.reason == "ContainerCreating", f"{statuses}"
        return p

    p = eventually(creating, timeout=30, what="ContainerCreating")
    assert p.status.phase == "Pending"
    assert image_ids(p) == [""]
    assert not is_ready(p)
    assert registry.calls == [], "a pod still pulling has not resolved its image yet"


def test_failed_pull_waits_in_err_image_pull_and_recovers(
    kube: Any,
    kubelet: SimulatedKubelet,
    registry: StaticResolver,
    namespace: str,
    image: str,
) -> None:
    registry.set(image, None)  # the registry does not answer
    name = create_pod(kube, namespace, pod("offline", image))

    def err_image_pull() -> None:
        statuses = read_pod(kube, namespace, name).status.container_statuses
        assert statuses and statuses[0].state.waiting.reason == "ErrImagePull", f"{statuses}"

    eventually(err_image_pull, timeout=30, what="ErrImagePull")
    registry.set(image, DIGEST_A)
    p = eventually(lambda: _ready(kube, namespace, name), timeout=30, what="ready after recovery")
    assert image_ids(p) == [repo_digest(image, DIGEST_A)]


def test_child_digest_runtime_reports_the_platform_manifest(
    kube: Any,
    kubelet: SimulatedKubelet,
    registry: StaticResolver,
    namespace: str,
    image: str,
) -> None:
    registry.set(image, DIGEST_A)  # the index digest
    kubelet.use_resolver(registry, StaticResolver({image: CHILD}))
    kubelet.behave(image, Behaviour(report_child=True))
    name = create_pod(kube, namespace, pod("crio", image))
    p = eventually(lambda: _ready(kube, namespace, name), timeout=30, what="ready")
    assert image_ids(p) == [repo_digest(image, CHILD)]


def test_stale_runtime_keeps_reporting_the_first_digest(
    kube: Any,
    kubelet: SimulatedKubelet,
    registry: StaticResolver,
    namespace: str,
    image: str,
) -> None:
    registry.set(image, DIGEST_A)
    first = create_pod(kube, namespace, pod("first", image))
    eventually(lambda: _ready(kube, namespace, first), timeout=30, what="first ready")

    registry.set(image, DIGEST_B)  # the tag moves
    kubelet.behave(image, Behaviour(keep_old_digest=True))
    stale = create_pod(kube, namespace, pod("stale", image))
    p = eventually(lambda: _ready(kube, namespace, stale), timeout=30, what="stale ready")
    assert image_ids(p) == [repo_digest(image, DIGEST_A)]
    assert registry.calls.count(image) == 2, "it did pull (resolve) again"

    kubelet.behave(image, Behaviour())
    honest = create_pod(kube, namespace, pod("honest", image))
    p = eventually(lambda: _ready(kube, namespace, honest), timeout=30, what="honest ready")
    assert image_ids(p) == [repo_digest(image, DIGEST_B)]


def test_if_not_present_reuses_the_node_image_without_pulling(
    kube: Any,
    kubelet: SimulatedKubelet,
    registry: StaticResolver,
    namespace: str,
    image: str,
) -> None:
    registry.set(image, DIGEST_A)
    first = create_pod(kube, namespace, pod("first", image))
    eventually(lambda: _ready(kube, namespace, first), timeout=30, what="first ready")
    registry.set(image, DIGEST_B)

    cached = create_pod(kube, namespace, pod("cached", image, pull_policy="IfNotPresent"))
    p = eventually(lambda: _ready(kube, namespace, cached), timeout=30, what="cached ready")
    assert image_ids(p) == [repo_digest(image, DIGEST_A)]
    assert registry.calls.count(image) == 1


def test_slow_termination_keeps_a_deleted_pod_terminating(
    kube: Any,
    kubelet: SimulatedKubelet,
    registry: StaticResolver,
    namespace: str,
    image: str,
) -> None:
    registry.set(image, DIGEST_A)
    kubelet.behave(image, Behaviour(terminate_seconds=2.0))
    name = create_pod(kube, namespace, pod("lingering", image))
    eventually(lambda: _ready(kube, namespace, name), timeout=30, what="ready")
    core_api(kube).delete_namespaced_pod(name, namespace)
    deleted = time.monotonic()

    p = read_pod(kube, namespace, name)
    assert p.metadata.deletion_timestamp is not None

    def gone() -> None:
        try:
            read_pod(kube, namespace, name)
        except ApiException as exc:
            assert exc.status == 404, exc
            return
        raise AssertionError("still there")

    eventually(gone, timeout=30, what="the pod to be finalized")
    assert time.monotonic() - deleted >= 1.5, "it was finalized before terminate_seconds"
