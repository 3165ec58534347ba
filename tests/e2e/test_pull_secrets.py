"""Issue 25 on the real node: two registries, the credentials Kubernetes already has, nothing else.

An app of two containers, ``app`` from a real Gitea (a private owner: a ``read:package``
token) and ``side`` from a real ``docker-registry`` (htpasswd), runs as the ServiceAccount
``puller`` whose ``imagePullSecrets`` name one ``kubernetes.io/dockerconfigjson`` Secret per
registry; the ServiceAccount admission plugin copies them into each pod, and the kubelet
hands them to containerd. A second Deployment, ``solo``, names its Gitea Secret in its own
pod template. The node has no credentials for either registry (``hosts.toml`` without an
``Authorization`` header), and the chart installs the controller with ``registries:``,
``pullSecrets: true`` for both and no Forgejo shorthand, so no token of its own: every
credential anyone uses comes from those Secrets.

1. A push to each registry rolls the app one pod at a time (and ``solo`` with Gitea's push).
2. The Gitea Secret deleted and the docker-registry Secret's password made wrong, a push to
   each: both images are unknown with a message that names the Secret, and nothing is
   deleted through several whole passes.
"""

from __future__ import annotations

import base64
import json
import secrets
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.controller import Autoroll, StartAutoroll
from tests.e2e.enrolled_app import at_least
from tests.e2e.gitea_pusher import SkopeoPusher
from tests.e2e.helpers import apps_api, container, core_api
from tests.e2e.images import APP_PORT, push_app, push_sidecar
from tests.e2e.node import Node
from tests.e2e.scenario import (
    ENROLL_LABEL,
    TEST_LABEL,
    Recorder,
    deletions,
    metric,
    nudging,
    unsettled_deletions,
)
from tests.support.gitea import GiteaServer
from tests.support.gitea_fixtures import gitea, skopeo
from tests.support.registry import ImagePusher, RegistryServer
from tests.support.wait import eventually

__all__ = ["gitea", "skopeo"]  # fixtures, imported for this module

pytestmark = [pytest.mark.e2e, pytest.mark.gitea, pytest.mark.timeout(900)]

REPLICAS = 2
START_TIMEOUT = 180.0
ROLL_TIMEOUT = 120.0


def dockerconfigjson(host: str, user: str, password: str) -> dict[str, Any]:
    """A ``kubernetes.io/dockerconfigjson`` Secret body for one registry key."""
    pair = base64.b64encode(f"{user}:{password}".encode()).decode()
    document = {"auths": {host: {"username": user, "password": password, "auth": pair}}}
    encoded = base64.b64encode(json.dumps(document).encode()).decode()
    return {"type": "kubernetes.io/dockerconfigjson", "data": {".dockerconfigjson": encoded}}


def secret(namespace: str, name: str, body: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": namespace},
        **body,
    }


def app_deployment(
    name: str,
    containers: list[dict[str, Any]],
    *,
    test: str,
    replicas: int,
    service_account: str = "",
    pull_secrets: tuple[str, ...] = (),
) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": containers, "terminationGracePeriodSeconds": 5}
    if service_account:
        spec["serviceAccountName"] = service_account
    if pull_secrets:
        spec["imagePullSecrets"] = [{"name": n} for n in pull_secrets]
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "labels": {ENROLL_LABEL: "true", TEST_LABEL: test}},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}}, "spec": spec},
        },
    }


def running(kube: Any, namespace: str, name: str) -> list[dict[str, Any]]:
    listed = core_api(kube).list_namespaced_pod(
        namespace, label_selector=f"app={name}", _preload_content=False
    )
    pods: list[dict[str, Any]] = json.loads(listed.data)["items"]
    return pods


def digests(pod: dict[str, Any]) -> dict[str, str]:
    statuses = (pod.get("status") or {}).get("containerStatuses") or []
    return {s["name"]: (s.get("imageID") or "").rpartition("@")[2] for s in statuses}


