"""Cluster shapes that hold a roll (issue 23), on the real node and control plane: (g) a pause
annotation set while a pass runs (between its snapshot and its DELETE), (i) ``spec.paused:
true``, (j) eviction mode under a PodDisruptionBudget of ``maxUnavailable: 0``.

Split from ``test_cluster_shapes.py``, whose docstring tells how the shapes are run; the
helpers both use are in ``deployment_pods.py``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tests.e2e.controller import StartAutoroll
from tests.e2e.deployment_pods import (
    ROLL_TIMEOUT,
    autoroll_deleted,
    create,
    enrolled_deployment,
    passes_about,
    pods_of,
    rolled_out,
    wait_own,
)
from tests.e2e.enrolled_app import POLL, SLACK, START_TIMEOUT, app, at_least, pass_done_now
from tests.e2e.helpers import apps_api
from tests.e2e.incluster import Credentials
from tests.e2e.node import Node
from tests.e2e.scenario import App, Recorder, deletions, nudging
from tests.support.fault_proxy import FaultProxy, ProxyFault
from tests.support.registry import RegistryServer
from tests.support.wait import eventually

__all__ = ["app", "pods_of"]  # fixtures, shared with test_cluster_shapes

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600)]


# --- (g) a pause annotation set while a pass runs -------------------------------------------


def test_a_pause_set_between_a_passs_snapshot_and_its_delete_is_honoured(
    *,
    app: App,
    kube: Any,
    namespace: str,
    docker_registry: RegistryServer,
    node: Node,
    start_autoroll: StartAutoroll,
    pods_of: Recorder,
) -> None:
    """The registry answers through a proxy that holds one HEAD for 4 s: the pass has taken
    its snapshot (unpaused) and waits for the registry, and meanwhile the pause is set. Only
    the fresh read of the Deployment right before the DELETE can see it."""
    with FaultProxy(docker_registry) as proxy:
        node.trust_registry(proxy.host, docker_registry.authorization)
        app.image_host = proxy.host  # the workload's image names the proxy
        old = app.push()
        create(app, enrolled_deployment(app, 2))
        access = Credentials(proxy.host, docker_registry.user, docker_registry.password)
        autoroll = start_autoroll(registry=access)
        wait_own(app, old, replicas=2, timeout=START_TIMEOUT)
        pass_done_now(autoroll, app)
        new = app.push()
        seen = proxy.count()
        proxy.fault = ProxyFault("delay", seconds=4.0, method="HEAD", path="/manifests/latest")
        assert autoroll.webhook() == 202

        def held_head() -> None:
            assert any(
                s.method == "HEAD" and "/manifests/latest" in s.path for s in proxy.seen[seen:]
            ), "the pass has not asked the registry yet"

        eventually(held_head, timeout=POLL + SLACK + 10, what="the pass's HEAD at the proxy")
        apps_api(kube).patch_namespaced_deployment(
            "web", namespace, {"metadata": {"annotations": {"autoroll.aethnet.se/paused": "true"}}}
        )
        proxy.fault = None
        passes_about(autoroll, app, 3)
        assert deletions(pods_of.pods()) == []
        assert autoroll_deleted(autoroll, app) == []
        # The first hold is the fresh read's: the pass's own plan had let the deletion go.
        held = autoroll.lines(
            rf"{namespace}/deployment/web: not deleting stale pod .* held \(paused\)"
        )
        assert held, "the fresh read's hold was not logged"
        assert new != old


# --- (i) spec.paused: true ------------------------------------------------------------------


def test_a_paused_deployment_is_not_rolled_until_it_is_resumed(
    *, app: App, kube: Any, namespace: str, start_autoroll: StartAutoroll, pods_of: Recorder
) -> None:
    autoroll, _ = rolled_out(app, start_autoroll, 2)
    apps_api(kube).patch_namespaced_deployment("web", namespace, {"spec": {"paused": True}})
    new = app.push()
    passes_about(autoroll, app, 3, pattern="rollout-paused")
    assert deletions(pods_of.pods()) == []
    apps_api(kube).patch_namespaced_deployment("web", namespace, {"spec": {"paused": False}})
    wait_own(app, new, replicas=2, timeout=ROLL_TIMEOUT)


# --- (j) eviction mode under a PodDisruptionBudget of maxUnavailable: 0 -----------------------


def test_evictions_under_a_budget_that_allows_none_delete_nothing(
    *, app: App, kube: Any, namespace: str, start_autoroll: StartAutoroll, pods_of: Recorder
) -> None:
    from kubernetes import client

    old = app.push()
    create(app, enrolled_deployment(app, 2))
    budget = {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": "web"},
        "spec": {"maxUnavailable": 0, "selector": {"matchLabels": {"app": "web"}}},
    }
    policy: Callable[..., Any] = client.PolicyV1Api(kube).create_namespaced_pod_disruption_budget
    policy(namespace, budget)
    autoroll = start_autoroll(ROLLOUT_METHOD="evict")
    wait_own(app, old, replicas=2, timeout=START_TIMEOUT)
    app.push()
    start = len(autoroll.output)
    with nudging(autoroll):
        at_least(
            3,
            lambda: autoroll.lines(r"refused \(a PodDisruptionBudget", since=start),
            timeout=4 * (POLL + SLACK) + 30,
            what="three evictions refused by the budget",
        )
    assert deletions(pods_of.pods()) == []
