"""Aliased repositories on the real node: the same content under another repository name
(the same manifest, a platform child of an index, another manifest of the same config) never
causes a deletion, across kubelet and controller restarts.

Split from ``test_scenarios.py``; the app, its pods' watch and the waits are the same
(``enrolled_app.py``).
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.e2e.controller import Autoroll, StartAutoroll
from tests.e2e.enrolled_app import POLL, SLACK, START_TIMEOUT, app, at_least, enrol, pods
from tests.e2e.helpers import core_api
from tests.e2e.images import push_app, push_config
from tests.e2e.node import Node
from tests.e2e.scenario import App, Recorder, decision_lines, deletions
from tests.support.registry import ImagePusher
from tests.support.wait import eventually

__all__ = ["app", "pods"]  # fixtures, shared with test_scenarios

pytestmark = pytest.mark.e2e


# --- aliased repositories: the same content under another name ---------------------------
#
# containerd reports, for every container of an image, the alphabetically first reference it
# holds for that image's *config*. These push the same content to a repository that sorts
# before the app's ("aaa-…"), have an unrelated pod pull it there, restart the kubelet (so
# every container status is read again) and check that nothing is deleted.


def _pull_elsewhere(kube: Any, namespace: str, image: str, name: str = "elsewhere") -> None:
    """An unrelated pod that pulls ``image`` (so the node records that reference too)."""
    from tests.e2e.helpers import apps_api, deployment

    manifest = deployment(name, image, replicas=1, http_port=8080)
    apps_api(kube).create_namespaced_deployment(namespace, manifest)

    def running() -> None:
        listed = core_api(kube).list_namespaced_pod(namespace, label_selector=f"app={name}")
        assert any(
            (p.status.container_statuses or [None])[0] is not None
            and p.status.container_statuses[0].image_id
            for p in listed.items
        ), "not pulled yet"

    eventually(running, timeout=START_TIMEOUT, what=f"{image} pulled by an unrelated pod")


def _no_deletion_across_restarts(
    app: App,
    pods: Recorder,
    node: Node,
    autoroll: Autoroll,
    start_autoroll: StartAutoroll,
    *,
    restart_controller: bool,
) -> None:
    node.restart_kubelet()
    passes = len(decision_lines(autoroll, app))
    at_least(
        passes + 2,
        lambda: decision_lines(autoroll, app),
        timeout=2 * POLL + 2 * SLACK,
        what="two passes after the kubelet restart",
    )
    if restart_controller:
        # Every self-roll and leader failover is a restart: the loop-guard memory is gone.
        if autoroll.restart is not None:  # the chart's pod: delete it, the Deployment replaces it
            before = len(decision_lines(autoroll, app))
            autoroll.restart()
            again = autoroll
        else:
            assert autoroll.process is not None
            autoroll.process.terminate()
            autoroll.process.wait(20)
            again, before = start_autoroll(), 0
        at_least(
            before + 3,
            lambda: decision_lines(again, app),
            timeout=4 * POLL + 2 * SLACK,
            what="three passes of the restarted controller",
        )
    assert deletions(pods.pods()) == [], app.live_pods()


def test_the_same_digest_under_another_repository_causes_no_deletion(
    kube: Any, app: App, pods: Recorder, node: Node, start_autoroll: StartAutoroll
) -> None:
    image = app.push_image()
    alias = f"aaa-alias/{app.namespace}"
    _copy(app, image.digest, alias, "latest")  # the very same manifest: the same digest
    autoroll = enrol(app, start_autoroll, image.digest)
    _pull_elsewhere(kube, app.namespace, f"{app.pusher.server.host}/{alias}:latest")
    _no_deletion_across_restarts(app, pods, node, autoroll, start_autoroll, restart_controller=True)


def test_a_platform_child_digest_under_another_repository_causes_no_deletion(
    kube: Any, app: App, pods: Recorder, node: Node, start_autoroll: StartAutoroll
) -> None:
    index = app.push_index()
    alias = f"aaa-alias/{app.namespace}"
    amd64 = index.children[0]
    _copy(app, amd64, alias, "child")
    autoroll = enrol(app, start_autoroll, index.digest, replicas=2)
    _pull_elsewhere(kube, app.namespace, f"{app.pusher.server.host}/{alias}:child")
    _no_deletion_across_restarts(app, pods, node, autoroll, start_autoroll, restart_controller=True)


def test_another_manifest_digest_of_the_same_config_causes_no_deletion_even_after_a_restart(
    kube: Any, app: App, pods: Recorder, node: Node, start_autoroll: StartAutoroll
) -> None:
    from tests.e2e.images import app_config

    build = "aliased config"
    image = push_app(app.pusher, app.repository, build=build)
    app.pushes += 1
    alias = f"aaa-mirror/{app.namespace}"
    mirrored = push_config(app.pusher, alias, "latest", app_config(build), flavour="docker")
    assert mirrored.config == image.config and mirrored.digest != image.digest
    autoroll = enrol(app, start_autoroll, image.digest)
    _pull_elsewhere(kube, app.namespace, mirrored.reference)
    _no_deletion_across_restarts(app, pods, node, autoroll, start_autoroll, restart_controller=True)


def _copy(app: App, digest: str, repository: str, tag: str) -> None:
    """Copy manifest ``digest`` of the app's repository, blobs first, to ``repository:tag``."""
    import json

    import requests

    pusher = app.pusher
    assert isinstance(pusher, ImagePusher), "copies within docker-registry only"
    server = pusher.server
    base = f"{server.url}/v2"
    response = requests.get(
        f"{base}/{app.repository}/manifests/{digest}",
        headers={
            "Accept": "application/vnd.oci.image.manifest.v1+json,"
            "application/vnd.docker.distribution.manifest.v2+json"
        },
        auth=server.auth,
        timeout=10,
    )
    response.raise_for_status()
    manifest = json.loads(response.content)
    for blob in [manifest["config"], *manifest["layers"]]:
        data = requests.get(
            f"{base}/{app.repository}/blobs/{blob['digest']}",
            auth=server.auth,
            timeout=30,
        )
        data.raise_for_status()
        app.pusher.push_blob(repository, data.content)
    pushed = app.pusher.push_manifest(
        repository, tag, response.content, response.headers["Content-Type"]
    )
    assert pushed == digest
