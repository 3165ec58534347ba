"""The node's pure parts, which need no node: the configs it writes for containerd, the
kubelet, CoreDNS, kube-proxy and the CNI network, cgroup mount parsing, and the leftovers
diff that checks a node left nothing behind (``tests/e2e/node_config.py``, ``node_process.py``,
``node_host.py``)."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from tests.e2e.node import NODE_IP
from tests.e2e.node_config import cni_config, containerd_config, hosts_toml, kubelet_config
from tests.e2e.node_host import HostState, _owner_tag, leftovers
from tests.e2e.node_network import (
    CLUSTER_DOMAIN,
    COREDNS_USER,
    coredns_rbac,
    corefile,
    kube_proxy_config,
)
from tests.e2e.node_process import cgroup_mounts

pytestmark = pytest.mark.e2e


def test_containerd_config_has_the_settings_these_hosts_need() -> None:
    text = containerd_config(
        shim="/x/containerd-shim-runc-v2",
        runc="/usr/sbin/runc",
        cni_bin="/usr/lib/cni",
        cni_conf=Path("/n/etc/cni"),
        certs=Path("/n/etc/certs.d"),
        sandbox_image="127.0.0.1:5000/e2e-node/pause:1",
    )
    config = tomllib.loads(text)
    runtime = config["plugins"]["io.containerd.cri.v1.runtime"]
    assert runtime["restrict_oom_score_adj"] is True  # no CAP_SYS_RESOURCE here
    runc = runtime["containerd"]["runtimes"]["runc"]
    assert runc["runtime_path"] == "/x/containerd-shim-runc-v2"
    assert runc["options"] == {"BinaryName": "/usr/sbin/runc", "SystemdCgroup": False}
    images = config["plugins"]["io.containerd.cri.v1.images"]
    assert images["registry"]["config_path"] == "/n/etc/certs.d"
    assert images["pinned_images"]["sandbox"] == "127.0.0.1:5000/e2e-node/pause:1"
    assert "io.containerd.nri.v1.nri" in config["disabled_plugins"]  # would write /run/nri


def test_kubelet_config_lifts_the_refusals_of_these_hosts() -> None:
    config = kubelet_config(cgroup_root="/autoroll-node-x", node_ip=NODE_IP, resolv_conf=Path("/r"))
    assert config["failCgroupV1"] is False
    assert config["failSwapOn"] is False
    assert config["oomScoreAdj"] == 0
    assert config["cgroupDriver"] == "cgroupfs"
    assert config["cgroupRoot"] == "/autoroll-node-x"
    assert config["volumePluginDir"].startswith("/var/")  # not /usr/libexec/kubernetes
    assert config["readOnlyPort"] == 0


def test_pods_ask_the_nodes_coredns_only_when_the_node_runs_one() -> None:
    plain = kubelet_config(cgroup_root="/x", node_ip=NODE_IP, resolv_conf=Path("/r"))
    assert "clusterDNS" not in plain
    served = kubelet_config(
        cgroup_root="/x", node_ip=NODE_IP, resolv_conf=Path("/r"), cluster_dns=NODE_IP
    )
    assert served["clusterDNS"] == [NODE_IP] and served["clusterDomain"] == CLUSTER_DOMAIN


def test_kube_proxy_leaves_the_hosts_global_settings_alone() -> None:
    config = kube_proxy_config(
        kubeconfig=Path("/n/etc/kube-proxy.kubeconfig"), node_name="n", cluster_cidr="198.18.0.0/24"
    )
    assert config["mode"] == "nftables"  # a table of its own, gone with the namespace
    assert config["conntrack"]["maxPerCore"] == 0  # nf_conntrack_max is global
    assert config["oomScoreAdj"] == 0  # no CAP_SYS_RESOURCE here
    assert config["healthzBindAddress"].startswith("127.0.0.1:")
    assert config["hostnameOverride"] == "n"


def test_coredns_answers_cluster_names_only_and_forwards_nothing() -> None:
    text = corefile(bind=NODE_IP, kubeconfig=Path("/n/etc/coredns.kubeconfig"))
    assert f"bind {NODE_IP}" in text
    assert (
        f"kubernetes {CLUSTER_DOMAIN} " in text and "kubeconfig /n/etc/coredns.kubeconfig" in text
    )
    assert "forward" not in text and "proxy" not in text
    role, binding = coredns_rbac()
    verbs = {v for rule in role["rules"] for v in rule["verbs"]}
    assert verbs == {"list", "watch"}  # reads only
    assert binding["subjects"][0]["name"] == COREDNS_USER


def test_registry_hosts_file_is_plain_http_with_credentials() -> None:
    config = tomllib.loads(hosts_toml(host="127.0.0.1:5000", authorization="Basic eDp5"))
    assert config["server"] == "http://127.0.0.1:5000"
    host = config["host"]["http://127.0.0.1:5000"]
    assert host["capabilities"] == ["pull", "resolve"]
    assert host["header"] == {"Authorization": "Basic eDp5"}


def test_cni_network_has_no_masquerade_and_no_default_route() -> None:
    bridge = cni_config(subnet="198.18.0.0/24")["plugins"][0]
    assert bridge["type"] == "bridge" and bridge["ipMasq"] is False
    assert bridge["ipam"]["routes"] == [] and not bridge.get("isDefaultGateway")
    served = cni_config(subnet="198.18.0.0/24", routes=["10.0.0.0/24", f"{NODE_IP}/32"])
    routes = [r["dst"] for r in served["plugins"][0]["ipam"]["routes"]]
    assert routes == ["10.0.0.0/24", f"{NODE_IP}/32"]  # Services and CoreDNS, nothing else


def test_cgroup_mounts_reads_v1_and_v2_hierarchies() -> None:
    mountinfo = "\n".join(
        [
            "30 25 0:26 / /sys/fs/cgroup/memory rw,relatime shared:9 - cgroup cgroup rw,memory",
            "31 25 0:27 / /sys/fs/cgroup/unified rw,relatime shared:10 - cgroup2 cgroup2 rw",
            "32 25 0:28 / /proc rw,relatime shared:11 - proc proc rw",
        ]
    )
    assert cgroup_mounts(mountinfo) == [
        Path("/sys/fs/cgroup/memory"),
        Path("/sys/fs/cgroup/unified"),
    ]


def test_leftovers_name_only_what_appeared() -> None:
    before = HostState(
        paths=frozenset({"/etc/cni/net.d"}),
        mounts=frozenset({"/"}),
        netns=frozenset(),
        cgroups=frozenset(),
    )
    after = HostState(
        paths=frozenset({"/etc/cni/net.d", "/var/lib/kubelet"}),
        mounts=frozenset({"/", "/var/lib/kubelet"}),
        netns=frozenset({"cni-1"}),
        cgroups=frozenset({"/sys/fs/cgroup/pids/autoroll-node-1"}),
    )
    assert leftovers(before, before) == []
    assert leftovers(before, after) == [
        "host path /var/lib/kubelet",
        "mount /var/lib/kubelet",
        "network namespace cni-1",
        "cgroup /sys/fs/cgroup/pids/autoroll-node-1",
    ]


def test_leftovers_leave_out_a_node_another_live_runner_owns(tmp_path: Path) -> None:
    """A session that starts on a shared machine while this one runs is that session's to
    check; a node whose runner is gone is still reported (and reaped by the next node)."""
    live = tmp_path / "autoroll-node-live"
    dead = tmp_path / "autoroll-node-dead"
    for directory, tag, name in (
        (live, f"1:{_owner_tag(1).partition(':')[2]}", "autoroll-node-aaaa"),
        (dead, "999999999:gone-long-ago", "autoroll-node-bbbb"),
    ):
        directory.mkdir()
        (directory / "owner").write_text(f"{tag} {name}\n")
    before = HostState(
        paths=frozenset(), mounts=frozenset(), netns=frozenset(), cgroups=frozenset()
    )
    after = HostState(
        paths=frozenset(),
        mounts=frozenset(),
        netns=frozenset(),
        cgroups=frozenset(
            {"/sys/fs/cgroup/pids/autoroll-node-aaaa", "/sys/fs/cgroup/pids/autoroll-node-bbbb"}
        ),
    )
    assert leftovers(before, after, tmp_path) == ["cgroup /sys/fs/cgroup/pids/autoroll-node-bbbb"]
