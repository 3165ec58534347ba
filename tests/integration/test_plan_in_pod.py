"""`kubectl exec deploy/<release> -- autoroll plan` plans as the controller does (issue 24).

NOTES.txt tells users to run the plan inside the controller's pod, because there it has the
release's own environment: the token from the release's Secret, its label selector, kinds
and guardrails. ``kubectl exec`` runs the command with the container's environment, which is
what the chart's Deployment declares; so here that environment is taken from `helm template`
(Secret references resolved from the rendered Secret, as the kubelet does) and `autoroll plan`
runs with it, and nothing else, against a fake API server holding one enrolled Deployment.
Each release setting changes the plan the way it changes the controller's passes.
"""

from __future__ import annotations

import base64
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml

from tests.conftest import require_tool
from tests.support.autoroll_cli import run_autoroll
from tests.support.fake_kube import FaultyKubeApi, KubeApiServer
from tests.support.moved_tag import api_on_moved_tag
from tests.support.registry import ImagePusher, RegistryServer

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "charts" / "autoroll"


@pytest.fixture
def api(
    registry: RegistryServer, pusher: ImagePusher, repository: str
) -> Iterator[tuple[FaultyKubeApi, KubeApiServer]]:
    """shop/deployment/web, enrolled with aethnet.se/autoroll=true, runs a moved tag."""
    fake, _, _ = api_on_moved_tag(pusher, repository, host=registry.host)
    with KubeApiServer(fake) as server:
        yield fake, server


def container_env(registry: RegistryServer, mount: Path, **values: Any) -> dict[str, str]:
    """The controller container's environment as the chart's release gives it; the Secret's
    files are written under ``mount`` as the kubelet mounts them, and the ``*_FILE``
    variables point there."""
    settings = {
        "forgejo": {"host": registry.host, "user": registry.user, "scheme": "http"},
        "image": {"repository": f"{registry.host}/ops/autoroll"},
        "secret": {"forgejoToken": registry.password, "webhookSecret": "w" * 32},
        # The NetworkPolicy is on by default and needs the addresses it lets through.
        "networkPolicy": {
            "registry": {"cidrs": ["127.0.0.1/32"]},
            "apiServer": {"cidrs": ["127.0.0.1/32"]},
        },
        **values,
    }
    rendered = subprocess.run(
        [require_tool("helm"), "template", "rel", str(CHART), "-n", "autoroll", "-f", "-"],
        input=yaml.safe_dump(settings),
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    docs = [d for d in yaml.safe_load_all(rendered) if d]
    [secret] = [d for d in docs if d["kind"] == "Secret"]
    [deployment] = [d for d in docs if d["kind"] == "Deployment"]
    [container] = deployment["spec"]["template"]["spec"]["containers"]
    mounted = {m["name"]: m["mountPath"] for m in container.get("volumeMounts", [])}
    mount.mkdir(parents=True, exist_ok=True)
    for volume in deployment["spec"]["template"]["spec"]["volumes"]:
        if volume.get("secret", {}).get("secretName") == secret["metadata"]["name"]:
            for item in volume["secret"]["items"]:
                data = base64.b64decode(secret["data"][item["key"]])
                (mount / item["path"]).write_bytes(data)
    env: dict[str, str] = {}
    for entry in container["env"]:
        if "value" in entry:
            value = entry["value"]
            for path in mounted.values():
                if entry["name"].endswith("_FILE") and value.startswith(f"{path}/"):
                    value = str(mount / value.removeprefix(f"{path}/"))
            env[entry["name"]] = value
        elif "secretKeyRef" in entry.get("valueFrom", {}):
            key = entry["valueFrom"]["secretKeyRef"]["key"]
            env[entry["name"]] = base64.b64decode(secret["data"][key]).decode()
    return env


def plan_in_pod(env: dict[str, str], server: KubeApiServer, tmp_path: Path) -> str:
    """`autoroll plan` with the pod's environment (the kubeconfig stands in for the
    ServiceAccount the pod has; LISTEN_ADDR and the API address are the pod's own)."""
    run_env = {
        **{k: v for k, v in env.items() if not k.startswith("KUBERNETES_SERVICE")},
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(tmp_path),
        "KUBECONFIG": str(server.write_kubeconfig(tmp_path / "kubeconfig")),
    }
    result = run_autoroll("plan", env=run_env)
    assert result.returncode == 0, result.stderr
    return result.stdout


def paths(server: KubeApiServer) -> list[str]:
    return [urlsplit(seen.path).path for seen in server.seen if seen.method == "GET"]


def test_with_the_defaults_the_plan_would_roll_the_enrolled_deployment(
    api: tuple[FaultyKubeApi, KubeApiServer], registry: RegistryServer, tmp_path: Path
) -> None:
    fake, server = api
    out = plan_in_pod(container_env(registry, tmp_path / "secrets"), server, tmp_path)
    assert "shop/deployment/web" in out and "would delete pod web-1" in out
    assert fake.deletes == []


def test_the_release_label_selector_is_the_plans(
    api: tuple[FaultyKubeApi, KubeApiServer], registry: RegistryServer, tmp_path: Path
) -> None:
    _, server = api
    out = plan_in_pod(
        container_env(registry, tmp_path / "secrets", labelSelector="team=ops"), server, tmp_path
    )
    assert "shop/deployment/web" not in out
    assert "would delete" not in out


def test_the_release_workload_kinds_are_the_only_kinds_listed(
    api: tuple[FaultyKubeApi, KubeApiServer], registry: RegistryServer, tmp_path: Path
) -> None:
    _, server = api
    env = container_env(registry, tmp_path / "secrets", workloadKinds=["statefulset"])
    out = plan_in_pod(env, server, tmp_path)
    assert "shop/deployment/web" not in out
    assert "/apis/apps/v1/statefulsets" in paths(server)
    assert "/apis/apps/v1/deployments" not in paths(server)


def test_the_release_guardrails_hold_the_plans_deletion(
    api: tuple[FaultyKubeApi, KubeApiServer], registry: RegistryServer, tmp_path: Path
) -> None:
    _, server = api
    env = container_env(registry, tmp_path / "secrets", guardrails={"paused": True})
    out = plan_in_pod(env, server, tmp_path)
    assert "held (paused)" in out
    assert "PAUSED: rolling is paused cluster-wide" in out
