"""The ClusterRole follows the rollout method and the workload kinds, proven against the
real API's authorizer.

The controller's adapter runs as a ServiceAccount holding exactly the rules the chart
renders: with ``rolloutMethod: evict`` an eviction succeeds and a plain DELETE is refused
(the Role has no ``pods: delete``); with the default, the reverse. Each kind in
``workloadKinds`` can be listed and no other; ``nodes: get`` only comes with DaemonSets.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from autoroll.core.model import DeleteOutcome, WorkloadKind
from autoroll.kube import ClusterForbiddenError, KubeCluster, connect
from autoroll.kube.secrets import KubeSecrets
from tests.e2e.controlplane import ControlPlane
from tests.e2e.helpers import apps_api, core_api, deployment
from tests.e2e.rbac import cluster_role_kubeconfig
from tests.support.wait import eventually

pytestmark = pytest.mark.e2e

SELECTOR = "aethnet.se/autoroll=true"
IMAGE = "registry.invalid/team/app:latest"


def enrolled_pod(kube: Any, namespace: str) -> tuple[str, str]:
    """An enrolled Deployment of one replica and the pod its ReplicaSet made (name, uid).

    The pod comes from the real Deployment and ReplicaSet controllers, so it is the
    Deployment's own (a bare pod its selector matches is foreign and never listed as its)."""
    apps_api(kube).create_namespaced_deployment(
        namespace, deployment("web", IMAGE, replicas=1, labels={"aethnet.se/autoroll": "true"})
    )

    def made() -> Any:
        pods = core_api(kube).list_namespaced_pod(namespace, label_selector="app=web").items
        assert len(pods) == 1, pods
        return pods[0]

    created = eventually(made, timeout=30, what="the ReplicaSet's pod")
    return str(created.metadata.name), str(created.metadata.uid)


def adapter(kubeconfig: Path, *, evict: bool) -> KubeCluster:
    return KubeCluster(
        label_selector=SELECTOR,
        api_client_factory=lambda: connect({"KUBECONFIG": str(kubeconfig)}),
        evict=evict,
    )


def gone_or_terminating(kube: Any, namespace: str, uid: str) -> None:
    """The pod with ``uid`` is gone or terminating (its ReplicaSet makes a new one)."""
    pods = core_api(kube).list_namespaced_pod(namespace).items
    assert all(p.metadata.deletion_timestamp is not None for p in pods if p.metadata.uid == uid)


@pytest.mark.parametrize("method", ["evict", "delete"])
def test_the_rendered_rules_allow_exactly_the_rollout_methods_one_write(
    control_plane: ControlPlane, kube: Any, namespace: str, tmp_path: Path, method: str
) -> None:
    with cluster_role_kubeconfig(
        control_plane, kube, namespace, tmp_path / "kubeconfig", values=(f"rolloutMethod={method}",)
    ) as kubeconfig:
        name, uid = enrolled_pod(kube, namespace)
        chosen = adapter(kubeconfig, evict=method == "evict")
        other = adapter(kubeconfig, evict=method != "evict")
        [item] = [e for e in chosen.snapshot() if e.workload.namespace == namespace]
        assert [p.name for p in item.pods] == [name]  # deployments: list, pods: list
        refused_rule = "pods: delete" if method == "evict" else "pods/eviction: create"
        with pytest.raises(ClusterForbiddenError, match=refused_rule):
            other.delete_pod(namespace, name, uid)
        assert chosen.delete_pod(namespace, name, uid) is DeleteOutcome.DELETED
        eventually(lambda: gone_or_terminating(kube, namespace, uid), timeout=30, what="pod gone")


@pytest.mark.parametrize(
    ("kinds", "granted"),
    [
        ("{deployment}", [WorkloadKind.DEPLOYMENT]),
        ("{statefulset,daemonset}", [WorkloadKind.STATEFULSET, WorkloadKind.DAEMONSET]),
    ],
)
def test_the_rules_grant_list_on_the_enabled_kinds_only_and_nodes_get_with_daemonsets(
    *,
    control_plane: ControlPlane,
    kube: Any,
    namespace: str,
    tmp_path: Path,
    kinds: str,
    granted: list[WorkloadKind],
) -> None:
    values = (f"workloadKinds={kinds}", "selfRoll=false")
    with cluster_role_kubeconfig(
        control_plane, kube, namespace, tmp_path / "kubeconfig", values=values
    ) as kubeconfig:

        def adapter(*enabled: WorkloadKind) -> KubeCluster:
            return KubeCluster(
                label_selector=SELECTOR,
                api_client_factory=lambda: connect({"KUBECONFIG": str(kubeconfig)}),
                kinds=enabled,
            )

        assert adapter(*granted).snapshot() is not None  # every enabled kind: list allowed
        for kind in set(WorkloadKind) - set(granted):
            with pytest.raises(ClusterForbiddenError, match=f"{kind.resource}: list"):
                adapter(kind).snapshot()
        reader = adapter(*granted)
        if WorkloadKind.DAEMONSET in granted:
            assert reader.node("no-such-node").ready is False  # get allowed; 404 is an answer
        else:
            with pytest.raises(ClusterForbiddenError, match="nodes: get"):
                reader.node("no-such-node")


@pytest.mark.parametrize("pull_secrets", [False, True])
def test_secrets_and_serviceaccounts_are_readable_only_with_pull_secrets_and_never_listed(
    *, control_plane: ControlPlane, kube: Any, namespace: str, tmp_path: Path, pull_secrets: bool
) -> None:
    """ADR 024: the chart grants ``get`` on secrets and serviceaccounts only when a registry
    reads the pods' pull secrets, and never ``list``; the real authorizer agrees."""
    values = (
        "registries[0].host=ghcr.io",
        f"registries[0].pullSecrets={str(pull_secrets).lower()}",
    )
    with cluster_role_kubeconfig(
        control_plane, kube, namespace, tmp_path / "kubeconfig", values=values
    ) as kubeconfig:
        core_api(kube).create_namespaced_secret(
            namespace,
            {
                "metadata": {"name": "regcred"},
                "type": "kubernetes.io/dockerconfigjson",
                "data": {".dockerconfigjson": "eyJhdXRocyI6IHt9fQ=="},  # {"auths": {}}
            },
        )
        secrets = KubeSecrets(api_client_factory=lambda: connect({"KUBECONFIG": str(kubeconfig)}))
        if pull_secrets:
            found = secrets.pull_secret(namespace, "regcred")
            assert found is not None and found.data == {".dockerconfigjson": b'{"auths": {}}'}
            assert secrets.service_account(namespace, "default") == ()
            assert secrets.pull_secret(namespace, "missing") is None
        else:
            with pytest.raises(ClusterForbiddenError, match="secrets: get"):
                secrets.pull_secret(namespace, "regcred")
            with pytest.raises(ClusterForbiddenError, match="serviceaccounts: get"):
                secrets.service_account(namespace, "default")
        # Never a list, whatever the values: a name must be known to read a Secret.
        listing = connect({"KUBECONFIG": str(kubeconfig)})
        with pytest.raises(client.ApiException) as refused:
            client.CoreV1Api(listing).list_namespaced_secret(namespace)
        assert refused.value.status == 403
