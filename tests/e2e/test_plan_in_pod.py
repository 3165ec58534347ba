"""`kubectl exec deploy/autoroll -- autoroll plan`, as NOTES.txt suggests, on the real node
(issue 24): the plan runs inside the controller's container with the release's own settings.

The API server cannot reach this node's kubelet (``incluster.py``), so the exec is done the
way the kubelet's own exec ends: ``runc exec`` in the container, which runs the command with
the container's process spec (its environment, user and mounts: the Secret's token, the
ServiceAccount). The release is paused (``guardrails.paused``) and selects only this test's
workloads; a stale Deployment of the test is then planned but held, and a Deployment that
carries the enrolment label without the test's is not in the plan at all.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.e2e.controller import StartAutoroll
from tests.e2e.enrolled_app import START_TIMEOUT, make_app
from tests.e2e.helpers import apps_api, core_api, deployment
from tests.e2e.incluster import POD_SELECTOR
from tests.e2e.node import Node
from tests.e2e.scenario import ENROLL_LABEL, App
from tests.support.registry import RegistryServer
from tests.support.wait import eventually

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(900)]

#: Where containerd's CRI plugin keeps its runc state (runc's --root for namespace k8s.io).
RUNC_ROOT = "/run/containerd/runc/k8s.io"


@pytest.fixture
def app(kube: Any, namespace: str, docker_registry: RegistryServer, node: Node) -> App:
    return make_app(kube, namespace, docker_registry, node)


def exec_in_controller(kube: Any, node: Node, namespace: str, *argv: str) -> str:
    """``kubectl exec`` into the controller's container: ``runc exec`` on the node."""

    def container_id() -> str:
        listed = core_api(kube).list_namespaced_pod(
            namespace, label_selector=POD_SELECTOR, _preload_content=False
        )
        items = json.loads(listed.data)["items"]
        [pod] = [p for p in items if "deletionTimestamp" not in p["metadata"]]
        [status] = pod["status"]["containerStatuses"]
        assert status["ready"], "the controller is not Ready yet"
        return str(status["containerID"]).removeprefix("containerd://")

    cid = eventually(container_id, timeout=60, what="the controller's container")
    done = node.run("runc", "--root", RUNC_ROOT, "exec", cid, *argv, timeout=90)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_plan_inside_the_controller_pod_uses_the_releases_selector_and_guardrails(
    kube: Any, namespace: str, node: Node, app: App, start_autoroll: StartAutoroll
) -> None:
    old = app.push()
    app.deploy(replicas=1)
    # Enrolled for some other release (the label, not this test's): not this release's.
    other = deployment("other", app.image, replicas=0, labels={ENROLL_LABEL: "true"})
    apps_api(kube).create_namespaced_deployment(namespace, other)
    start_autoroll(ROLL_PAUSED="true")
    app.wait_rolled(old, replicas=1, timeout=START_TIMEOUT)
    app.push()

    plan = exec_in_controller(kube, node, namespace, "autoroll", "plan")
    rows = [line for line in plan.splitlines() if line.startswith(f"{namespace}/")]
    assert any(line.startswith(f"{namespace}/deployment/{app.name}") for line in rows), plan
    assert not any("/deployment/other" in line for line in rows), plan
    assert "held (paused)" in plan
    assert "PAUSED: rolling is paused cluster-wide" in plan
    assert len(app.live_pods()) == 1  # the plan deleted nothing, nor did the paused controller