def ready(pod: dict[str, Any]) -> bool:
    conditions = (pod.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def wait_on(
    kube: Any, namespace: str, name: str, want: dict[str, str], *, replicas: int, timeout: float
) -> None:
    """Exactly ``replicas`` pods of ``name``, Ready, each container on its ``want`` digest."""

    def rolled() -> None:
        pods = running(kube, namespace, name)
        summary = [
            (p["metadata"]["name"], {k: v[7:19] for k, v in digests(p).items()}, ready(p))
            for p in pods
        ]
        assert len(pods) == replicas, summary
        for pod in pods:
            assert ready(pod) and not pod["metadata"].get("deletionTimestamp"), summary
            assert digests(pod) == want, summary

    eventually(rolled, timeout=timeout, what=f"{replicas} {name} pods on {want}")


def a_pass_saw_them_current(autoroll: Autoroll, namespace: str, *names: str) -> None:
    """Ask for a pass and wait until one decided every ``names`` workload's ``app`` current
    and ended: its targets' image configs are then remembered, which a push to Gitea needs
    (Gitea drops a tag's previous manifest, so the old pods' content is known only if the
    controller saw it as the target; a controller started after the push cannot)."""
    ok = {"outcome": "ok"}
    start, ticks = len(autoroll.output), metric(autoroll, "autoroll_ticks_total", ok)
    assert autoroll.webhook() == 202

    def done() -> None:
        for name in names:
            said = autoroll.lines(rf"{namespace}/deployment/{name} app: current", since=start)
            assert said, f"no pass saw {name} current yet"
        assert metric(autoroll, "autoroll_ticks_total", ok) > ticks, "the pass has not ended"

    eventually(done, timeout=30, what="a pass that saw the app current")


def pull_secret_names(pod: dict[str, Any]) -> list[str]:
    return [r["name"] for r in pod["spec"].get("imagePullSecrets") or []]


def test_two_registries_are_read_with_the_pods_own_pull_secrets_and_nothing_else(
    *,
    gitea: GiteaServer,
    skopeo: str,
    kube: Any,
    node: Node,
    namespace: str,
    fresh_registry: RegistryServer,
    docker_registry: RegistryServer,
    tmp_path: Path,
    start_autoroll: StartAutoroll,
) -> None:
    core = core_api(kube)
    # Gitea: a private owner, so an anonymous pull is refused; its read-only token.
    owner = gitea.create_user(f"p-{secrets.token_hex(4)}", visibility="private")
    reader = gitea.create_token(owner.name, owner.password, ["read:package"])
    to_gitea = SkopeoPusher(gitea, owner, skopeo, tmp_path / "push")
    to_registry = ImagePusher(fresh_registry)
    web_repo, side_repo = f"{owner.name}/web", f"e2e/{namespace}-side"
    # The node reaches both, with no credentials of its own.
    node.trust_registry(gitea.host, None)
    node.trust_registry(fresh_registry.host, None)
    for host in (gitea.host, fresh_registry.host):
        assert (
            "Authorization"
            not in (node.workdir / "etc" / "certs.d" / host / "hosts.toml").read_text()
        )

    core.create_namespaced_secret(
        namespace, secret(namespace, "gitea-pull", dockerconfigjson(gitea.host, owner.name, reader))
    )
    core.create_namespaced_secret(
        namespace,
        secret(
            namespace,
            "registry-pull",
            dockerconfigjson(fresh_registry.host, fresh_registry.user, fresh_registry.password),
        ),
    )
    core.create_namespaced_service_account(
        namespace,
        {
            "metadata": {"name": "puller"},
            "imagePullSecrets": [{"name": "gitea-pull"}, {"name": "registry-pull"}],
        },
    )
    web_image = f"{gitea.host}/{web_repo}:latest"
    side_image = f"{fresh_registry.host}/{side_repo}:latest"
    g1 = push_app(to_gitea, web_repo, build="web 1").digest
    s1 = push_sidecar(to_registry, side_repo, build="side 1").digest
    app = container(web_image, http_port=APP_PORT, ready_after=1)
    side = {"name": "side", "image": side_image, "imagePullPolicy": "Always"}
    apps = apps_api(kube)
    apps.create_namespaced_deployment(
        namespace,
        app_deployment(
            "web", [app, side], test=namespace, replicas=REPLICAS, service_account="puller"
        ),
    )
    apps.create_namespaced_deployment(
        namespace,
        app_deployment(
            "solo", [container(web_image)], test=namespace, replicas=1, pull_secrets=("gitea-pull",)
        ),
    )
    autoroll = start_autoroll(
        registry=docker_registry,  # where the controller's own image is; not asked for apps
        values={
            "forgejo": {"host": "", "user": ""},
            "secret": {"forgejoToken": ""},
            "registries": [
                {"host": gitea.host, "scheme": "http", "pullSecrets": True},
                {"host": fresh_registry.host, "scheme": "http", "pullSecrets": True},
            ],
            "networkPolicy": {
                "registry": {
                    "ports": sorted(
                        int(h.rpartition(":")[2])
                        for h in (gitea.host, fresh_registry.host, docker_registry.host)
                    )
                }
            },
        },
    )
    wait_on(
        kube, namespace, "web", {"app": g1, "side": s1}, replicas=REPLICAS, timeout=START_TIMEOUT
    )
    wait_on(kube, namespace, "solo", {"app": g1}, replicas=1, timeout=START_TIMEOUT)
    a_pass_saw_them_current(autoroll, namespace, "web", "solo")
    # Admission copied the ServiceAccount's pull secrets into the app's pods; solo's are its own.
    [web_pod, *_] = running(kube, namespace, "web")
    assert pull_secret_names(web_pod) == ["gitea-pull", "registry-pull"]
    assert pull_secret_names(running(kube, namespace, "solo")[0]) == ["gitea-pull"]
    # The controller has no credential of its own: no token, no Secret of a registry.
    [controller] = [
        p
        for p in json.loads(
            core.list_namespaced_pod(
                namespace,
                label_selector="app.kubernetes.io/instance=autoroll",
                _preload_content=False,
            ).data
        )["items"]
        if not p["metadata"].get("deletionTimestamp")
    ]
    env = {e["name"] for e in controller["spec"]["containers"][0]["env"]}
    assert not env & {"FORGEJO_HOST", "FORGEJO_TOKEN", "FORGEJO_TOKEN_FILE"}, env

    def web_rolled(want: dict[str, str]) -> None:
        wait_on(kube, namespace, "web", want, replicas=REPLICAS, timeout=ROLL_TIMEOUT)

    with Recorder(core.list_namespaced_pod, namespace, label_selector="app=web") as web_pods:
        # 1. A push to Gitea rolls the app's pods (and solo's) one at a time.
        g2 = push_app(to_gitea, web_repo, build="web 2").digest
        with nudging(autoroll):
            web_rolled({"app": g2, "side": s1})
            wait_on(kube, namespace, "solo", {"app": g2}, replicas=1, timeout=ROLL_TIMEOUT)
        # A push to the docker-registry rolls them again, one at a time.
        s2 = push_sidecar(to_registry, side_repo, build="side 2").digest
        with nudging(autoroll):
            web_rolled({"app": g2, "side": s2})
        rolled = deletions(web_pods.pods())
        assert len(rolled) == 2 * REPLICAS, rolled
        assert unsettled_deletions(web_pods.pods(), replicas=REPLICAS) == []

        # 2. The Gitea Secret gone, the docker-registry Secret wrong; a push to each.
        solo_uids = [p["metadata"]["uid"] for p in running(kube, namespace, "solo")]
        core.delete_namespaced_secret("gitea-pull", namespace)
        core.replace_namespaced_secret(
            "registry-pull",
            namespace,
            secret(
                namespace,
                "registry-pull",
                dockerconfigjson(fresh_registry.host, fresh_registry.user, "not-the-password"),
            ),
        )
        push_app(to_gitea, web_repo, build="web 3")
        push_sidecar(to_registry, side_repo, build="side 3")
        start = len(autoroll.output)
        key = f"{namespace}/deployment/web "

        def unknown_lines(container_name: str) -> list[str]:
            return [
                line
                for line in autoroll.lines(
                    rf" {container_name}: skipped \(registry-unknown\)", since=start
                )
                if key in line
            ]

        with nudging(autoroll):
            at_least(3, lambda: unknown_lines("app"), timeout=90, what="3 passes: app unknown")
            at_least(3, lambda: unknown_lines("side"), timeout=90, what="3 passes: side unknown")
        assert deletions(web_pods.pods()) == rolled, "nothing more deleted"
    gitea_says, registry_says = unknown_lines("app")[-1], unknown_lines("side")[-1]
    assert f"imagePullSecret {namespace}/gitea-pull not found" in gitea_says, gitea_says
    assert f"imagePullSecret {namespace}/registry-pull" in registry_says, registry_says
    assert "not-the-password" not in "\n".join(autoroll.output)
    assert reader not in "\n".join(autoroll.output)
    assert fresh_registry.password not in "\n".join(autoroll.output)
    # Both still run the last build they could pull, whole, and no pod of them was replaced.
    wait_on(kube, namespace, "web", {"app": g2, "side": s2}, replicas=REPLICAS, timeout=10)
    wait_on(kube, namespace, "solo", {"app": g2}, replicas=1, timeout=10)
    assert [p["metadata"]["uid"] for p in running(kube, namespace, "solo")] == solo_uids
