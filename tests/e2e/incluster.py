"""autoroll installed as a user installs it: ``helm install`` of ``charts/autoroll`` with the
controller image built from the Dockerfile, running as a pod on the real node.

Its RBAC, security context, in-cluster configuration and image are the chart's and the
Dockerfile's, unchanged. What the test cluster needs on top is set through documented chart
values, as a user of such a cluster would set them:

- ``apiServer.host``/``port``: the API server listens on the host's loopback only and does
  not publish itself as the ``kubernetes`` Service's endpoint (``--endpoint-reconciler-type
  =none``), so that Service routes nowhere even with the node's kube-proxy; the pod is
  pointed at the API server's real address (``127.0.0.1:<port>``, which the node's loopback
  bridge carries to the control plane).
- ``hostNetwork: true``: the API server and the registry listen on loopback only, which a
  pod's own network namespace cannot reach; the controller listens on a free port of the
  node, which ``Node.expose`` makes answer on the host's 127.0.0.1 for the webhook and
  ``/metrics``.
- ``forgejo.scheme: http``: the local registry has no TLS; one served by a private CA
  (``RegistryServer.tls``) gets ``https`` and the CA as ``caBundle.pem``, as a user's would.
- ``networkPolicy.registry``/``apiServer``: the NetworkPolicy is on by default and needs the
  addresses it lets the controller reach, here the registry's and the API server's loopback
  address and port (the test cluster enforces no policy, but the chart renders and the API
  server admits it, as on any cluster).

The controller's log lines land in ``Autoroll.output``, as a local process's would
(``tests.e2e.pod_logs``).
"""

from __future__ import annotations

import contextlib
import ipaddress
import json
import secrets
import subprocess
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import requests
import yaml

from tests.e2e.controller import Autoroll, ControllerError
from tests.e2e.controlplane import ControlPlane
from tests.e2e.helpers import core_api
from tests.e2e.node import Node
from tests.e2e.pod_logs import PodLogs
from tests.support.ports import free_port
from tests.support.registry import basic_auth

REPO = Path(__file__).resolve().parents[2]
CHART = REPO / "charts" / "autoroll"
RELEASE = "autoroll"
POD_SELECTOR = f"app.kubernetes.io/instance={RELEASE}"
INSTALL_TIMEOUT = 180.0


def _flag(raw: str) -> bool:
    return raw.lower() == "true"


def _names(raw: str) -> list[str]:
    return [part.strip() for part in raw.split(",") if part.strip()]


# The controller's environment variables a scenario may set, as the chart values that map to
# them (the chart's own documented mapping).
# A value path is dotted ("tenancy.namespaces"); one variable may set several values.
ENV_TO_VALUES: Mapping[str, tuple[tuple[str, Callable[[str], Any]], ...]] = {
    "DRY_RUN": (("dryRun", _flag),),
    "ROLLOUT_HALTED_AFTER_SECONDS": (("rolloutHaltedAfterSeconds", int),),
    "LABEL_SELECTOR": (("labelSelector", str),),
    "LOG_LEVEL": (("logLevel", str),),
    "EMIT_EVENTS": (("emitEvents", _flag),),
    "ROLLOUT_METHOD": (("rolloutMethod", str),),
    "WORKLOAD_KINDS": (("workloadKinds", _names),),
    "ALLOWED_NAMESPACES": (("tenancy.namespaces", _names),),
    "WATCH_NAMESPACES": (("tenancy.namespaces", _names), ("tenancy.namespaced", lambda _: True)),
    "ROLL_PAUSED": (("guardrails.paused", _flag),),
    "ROLL_HEALTHY_SECONDS": (("guardrails.healthySeconds", int),),
    # A receiver's secret turns it on (docs/adr/025): listed, and stored in the chart's Secret.
    "DISTRIBUTION_WEBHOOK_TOKEN": (
        ("webhookReceivers", lambda _: ["distribution"]),
        ("secret.receivers.distribution", str),
    ),
    # Into the Secret the chart creates, mounted as a file (NOTIFY_URLS_FILE), as a user's.
    "NOTIFY_URLS": (("secret.notifyUrls", str), ("notifications.enabled", lambda _: True)),
    "NOTIFY_THROTTLE_SECONDS": (("notifications.throttleSeconds", int),),
}


