"""The node's configuration files, rendered from plain values: containerd's config and a
registry's ``hosts.toml``, the pods' CNI network, the KubeletConfiguration.

Pure (no I/O): ``node_start.py`` writes them when it starts a node, ``Node.trust_registry``
when it trusts a registry, and ``test_node_parts.py`` checks them without a node. Why each
setting is what it is: ``node.py``'s docstring.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any


def containerd_config(
    *, shim: str, runc: str, cni_bin: str, cni_conf: Path, certs: Path, sandbox_image: str
) -> str:
    """containerd 2.x config (version 3) for this node.

    Paths under /var and /run are the node's private ones. NRI and the snapshotters that need
    kernel features or cgo are off; runc is Debian's, started by the shim built with
    containerd (an older shim from a distribution package would not work with 2.x).
    """
    return f"""version = 3
root = "/var/lib/containerd"
state = "/run/containerd"
disabled_plugins = [
  "io.containerd.nri.v1.nri",
  "io.containerd.snapshotter.v1.btrfs",
  "io.containerd.snapshotter.v1.zfs",
  "io.containerd.snapshotter.v1.devmapper",
  "io.containerd.snapshotter.v1.erofs",
  "io.containerd.snapshotter.v1.blockfile",
  "io.containerd.tracing.processor.v1.otlp",
  "io.containerd.internal.v1.tracing",
]

[grpc]
  address = "/run/containerd/containerd.sock"

[ttrpc]
  address = "/run/containerd/containerd.sock.ttrpc"

[plugins.'io.containerd.cri.v1.images']
  snapshotter = "overlayfs"
  [plugins.'io.containerd.cri.v1.images'.pinned_images]
    sandbox = "{sandbox_image}"
  [plugins.'io.containerd.cri.v1.images'.registry]
    config_path = "{certs}"

[plugins.'io.containerd.cri.v1.runtime']
  # No CAP_SYS_RESOURCE on these hosts: runc could not lower oom_score_adj.
  restrict_oom_score_adj = true
  enable_selinux = false
  disable_apparmor = true
  cdi_spec_dirs = []
  [plugins.'io.containerd.cri.v1.runtime'.containerd]
    default_runtime_name = "runc"
    [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      runtime_path = "{shim}"
      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
        BinaryName = "{runc}"
        SystemdCgroup = false
  [plugins.'io.containerd.cri.v1.runtime'.cni]
    bin_dirs = ["{cni_bin}"]
    conf_dir = "{cni_conf}"

[plugins.'io.containerd.grpc.v1.cri']
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
"""


def cni_config(*, subnet: str, routes: Sequence[str] = ()) -> dict[str, Any]:
    """A bridge network inside the node's namespace: pods get an address, no way out.

    ``routes``: destinations pods reach through the bridge's gateway, the node (the Service
    range, which kube-proxy turns into endpoints, and the node IP, where CoreDNS answers); no
    default route, so a pod has no way even to try an address outside these."""
    return {
        "cniVersion": "1.0.0",
        "name": "autoroll-e2e",
        "plugins": [
            {
                "type": "bridge",
                "bridge": "cni0",
                "isGateway": True,
                "ipMasq": False,
                "hairpinMode": True,
                "ipam": {
                    "type": "host-local",
                    "ranges": [[{"subnet": subnet}]],
                    "routes": [{"dst": dst} for dst in routes],
                },
            }
        ],
    }


def kubelet_config(
    *, cgroup_root: str, node_ip: str, resolv_conf: Path, cluster_dns: str | None = None
) -> dict[str, Any]:
    """KubeletConfiguration for a sealed-off test node (see the module docstring for why);
    ``cluster_dns``: the nameserver of every ClusterFirst pod (the node's CoreDNS)."""
    config: dict[str, Any] = {
        "apiVersion": "kubelet.config.k8s.io/v1beta1",
        "kind": "KubeletConfiguration",
        "address": node_ip,
        "readOnlyPort": 0,
        "healthzBindAddress": "127.0.0.1",
        "healthzPort": 10248,
        "authentication": {
            "anonymous": {"enabled": False},
            "webhook": {"enabled": False},
            "x509": {},
        },
        "authorization": {"mode": "AlwaysAllow"},
        "cgroupDriver": "cgroupfs",
        "cgroupRoot": cgroup_root,
        "cgroupsPerQOS": True,
        "enforceNodeAllocatable": ["pods"],
        "failCgroupV1": False,
        "failSwapOn": False,
        "oomScoreAdj": 0,
        "containerRuntimeEndpoint": "unix:///run/containerd/containerd.sock",
        "resolvConf": str(resolv_conf),
        "clusterDomain": "cluster.local",
        "volumePluginDir": "/var/lib/kubelet/volume-plugins",
        "serializeImagePulls": False,
        # The host's disk is shared: never evict or garbage-collect images because of it.
        "evictionHard": {
            "memory.available": "50Mi",
            "nodefs.available": "1%",
            "imagefs.available": "1%",
            "nodefs.inodesFree": "1%",
        },
        "imageGCHighThresholdPercent": 100,
        "imageGCLowThresholdPercent": 99,
        "syncFrequency": "10s",
        "nodeStatusUpdateFrequency": "5s",
        "shutdownGracePeriod": "0s",
        "registerNode": True,
        "maxPods": 110,
    }
    if cluster_dns is not None:
        config["clusterDNS"] = [cluster_dns]
    return config


def hosts_toml(*, host: str, authorization: str | None, ca: Path | None = None) -> str:
    """containerd's ``hosts.toml`` for a registry with Basic credentials (None: none, so the
    node pulls only with what the kubelet hands containerd, the pod's pull secrets): plain
    HTTP, or HTTPS verified with the CA file ``ca`` (a private CA's, as a node is configured
    for it)."""
    url = f"https://{host}" if ca is not None else f"http://{host}"
    trust = f'\n  ca = "{ca}"' if ca is not None else ""
    header = (
        f'\n  [host."{url}".header]\n    Authorization = "{authorization}"'
        if authorization is not None
        else ""
    )
    return f"""server = "{url}"

[host."{url}"]
  capabilities = ["pull", "resolve"]{trust}{header}
"""
