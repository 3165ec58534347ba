"""What the e2e control plane's servers are given, as plain data: the flags of etcd,
kube-apiserver and kube-controller-manager, the kubeconfig document, the static token file's
lines and the API server's egress selector configuration, with the addresses and names they
share. Pure (nothing here starts or writes anything), so ``controlplane.py`` and the benchmark's
API server (``bench/controlplane.py``) configure their servers exactly alike.
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from pathlib import Path
from typing import Any

# The controllers a cluster without nodes or a cloud needs for workloads, Jobs and RBAC tests.
# Node lifecycle, IPAM, routes, volumes and cloud controllers stay off: there are no real nodes
# (so nothing marks a NotReady node's pods unready, or taints the node: tests set node status).
KCM_CONTROLLERS = (
    "deployment",
    "replicaset",
    "statefulset",
    "daemonset",
    "job",
    "cronjob",
    "ttl-after-finished",
    "garbagecollector",
    "namespace",
    "serviceaccount",
    "serviceaccount-token",
    "root-ca-cert-publisher",
    "clusterrole-aggregation",
    "disruption",
    # The real node's kube-proxy and CoreDNS read a Service's endpoints from its slices.
    "endpointslice",
)

# First address of the service range is the `kubernetes` Service; the serving cert names it too.
SERVICE_CIDR = "10.0.0.0/24"
SERVICE_IP = "10.0.0.1"
SERVICE_ACCOUNT_ISSUER = "https://kubernetes.default.svc.cluster.local"
ADMIN_USER = "autoroll-e2e-admin"

# --- pure helpers -------------------------------------------------------------


def kubeconfig_document(*, server: str, ca_pem: bytes, user: str, token: str) -> dict[str, Any]:
    """A one-context kubeconfig with the CA embedded, so the file works from any directory."""
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": "autoroll-e2e",
                "cluster": {
                    "server": server,
                    "certificate-authority-data": base64.b64encode(ca_pem).decode(),
                },
            }
        ],
        "users": [{"name": user, "user": {"token": token}}],
        "contexts": [
            {"name": "autoroll-e2e", "context": {"cluster": "autoroll-e2e", "user": user}}
        ],
        "current-context": "autoroll-e2e",
    }


def token_file_line(*, token: str, user: str, uid: str, groups: Sequence[str]) -> str:
    """One line of ``--token-auth-file``: ``token,user,uid,"group1,group2"``."""
    return f'{token},{user},{uid},"{",".join(groups)}"\n'


def etcd_args(*, data_dir: Path, client_port: int, peer_port: int) -> list[str]:
    """etcd as a throwaway single member; ``--unsafe-no-fsync`` because the data is discarded."""
    client = f"http://127.0.0.1:{client_port}"
    peer = f"http://127.0.0.1:{peer_port}"
    return [
        "--name=e2e",
        f"--data-dir={data_dir}",
        f"--listen-client-urls={client}",
        f"--advertise-client-urls={client}",
        f"--listen-peer-urls={peer}",
        f"--initial-advertise-peer-urls={peer}",
        f"--initial-cluster=e2e={peer}",
        "--unsafe-no-fsync=true",
        "--log-level=warn",
    ]


def egress_selector_config(*, socket_path: Path) -> dict[str, Any]:
    """The API server's egress selector: the ``cluster`` network context (webhooks by
    Service, aggregated APIs, kubelets) over HTTP CONNECT through ``socket_path``, which the
    node's proxy serves (``egress.ClusterEgressProxy``); the others direct."""
    return {
        "apiVersion": "apiserver.k8s.io/v1beta1",
        "kind": "EgressSelectorConfiguration",
        "egressSelections": [
            {
                "name": "cluster",
                "connection": {
                    "proxyProtocol": "HTTPConnect",
                    "transport": {"uds": {"udsName": str(socket_path)}},
                },
            }
        ],
    }


def apiserver_args(*, pki: Path, etcd_url: str, port: int, egress: Path | None = None) -> list[str]:
    """kube-apiserver with token auth and RBAC only (no Node authorizer: there are no
    kubelets), and ``egress``, its egress selector configuration file, when given."""
    return [
        f"--etcd-servers={etcd_url}",
        "--bind-address=127.0.0.1",
        "--advertise-address=127.0.0.1",
        f"--secure-port={port}",
        f"--cert-dir={pki}",
        f"--tls-cert-file={pki / 'apiserver.crt'}",
        f"--tls-private-key-file={pki / 'apiserver.key'}",
        f"--client-ca-file={pki / 'ca.crt'}",
        f"--token-auth-file={pki / 'tokens.csv'}",
        "--authorization-mode=RBAC",
        f"--service-account-key-file={pki / 'sa.pub'}",
        f"--service-account-signing-key-file={pki / 'sa.key'}",
        f"--service-account-issuer={SERVICE_ACCOUNT_ISSUER}",
        f"--service-cluster-ip-range={SERVICE_CIDR}",
        "--allow-privileged=true",
        # The `kubernetes` Service endpoint may not be a loopback address; nothing here needs it.
        "--endpoint-reconciler-type=none",
        "--profiling=false",
        "--v=1",
        *([f"--egress-selector-config-file={egress}"] if egress is not None else []),
    ]


def controller_manager_args(*, pki: Path, kubeconfig: Path) -> list[str]:
    """kube-controller-manager with only node-free controllers; no serving port, no election."""
    return [
        f"--kubeconfig={kubeconfig}",
        f"--controllers={','.join(KCM_CONTROLLERS)}",
        "--leader-elect=false",
        "--secure-port=0",
        f"--service-account-private-key-file={pki / 'sa.key'}",
        f"--root-ca-file={pki / 'ca.crt'}",
        "--use-service-account-credentials=false",
        # The defaults (20 qps) slow namespace deletion and garbage collection in tests.
        "--kube-api-qps=200",
        "--kube-api-burst=400",
        "--profiling=false",
        "--v=1",
    ]