def _set_path(values: dict[str, Any], path: str, value: Any) -> None:
    *parents, leaf = path.split(".")
    for key in parents:
        values = values.setdefault(key, {})
    values[leaf] = value


def _loopback_cidr(host: str) -> str:
    """The /32 (or /128) of ``host``, an IP address (the test cluster's are all literal)."""
    address = ipaddress.ip_address(host.strip("[]"))
    return f"{address}/{address.max_prefixlen}"


class RegistryAccess(Protocol):
    """The registry autoroll is configured for (``forgejo.host``, ``forgejo.user`` and the
    token): a ``RegistryServer`` (docker-registry) or ``Credentials`` (an owner on Gitea)."""

    @property
    def host(self) -> str: ...
    @property
    def user(self) -> str: ...
    @property
    def password(self) -> str: ...
    @property
    def authorization(self) -> str: ...


@dataclass(frozen=True)
class Credentials:
    """A registry at ``host`` (``127.0.0.1:<port>``) and a user's token for it."""

    host: str
    user: str
    password: str

    @property
    def authorization(self) -> str:
        return basic_auth(self.user, self.password)


def merged(base: dict[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    """``base`` with ``over`` merged in, maps key by key (as Helm merges a values file)."""
    out = dict(base)
    for key, value in over.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), dict):
            out[key] = merged(out[key], value)
        else:
            out[key] = value
    return out


