"""Tenants in their lane (issue 30, ADR 019 and 023) on the real API and the real node.

The controller is the user's install (``helm install`` of the chart, its pod on the node,
``incluster.py``), so its identity holds exactly the RBAC the chart renders for the mode:

- namespaced mode (``tenancy.namespaced``, ``WATCH_NAMESPACES``) with Deployments only
  renders a Role and RoleBinding in the watched namespace and no ClusterRole at all; the roll
  scenario still replaces every stale pod, and the real authorizer refuses that identity
  anything cluster-wide;
- with the allow-list (``tenancy.namespaces``, ``ALLOWED_NAMESPACES``) a workload enrolled in
  another namespace, whose tag moves too, keeps every pod through whole passes (a pod watch
  from before it exists), while the allowed namespace's workload rolls (the control row).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from tests.e2e.controller import StartAutoroll
from tests.e2e.enrolled_app import (
    APP_NAME,
    POLL,
    SLACK,
    START_TIMEOUT,
    enrol,
    full_passes_after,
    make_app,
    registry_app,
)
from tests.e2e.helpers import core_api, create_namespace, rbac_api
from tests.e2e.incluster import RELEASE
from tests.e2e.node import Node
from tests.e2e.scenario import Recorder, deletions, metric, unsettled_deletions
from tests.support.registry import RegistryServer

pytestmark = pytest.mark.e2e

REPLICAS = 2
#: The chart's fullname for release "autoroll": the ServiceAccount the controller runs as.
ACCOUNT = RELEASE


def pod_recorder(kube: Any, namespace: str) -> Recorder:
    """A watch on the app's pods in ``namespace``, from before any exists."""
    return Recorder(core_api(kube).list_namespaced_pod, namespace, label_selector=f"app={APP_NAME}")


def can(kube: Any, namespace: str, verb: str, resource: str, where: str | None) -> bool:
    """Whether the real authorizer lets the controller's ServiceAccount ``verb`` ``resource``
    in namespace ``where`` (``None``: across all namespaces)."""
    from kubernetes import client

    attributes: dict[str, str] = {"verb": verb, "resource": resource, "group": ""}
    if resource in ("deployments", "statefulsets", "daemonsets"):
        attributes["group"] = "apps"
    if where is not None:
        attributes["namespace"] = where
    api: Any = client.AuthorizationV1Api(kube)  # plain dicts, as elsewhere (helpers.core_api)
    review = api.create_subject_access_review(
        {
            "spec": {
                "user": f"system:serviceaccount:{namespace}:{ACCOUNT}",
                "groups": ["system:serviceaccounts", f"system:serviceaccounts:{namespace}"],
                "resourceAttributes": attributes,
            }
        }
    )
    return bool(review.status.allowed)


def cluster_bindings_of(kube: Any, namespace: str) -> list[str]:
    """The ClusterRoleBindings that name the controller's ServiceAccount."""
    found = []
    for binding in rbac_api(kube).list_cluster_role_binding().items:
        for subject in binding.subjects or []:
            if (subject.kind, subject.name, subject.namespace) == (
                "ServiceAccount",
                ACCOUNT,
                namespace,
            ):
                found.append(binding.metadata.name)
    return found


@pytest.fixture
def other_namespace(kube: Any, namespace: str) -> Iterator[str]:
    """A second tenant's namespace, outside the allow-list."""
    core = core_api(kube)
    name = f"tenant-{uuid.uuid4().hex[:8]}"
    create_namespace(kube, name)
    yield name
    core.delete_namespace(name, _preload_content=False)


def test_namespaced_mode_rolls_every_pod_holding_only_the_rendered_roles(
    kube: Any,
    namespace: str,
    docker_registry: RegistryServer,
    node: Node,
    start_autoroll: StartAutoroll,
) -> None:
    app = make_app(kube, namespace, docker_registry, node)
    with pod_recorder(kube, namespace) as pods:
        old = app.push()
        autoroll = enrol(
            app,
            start_autoroll,
            old,
            replicas=REPLICAS,
            WATCH_NAMESPACES=namespace,
            WORKLOAD_KINDS="deployment",
        )
        # The identity: no ClusterRole bound, the namespace's Role only (the real authorizer).
        assert cluster_bindings_of(kube, namespace) == []
        assert not can(kube, namespace, "list", "pods", None)
        assert not can(kube, namespace, "list", "deployments", None)
        assert not can(kube, namespace, "delete", "pods", "kube-system")
        assert can(kube, namespace, "list", "pods", namespace)
        assert can(kube, namespace, "watch", "deployments", namespace)
        assert can(kube, namespace, "delete", "pods", namespace)

        new = app.push()
        app.wait_rolled(new, replicas=REPLICAS, timeout=REPLICAS * (POLL + 2 + 2 * SLACK) + POLL)
        full_passes_after(autoroll, 1)  # nothing else happens once rolled
    assert not pods.errors, pods.errors
    history = pods.pods()
    assert [d.digest for d in deletions(history)] == [old] * REPLICAS
    assert unsettled_deletions(history, replicas=REPLICAS) == []
    assert metric(autoroll, "autoroll_pod_deletions_total", {"mode": "real"}) == REPLICAS
    # Not one request refused for want of a right: the Roles are enough.
    assert autoroll.lines("[Ff]orbidden") == []


def test_a_tenant_outside_the_allow_list_keeps_every_pod_while_an_allowed_one_rolls(  # noqa: PLR0917 - pytest passes fixtures by name
    kube: Any,
    namespace: str,
    other_namespace: str,
    docker_registry: RegistryServer,
    node: Node,
    start_autoroll: StartAutoroll,
) -> None:
    allowed = make_app(kube, namespace, docker_registry, node)
    # Enrolled with the very label the controller selects (test=<namespace>), elsewhere.
    outside = registry_app(kube, other_namespace, docker_registry, test=namespace)
    with (
        pod_recorder(kube, namespace) as allowed_pods,
        pod_recorder(kube, other_namespace) as outside_pods,
    ):
        old_outside = outside.push()
        outside.deploy(replicas=REPLICAS)
        old = allowed.push()
        autoroll = enrol(
            allowed, start_autoroll, old, replicas=REPLICAS, ALLOWED_NAMESPACES=namespace
        )
        outside.wait_rolled(old_outside, replicas=REPLICAS, timeout=START_TIMEOUT)
        said = autoroll.lines(f"namespace {other_namespace} is not among ALLOWED_NAMESPACES")
        assert said, "the ignored enrolment was not said"

        new_outside = outside.push()
        new = allowed.push()
        allowed.wait_rolled(
            new, replicas=REPLICAS, timeout=REPLICAS * (POLL + 2 + 2 * SLACK) + POLL
        )
        # Whole passes after the control row rolled, the outside tag moved all along.
        full_passes_after(autoroll, 2)
        assert new_outside != old_outside
    assert not allowed_pods.errors and not outside_pods.errors
    assert deletions(outside_pods.pods()) == [], "a pod outside the allow-list was deleted"
    assert {p.digest for p in outside.live_pods()} == {old_outside}
    assert [d.digest for d in deletions(allowed_pods.pods())] == [old] * REPLICAS
    # Said once per workload (and reader: the watched cache, the lister), not once per pass.
    final = autoroll.lines(f"namespace {other_namespace} is not among ALLOWED_NAMESPACES")
    assert len(final) <= 2, final
