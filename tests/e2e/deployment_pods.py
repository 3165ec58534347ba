"""What the cluster-shape tests share: the app's own pods told apart as the Deployment
controller names them (foreign pods under the same labels left out), its enrolled Deployment,
autoroll's own account of its deletions, passes asked for by webhook, and a watch of every pod
in the test's namespace (the ``pods_of`` fixture), and the opening most shapes share
(``rolled_out``).

They stand apart from the test modules because ``test_cluster_shapes.py``,
``test_cluster_shapes_held.py`` and ``test_public_charts.py`` all use them.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

import pytest

from tests.e2e.controller import Autoroll, StartAutoroll
from tests.e2e.enrolled_app import POLL, SLACK, START_TIMEOUT, at_least
from tests.e2e.helpers import apps_api, core_api, deployment
from tests.e2e.images import APP_PORT
from tests.e2e.scenario import ENROLL_LABEL, TEST_LABEL, App, Recorder, decision_lines, nudging
from tests.support.wait import eventually

ROLL_TIMEOUT = 3 * (POLL + 2 * SLACK) + 60


# --- the app's own pods, told apart as the Deployment controller names them -----------------


def raw_pods(kube: Any, namespace: str, selector: str = "app=web") -> list[dict[str, Any]]:
    response = core_api(kube).list_namespaced_pod(
        namespace, label_selector=selector, _preload_content=False
    )
    items: list[dict[str, Any]] = json.loads(response.data)["items"]
    return items


def controlled_by(raw: Mapping[str, Any], deployment: str) -> bool:
    """Is this pod one of ``deployment``'s (its controller the ReplicaSet of its hash)?"""
    meta = raw["metadata"]
    owner: Mapping[str, Any] = next(
        (o for o in meta.get("ownerReferences") or () if o.get("controller")), {}
    )
    wanted = f"{deployment}-{(meta.get('labels') or {}).get('pod-template-hash', '')}"
    return owner.get("kind") == "ReplicaSet" and owner.get("name") == wanted


def image_of(raw: Mapping[str, Any], name: str = "app") -> str:
    """The digest container ``name`` runs (init containers included), "" while pulling."""
    status = raw.get("status") or {}
    for entry in [
        *(status.get("initContainerStatuses") or ()),
        *(status.get("containerStatuses") or ()),
    ]:
        if entry.get("name") == name:
            return str(entry.get("imageID") or "").rpartition("@")[2]
    return ""


def is_ready(raw: Mapping[str, Any]) -> bool:
    conditions = (raw.get("status") or {}).get("conditions") or ()
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def wait_own(
    app: App, digest: str, *, replicas: int, timeout: float, container_name: str = "app"
) -> list[dict[str, Any]]:
    """Exactly ``replicas`` pods of ``app``'s own Deployment, Ready, not terminating, on
    ``digest``; foreign pods under the same label are left out."""

    def rolled() -> list[dict[str, Any]]:
        everyone = raw_pods(app.kube, app.namespace, "")
        own = [p for p in everyone if controlled_by(p, app.name)]
        summary = [
            (p["metadata"]["name"], image_of(p, container_name)[:19], is_ready(p)) for p in own
        ]
        assert len(own) == replicas, summary
        for p in own:
            assert is_ready(p) and not p["metadata"].get("deletionTimestamp"), summary
            assert image_of(p, container_name) == digest, summary
        return own

    return eventually(rolled, timeout=timeout, what=f"{replicas} of {app.name} on {digest[:19]}")


def enrolled_deployment(app: App, replicas: int, **edits: Any) -> dict[str, Any]:
    """``app``'s enrolled Deployment manifest, as ``App.deploy`` makes it, with ``spec`` keys
    set from ``edits`` (``minReadySeconds``, ``paused``...)."""
    manifest = deployment(
        app.name,
        app.image,
        replicas=replicas,
        labels={ENROLL_LABEL: "true", TEST_LABEL: app.test},
        http_port=APP_PORT,
        ready_after=app.ready_after,
    )
    manifest["spec"].update(edits)
    return manifest


def create(app: App, manifest: dict[str, Any]) -> None:
    apps_api(app.kube).create_namespaced_deployment(app.namespace, manifest)


def rolled_out(
    app: App, start_autoroll: StartAutoroll, replicas: int, **edits: Any
) -> tuple[Autoroll, str]:
    """The opening most shapes share: the first build pushed, ``app``'s enrolled Deployment of
    ``replicas`` created (``edits`` as for ``enrolled_deployment``), autoroll started, and
    every replica Ready on that build. Returns autoroll and the build's digest."""
    old = app.push()
    create(app, enrolled_deployment(app, replicas, **edits))
    autoroll = start_autoroll()
    wait_own(app, old, replicas=replicas, timeout=START_TIMEOUT)
    return autoroll, old


def autoroll_deleted(autoroll: Autoroll, app: App) -> list[str]:
    """The pods autoroll says it deleted of ``app`` (its own account, in order)."""
    where = f"{app.namespace}/"
    lines = autoroll.lines(rf"deleted stale pod {app.namespace}/\S+ of deployment/{app.name} ")
    return [line.split(f"deleted stale pod {where}", 1)[1].split()[0] for line in lines]


def passes_about(autoroll: Autoroll, app: App, count: int, *, pattern: str = "") -> None:
    """Ask for passes (signed webhooks) until ``count`` more decided about ``app``."""
    start = len(autoroll.output)
    with nudging(autoroll):
        at_least(
            count,
            lambda: decision_lines(autoroll, app, pattern, since=start),
            timeout=count * (POLL + SLACK) + 30,
            what=f"{count} passes deciding about {app.name}",
        )


@pytest.fixture
def pods_of(kube: Any, namespace: str) -> Iterator[Recorder]:
    """A watch of every pod in the test's namespace, from before anything is created."""
    with Recorder(core_api(kube).list_namespaced_pod, namespace) as recorder:
        yield recorder