def chart_values(
    *,
    plane: ControlPlane,
    registry: RegistryAccess,
    image: str,
    secret: str,
    port: int,
    poll_seconds: int,
    env: Mapping[str, str],
    values: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The values of the test install (``image`` is ``host/repository:tag``); ``values``
    are merged over them (``registries``, say)."""
    repository, _, tag = image.rpartition(":")
    api_host, _, api_port = plane.server.removeprefix("https://").rpartition(":")
    registry_host, _, registry_port = registry.host.rpartition(":")
    chart: dict[str, Any] = {
        "image": {"repository": repository, "tag": tag},
        "forgejo": {"host": registry.host, "user": registry.user, "scheme": "http"},
        "secret": {"forgejoToken": registry.password, "webhookSecret": secret},
        "pollIntervalSeconds": poll_seconds,
        "selfRoll": False,
        "apiServer": {"host": api_host, "port": int(api_port)},
        "hostNetwork": True,
        "containerPort": port,
        "probePort": free_port(),  # the node's network: the probes need a free port too
        "terminationGracePeriodSeconds": 10,
        # No health window unless a test is about it (ROLL_HEALTHY_SECONDS): the scenarios
        # time rolls, and 30 s between pods would only slow them down.
        "guardrails": {"healthySeconds": 0},
        "networkPolicy": {
            "registry": {
                "cidrs": [_loopback_cidr(registry_host)],
                "ports": [int(registry_port or 443)],
            },
            "apiServer": {"cidrs": [_loopback_cidr(api_host)], "ports": [int(api_port)]},
        },
    }
    tls = getattr(registry, "tls", None)  # a docker-registry served by a private CA
    if tls is not None:
        chart["forgejo"]["scheme"] = "https"
        chart["caBundle"] = {"pem": tls.ca_cert.read_text(encoding="ascii")}
    for name, raw in env.items():
        if name not in ENV_TO_VALUES:
            raise ValueError(f"{name}: no chart value maps to it (known: {sorted(ENV_TO_VALUES)})")
        for path, convert in ENV_TO_VALUES[name]:
            _set_path(chart, path, convert(raw))
    return merged(chart, values or {})


def _helm(helm: str, kubeconfig: Path, namespace: str, *args: str) -> str:
    done = subprocess.run(
        [helm, *args, "--kubeconfig", str(kubeconfig), "-n", namespace],
        capture_output=True,
        text=True,
        timeout=INSTALL_TIMEOUT + 30,
        check=False,
    )
    if done.returncode != 0:
        raise ControllerError(f"helm {' '.join(args[:2])} failed:\n{done.stderr}")
    return done.stdout


def _controller_pods(kube: Any, namespace: str) -> list[dict[str, Any]]:
    listed = core_api(kube).list_namespaced_pod(
        namespace, label_selector=POD_SELECTOR, _preload_content=False
    )
    pods: list[dict[str, Any]] = json.loads(listed.data)["items"]
    return pods


def _ready(pod: Mapping[str, Any]) -> bool:
    conditions = (pod.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def _wait_ready_pod(
    kube: Any, namespace: str, *, other_than: set[str], timeout: float, output: list[str]
) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for pod in _controller_pods(kube, namespace):
            meta = pod["metadata"]
            if meta["uid"] not in other_than and not meta.get("deletionTimestamp") and _ready(pod):
                return str(meta["uid"])
        time.sleep(0.2)
    tail = "\n".join(output[-20:])
    raise ControllerError(f"no Ready controller pod within {timeout:.0f}s; its output:\n{tail}")


@contextlib.contextmanager
def installed_autoroll(
    *,
    helm: str,
    kubeconfig: Path,
    kube: Any,
    plane: ControlPlane,
    node: Node,
    registry: RegistryAccess,
    image: str,
    namespace: str,
    workdir: Path,
    poll_seconds: int = 5,
    env: Mapping[str, str] | None = None,
    values: Mapping[str, Any] | None = None,
) -> Iterator[Autoroll]:
    """``helm install`` the chart in ``namespace``; yield the controller once its pod is Ready
    and answers /healthz through the node's bridge; ``helm uninstall`` afterwards. ``values``
    are merged over the test install's own (``chart_values``)."""
    port = free_port()
    secret = secrets.token_hex(32)
    chart = chart_values(
        plane=plane,
        registry=registry,
        image=image,
        secret=secret,
        port=port,
        poll_seconds=poll_seconds,
        env=env or {},
        values=values,
    )
    values_file = workdir / f"autoroll-values-{port}.yaml"
    values_file.write_text(yaml.safe_dump(chart))
    tls = getattr(registry, "tls", None)
    node.trust_registry(
        registry.host, registry.authorization, ca_file=tls.ca_cert if tls is not None else None
    )
    node.expose(port)
    autoroll = Autoroll(url=f"http://127.0.0.1:{port}", secret=secret, process=None)
    installed = False
    with PodLogs(kube, node, namespace, autoroll.output, selector=POD_SELECTOR):
        try:
            _helm(
                helm, kubeconfig, namespace, "install", RELEASE, str(CHART), "-f", str(values_file)
            )
            installed = True
            # /healthz through the bridge, not the pod's Ready condition: the chart's
            # readiness probe asks every 10 s, and the tests need the server, not the probe.
            deadline = time.monotonic() + INSTALL_TIMEOUT
            while True:
                with contextlib.suppress(requests.RequestException):
                    if requests.get(f"{autoroll.url}/healthz", timeout=2).status_code == 200:
                        break
                if time.monotonic() > deadline:
                    tail = "\n".join(autoroll.output[-20:])
                    raise ControllerError(
                        f"{autoroll.url}/healthz did not answer in {INSTALL_TIMEOUT:.0f}s:\n{tail}"
                    )
                time.sleep(0.2)
            current = {str(p["metadata"]["uid"]) for p in _controller_pods(kube, namespace)}

            def restart() -> None:
                """Delete the controller pod; return once its replacement is Ready."""
                for pod in _controller_pods(kube, namespace):
                    core_api(kube).delete_namespaced_pod(
                        pod["metadata"]["name"], namespace, _preload_content=False
                    )
                current.add(
                    _wait_ready_pod(
                        kube,
                        namespace,
                        other_than=set(current),
                        timeout=INSTALL_TIMEOUT,
                        output=autoroll.output,
                    )
                )

            autoroll.restart = restart
            autoroll.helm = lambda *args: _helm(helm, kubeconfig, namespace, *args)
            yield autoroll
        finally:
            if installed:
                with contextlib.suppress(ControllerError):
                    # Not awaited: the cluster-scoped RBAC objects go at once, the pod in
                    # the background (the next install is in another namespace).
                    _helm(helm, kubeconfig, namespace, "uninstall", RELEASE, "--wait=false")
