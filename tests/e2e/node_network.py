"""Service routing and cluster DNS for the real node: kube-proxy and CoreDNS.

What a user's cluster has and the node lacked: a pod that asks a Service by its name (the
chart's ``helm test`` pod asks ``/readyz`` at ``<release>.<namespace>.svc``) needs a DNS
server that knows the cluster's Services and a proxy that turns a ClusterIP into an
endpoint. Both are the real programs, built from their Go modules by ``scripts/tools.sh
node``, run as node processes inside the node's namespaces (``node.py``), the way a
distribution that runs them outside pods does:

- **kube-proxy**, nftables mode: its rules live in a table of its own in the node's network
  namespace, so they vanish with it. Two host limits are left alone on purpose: the conntrack
  sysctls (``maxPerCore: 0``; they are global and a network namespace may not set them) and
  its OOM score (no ``CAP_SYS_RESOURCE`` here, as for the kubelet).
- **CoreDNS** on the node's IP, port 53, with the ``kubernetes`` plugin and nothing else: a
  cluster name answers; any other name gets no answer from anywhere (no ``forward``: nothing
  leaves the node). The kubelet's ``clusterDNS`` points pods at it.

Identities are a cluster's usual ones: kube-proxy is the user ``system:kube-proxy``, which
the API server's bootstrap policy binds to ``system:node-proxier``; CoreDNS is
``system:coredns``, granted what CoreDNS's own deployment manifests grant it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

KUBE_PROXY_USER = "system:kube-proxy"
COREDNS_USER = "system:coredns"
COREDNS_RBAC_NAME = "autoroll-e2e:coredns"
#: Inside the node's network namespace only: nothing else listens there.
KUBE_PROXY_HEALTHZ = "127.0.0.1:10256"
COREDNS_READY = "127.0.0.1:8181"
CLUSTER_DOMAIN = "cluster.local"


def kube_proxy_config(*, kubeconfig: Path, node_name: str, cluster_cidr: str) -> dict[str, Any]:
    """KubeProxyConfiguration of the node's kube-proxy (see the module docstring)."""
    return {
        "apiVersion": "kubeproxy.config.k8s.io/v1alpha1",
        "kind": "KubeProxyConfiguration",
        "mode": "nftables",
        "clientConnection": {"kubeconfig": str(kubeconfig)},
        "hostnameOverride": node_name,
        "clusterCIDR": cluster_cidr,
        "healthzBindAddress": KUBE_PROXY_HEALTHZ,
        "metricsBindAddress": "127.0.0.1:10249",
        "oomScoreAdj": 0,
        "conntrack": {
            "maxPerCore": 0,
            "min": 0,
            "tcpEstablishedTimeout": "0s",
            "tcpCloseWaitTimeout": "0s",
        },
        "nftables": {"syncPeriod": "30s", "minSyncPeriod": "0s"},
    }


def corefile(*, bind: str, kubeconfig: Path) -> str:
    """CoreDNS's configuration: the cluster's names only, answered on ``bind``:53."""
    return f""".:53 {{
    bind {bind}
    errors
    ready {COREDNS_READY}
    kubernetes {CLUSTER_DOMAIN} in-addr.arpa ip6.arpa {{
        kubeconfig {kubeconfig}
        fallthrough in-addr.arpa ip6.arpa
        ttl 5
    }}
}}
"""


def coredns_rbac() -> tuple[dict[str, Any], dict[str, Any]]:
    """The ClusterRole and ClusterRoleBinding of ``system:coredns``: list and watch of what the
    ``kubernetes`` plugin reads (CoreDNS's deployment manifests grant the same)."""
    role = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": COREDNS_RBAC_NAME},
        "rules": [
            {
                "apiGroups": [""],
                "resources": ["endpoints", "services", "pods", "namespaces"],
                "verbs": ["list", "watch"],
            },
            {
                "apiGroups": ["discovery.k8s.io"],
                "resources": ["endpointslices"],
                "verbs": ["list", "watch"],
            },
        ],
    }
    return role, cluster_role_binding(COREDNS_RBAC_NAME, COREDNS_RBAC_NAME, "User", COREDNS_USER)


def cluster_role_binding(name: str, role: str, kind: str, subject: str) -> dict[str, Any]:
    """A ClusterRoleBinding ``name`` of the ClusterRole ``role`` to one ``kind`` (User or
    Group) ``subject``."""
    group = "rbac.authorization.k8s.io"
    return {
        "apiVersion": f"{group}/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": name},
        "roleRef": {"apiGroup": group, "kind": "ClusterRole", "name": role},
        "subjects": [{"apiGroup": group, "kind": kind, "name": subject}],
    }


def http_probe_script(url: str) -> str:
    """A Python one-liner that exits 0 if ``url`` answers 200 (run inside the node, whose
    loopback the host cannot see)."""
    return (
        "import sys, urllib.request\n"
        "try:\n"
        f"    sys.exit(0 if urllib.request.urlopen({url!r}, timeout=2).status == 200 else 1)\n"
        "except Exception:\n"
        "    sys.exit(1)\n"
    )
