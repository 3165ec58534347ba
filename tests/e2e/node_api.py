"""The node's standing with the API server: its components' client certificates and
kubeconfigs, the RBAC they need, its Node object (Ready, deleted at teardown).

The identities are a cluster's usual ones (the kubelet's is ``system:node:<node>`` in
``system:nodes``; kube-proxy's and CoreDNS's are in ``node_network.py``). Apart from the
node's processes (``node_start.py``), which only call these.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from tests.e2e.controlplane import ControlPlane
from tests.e2e.controlplane_config import kubeconfig_document
from tests.e2e.node import NodeError
from tests.e2e.node_network import cluster_role_binding


def _openssl(*args: str, cwd: Path) -> None:
    done = subprocess.run(["openssl", *args], cwd=cwd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise NodeError(f"openssl {args[0]} failed: {done.stderr.strip()}")


def client_cert(pki: Path, *, ca_dir: Path, name: str, user: str, group: str | None) -> None:
    """``<name>.crt``/``.key`` in ``pki``: a client certificate for ``user`` (in ``group``),
    signed by the CA the API server trusts: the identity a node component really has (the
    kubelet's is ``system:node:<node>`` in ``system:nodes``)."""
    pki.mkdir(parents=True, exist_ok=True)
    subject = (f"/O={group}" if group else "") + f"/CN={user}"
    _openssl(
        "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
        "-keyout", f"{name}.key", "-out", f"{name}.crt", "-days", "2",
        "-CA", str(ca_dir / "ca.crt"), "-CAkey", str(ca_dir / "ca.key"),
        "-subj", subject,
        "-addext", "basicConstraints=critical,CA:FALSE",
        "-addext", "keyUsage=critical,digitalSignature",
        "-addext", "extendedKeyUsage=clientAuth",
        cwd=pki,
    )  # fmt: skip


def cert_kubeconfig(
    *, server: str, ca_pem: bytes, user: str, cert: Path, key: Path
) -> dict[str, Any]:
    """A kubeconfig that authenticates with a client certificate (``client_cert``)."""
    import base64

    document = kubeconfig_document(server=server, ca_pem=ca_pem, user=user, token="")
    document["users"] = [
        {
            "name": user,
            "user": {
                "client-certificate-data": base64.b64encode(cert.read_bytes()).decode(),
                "client-key-data": base64.b64encode(key.read_bytes()).decode(),
            },
        }
    ]
    return document


def write_kubeconfig(
    root: Path, plane: ControlPlane, *, name: str, user: str, group: str | None
) -> Path:
    """``etc/<name>.kubeconfig`` for a node component, with its own client certificate."""
    client_cert(root / "pki", ca_dir=plane.ca_file.parent, name=name, user=user, group=group)
    path = root / "etc" / f"{name}.kubeconfig"
    document = cert_kubeconfig(
        server=plane.server,
        ca_pem=plane.ca_file.read_bytes(),
        user=user,
        cert=root / "pki" / f"{name}.crt",
        key=root / "pki" / f"{name}.key",
    )
    path.write_text(yaml.safe_dump(document))
    return path


NODE_RBAC_BINDING = "autoroll-e2e:nodes"


def grant_node_role(kube: Any) -> None:
    """Bind the built-in ``system:node`` role to ``system:nodes`` (the API server runs RBAC
    only, without the Node authorizer that would otherwise authorize kubelets)."""
    body = cluster_role_binding(NODE_RBAC_BINDING, "system:node", "Group", "system:nodes")
    apply_cluster_objects(kube, [body])


def apply_cluster_objects(kube: Any, bodies: Sequence[Mapping[str, Any]]) -> None:
    """Create cluster-scoped RBAC objects (``ClusterRole``/``ClusterRoleBinding``) unless they
    exist already (the session's next node finds them)."""
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException

    rbac: Any = client.RbacAuthorizationV1Api(kube)
    create = {
        "ClusterRole": rbac.create_cluster_role,
        "ClusterRoleBinding": rbac.create_cluster_role_binding,
    }
    for body in bodies:
        try:
            create[body["kind"]](body, _preload_content=False)
        except ApiException as exc:
            if exc.status != 409:
                raise


def node_is_ready(kube: Any, name: str) -> bool:
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException

    core: Any = client.CoreV1Api(kube)
    try:
        raw = json.loads(core.read_node(name, _preload_content=False).data)
    except ApiException:
        return False
    conditions = raw.get("status", {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def delete_node(kube: Any, name: str) -> None:
    from kubernetes import client

    core: Any = client.CoreV1Api(kube)
    core.delete_node(name, _preload_content=False)
