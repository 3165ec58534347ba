"""A registry behind a private CA, for real (issue 24): the controller pod on the real node
trusts it through the chart's ``caBundle`` and rolls an app pulled from it.

A docker-registry serves HTTPS with a certificate from a CA made here; the node's containerd
trusts that CA (``hosts.toml``), as a cluster that pulls from such a Forgejo is configured;
the chart is installed with ``forgejo.scheme: https`` and ``caBundle.pem``. A push to the
app's tag then rolls every pod onto the new digest, one at a time. Without the bundle the
lookups are ``tls-untrusted`` with a message naming ``caBundle``
(tests/integration/test_registry_tls.py shows that, and ``autoroll plan`` saying it).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.e2e.controller import StartAutoroll
from tests.e2e.enrolled_app import APP_NAME, START_TIMEOUT, make_app
from tests.e2e.helpers import core_api
from tests.e2e.incluster import POD_SELECTOR
from tests.e2e.node import Node
from tests.e2e.scenario import App, Recorder, deletions, nudging
from tests.support.registry import RegistryServer

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(900)]

ROLL_TIMEOUT = 120.0


def test_the_controller_trusts_the_private_ca_from_the_chart_and_rolls_the_app(
    kube: Any,
    namespace: str,
    node: Node,
    tls_registry: RegistryServer,
    start_autoroll: StartAutoroll,
) -> None:
    assert tls_registry.tls is not None
    app: App = make_app(kube, namespace, tls_registry, node)
    # make_app trusted it as plain HTTP; this registry is HTTPS by the private CA
    ca = tls_registry.tls.ca_cert
    node.trust_registry(tls_registry.host, tls_registry.authorization, ca_file=ca)
    old = app.push()
    app.deploy(replicas=2)
    autoroll = start_autoroll(registry=tls_registry)
    app.wait_rolled(old, replicas=2, timeout=START_TIMEOUT)

    listed = core_api(kube).list_namespaced_pod(
        namespace, label_selector=POD_SELECTOR, _preload_content=False
    )
    [pod] = [
        p for p in json.loads(listed.data)["items"] if "deletionTimestamp" not in p["metadata"]
    ]
    env = {e["name"]: e.get("value") for e in pod["spec"]["containers"][0]["env"]}
    assert env["REGISTRY_CA_FILE"] == "/etc/autoroll/ca/ca.crt"
    assert env["REGISTRY_SCHEME"] == "https"

    with Recorder(
        core_api(kube).list_namespaced_pod, namespace, label_selector=f"app={APP_NAME}"
    ) as pods:
        new = app.push()
        with nudging(autoroll):
            app.wait_rolled(new, replicas=2, timeout=ROLL_TIMEOUT)
    assert len(deletions(pods.pods())) == 2
    assert not [line for line in autoroll.output if "tls-untrusted" in line]
