"""The chart's RBAC, rendered by real helm and bound to a ServiceAccount on the real API.

Tests that must prove "exactly these rules are enough" run the controller with a kubeconfig
for that ServiceAccount, so a missing verb is a 403 from the real authorizer. The ClusterRole
and its binding outlive the test's namespace: each test deletes them (``delete_cluster_rules``,
or ``cluster_role_kubeconfig`` does it on the way out).
"""

from __future__ import annotations

import contextlib
import subprocess
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import yaml

from tests.conftest import require_tool
from tests.e2e.controlplane import ControlPlane
from tests.e2e.controlplane_config import kubeconfig_document
from tests.e2e.helpers import core_api, rbac_api

CHART = Path(__file__).resolve().parents[2] / "charts" / "autoroll"
RELEASE = "rel"
LEASE = f"{RELEASE}-autoroll"  # the chart's fullname: the Role names this Lease only
#: Two replicas with events on: every optional rule the chart can render for delete mode.
HA_VALUES = ("replicaCount=2", "emitEvents=true")


def chart_rules(template: str, values: Sequence[str] = HA_VALUES) -> list[dict[str, Any]]:
    """The rules of ``template`` as the chart renders them with ``--set`` ``values``."""
    helm = require_tool("helm")
    sets = [arg for value in values for arg in ("--set", value)]
    rendered = subprocess.run(
        [
            helm,
            "template",
            RELEASE,
            str(CHART),
            "-f",
            str(CHART / "tests" / "values" / "required.yaml"),
            *sets,
            "--show-only",
            f"templates/{template}",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    document = yaml.safe_load(rendered)
    rules: list[dict[str, Any]] = document["rules"]
    return rules


def _bind(rbac: Any, namespace: str, kind: str, name: str, subject: list[dict[str, str]]) -> None:
    binding = {
        "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": kind, "name": name},
        "subjects": subject,
    }
    if kind == "ClusterRole":
        rbac.create_cluster_role_binding(binding)
    else:
        rbac.create_namespaced_role_binding(namespace, binding)


def service_account_kubeconfig(
    plane: ControlPlane,
    kube: Any,
    namespace: str,
    path: Path,
    *,
    values: Sequence[str] = HA_VALUES,
    lease_role: bool = True,
) -> Path:
    """A kubeconfig for ServiceAccount ``autoroll`` bound to the chart's rules only: its
    ClusterRole and (``lease_role``) its namespaced Lease Role, rendered with ``values``."""
    core, rbac = core_api(kube), rbac_api(kube)
    core.create_namespaced_service_account(namespace, {"metadata": {"name": "autoroll"}})
    subject = [{"kind": "ServiceAccount", "name": "autoroll", "namespace": namespace}]
    cluster_role = f"autoroll-{namespace}"
    rbac.create_cluster_role(
        {"metadata": {"name": cluster_role}, "rules": chart_rules("clusterrole.yaml", values)}
    )
    _bind(rbac, namespace, "ClusterRole", cluster_role, subject)
    if lease_role:
        rbac.create_namespaced_role(
            namespace, {"metadata": {"name": LEASE}, "rules": chart_rules("role.yaml", values)}
        )
        _bind(rbac, namespace, "Role", LEASE, subject)
    token = core.create_namespaced_service_account_token(
        "autoroll", namespace, {"spec": {"expirationSeconds": 3600}}
    ).status.token
    document = kubeconfig_document(
        server=plane.server, ca_pem=plane.ca_file.read_bytes(), user="autoroll", token=token
    )
    path.write_text(yaml.safe_dump(document))
    return path


def delete_cluster_rules(kube: Any, namespace: str) -> None:
    """Delete the ClusterRole and ClusterRoleBinding ``service_account_kubeconfig`` made for
    ``namespace`` (deleting the namespace leaves them)."""
    rbac_api(kube).delete_cluster_role_binding(f"autoroll-{namespace}")
    rbac_api(kube).delete_cluster_role(f"autoroll-{namespace}")


@contextlib.contextmanager
def cluster_role_kubeconfig(
    plane: ControlPlane, kube: Any, namespace: str, path: Path, *, values: Sequence[str]
) -> Iterator[Path]:
    """``service_account_kubeconfig`` with the chart's ClusterRole only (no Lease Role),
    rendered with ``values``; its cluster-wide rules deleted afterwards, whatever happened."""
    kubeconfig = service_account_kubeconfig(
        plane, kube, namespace, path, values=values, lease_role=False
    )
    try:
        yield kubeconfig
    finally:
        delete_cluster_rules(kube, namespace)
