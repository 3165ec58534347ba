"""Fault matrix rows for the quarantine (docs/adr/026), against the real API: the record is the
ConfigMap a real kube-apiserver stores, so a restarted controller and a new leader read what
the last one wrote, and a person's ``autoroll quarantine clear`` meets the controller's
compare-and-swap there.

The world: two Deployments on one tag, ``one`` and ``two``; the tag moves to a build whose
pods never become Ready (the simulated kubelet crash-loops it). The controller's health
window (the default, 30 s) sends the digest to one workload first (the guardrails' order
picks which); its replacement fails, halts the roll and quarantines the digest. Then the
evidence is taken away (that workload scaled to 0): only the record can still hold the
other.
"""

from __future__ import annotations

import secrets
from datetime import timedelta
from typing import Any

import pytest
import requests
from prometheus_client import CollectorRegistry

from autoroll.controller.reconciler import Reconciler, TickReport
from autoroll.core.policy import Guardrails
from autoroll.instruments.metrics import Metrics
from autoroll.kube import KubeCluster, KubeQuarantine, connect
from autoroll.registry import RegistryClient
from tests.e2e.helpers import deployment
from tests.e2e.kubelet_behaviour import Behaviour
from tests.faults.e2e.private_cluster import (
    Cluster,
    _all_ready,
    _has_default_sa,
    enrolled,
    selector,
)
from tests.support.autoroll_cli import run_autoroll
from tests.support.registry import ImagePusher
from tests.support.wait import eventually

pytestmark = pytest.mark.e2e

RECORD = "autoroll-quarantine"
APPS = ("one", "two")


def world(cluster: Cluster) -> tuple[str, str, str]:
    """Two enrolled Deployments of ``:latest`` on v1, then v2 pushed, whose pods crash-loop.
    Returns (namespace, v1, v2)."""
    namespace = f"quarantine-{secrets.token_hex(3)}"
    repository = f"faults/{namespace}"
    image = f"{cluster.registry.host}/{repository}:latest"
    pusher = ImagePusher(cluster.registry)
    old = pusher.push_image(repository, "latest", content=f"v1 {namespace}".encode()).digest
    cluster.core.create_namespace({"metadata": {"name": namespace}})
    eventually(lambda: _has_default_sa(cluster, namespace), timeout=30, what="the default SA")
    for name in APPS:
        cluster.apps.create_namespaced_deployment(
            namespace, deployment(name, image, replicas=2, labels=enrolled(namespace))
        )
    eventually(lambda: _all_ready(cluster, namespace, 4, old), timeout=90, what="v1 Ready")
    new = pusher.push_image(repository, "latest", content=f"v2 {namespace}".encode()).digest
    cluster.kubelet.behave(new, Behaviour(crash_loop=True))
    return namespace, old, new


def controller(
    cluster: Cluster,
    namespace: str,
    *,
    leading: list[bool] | None = None,
    term: list[int] | None = None,
) -> Reconciler:
    """A freshly started controller (empty memory), wired as ``autoroll serve`` wires it,
    with the quarantine's record in ``namespace``."""
    env = {"KUBECONFIG": str(cluster.plane.kubeconfig)}
    flag = leading or [True]
    terms = term or [1]
    return Reconciler(
        cluster=KubeCluster(
            label_selector=selector(namespace), api_client_factory=lambda: connect(env)
        ),
        registry=RegistryClient(
            session=requests.Session(),
            base_url=cluster.registry.url,
            user=cluster.registry.auth[0],
            token=cluster.registry.auth[1],
        ),
        metrics=Metrics(CollectorRegistry()),
        registries={cluster.registry.host},
        dry_run=False,
        guardrails=Guardrails(healthy=timedelta(seconds=30)),
        halted_after=timedelta(seconds=2),
        quarantine=KubeQuarantine(
            namespace=namespace, name=RECORD, api_client_factory=lambda: connect(env)
        ),
        leading=lambda: flag[0],
        may_act=lambda: flag[0],
        term=lambda: terms[0],
    )


def on_old(cluster: Cluster, namespace: str, old: str, app: str) -> int:
    """``app``'s live pods still on v1 (two until autoroll deletes one)."""
    pods = cluster.core.list_namespaced_pod(namespace).items
    return len(
        [
            p
            for p in pods
            if p.metadata.name.startswith(f"{app}-")
            and p.metadata.deletion_timestamp is None
            and any(s.image_id.endswith(old) for s in p.status.container_statuses or ())
        ]
    )


def quarantined(cluster: Cluster, namespace: str, reconciler: Reconciler) -> TickReport:
    """Passes until the record holds the digest; the last pass's report."""

    from kubernetes.client.exceptions import ApiException

    def found() -> TickReport:
        report = reconciler.tick()
        try:
            data = cluster.core.read_namespaced_config_map(RECORD, namespace).data or {}
        except ApiException as exc:
            assert exc.status != 404, "no record yet"
            raise
        assert data, "nothing quarantined yet"
        return report

    return eventually(found, timeout=120, interval=1.0, what="the digest quarantined")


def hit_and_spared(cluster: Cluster, namespace: str, old: str) -> tuple[str, str]:
    """The workload the digest reached (one pod replaced) and the one it did not: one pod
    replaced in all."""
    left = {app: on_old(cluster, namespace, old, app) for app in APPS}
    assert sorted(left.values()) == [1, 2], f"one pod replaced in all: {left}"
    hit = min(left, key=left.__getitem__)
    return hit, next(a for a in APPS if a != hit)


def take_away_the_evidence(cluster: Cluster, namespace: str, app: str) -> None:
    """``app`` scaled to 0: no halted pod is left for a controller to find."""
    cluster.apps.patch_namespaced_deployment_scale(app, namespace, {"spec": {"replicas": 0}})

    def gone() -> None:
        pods = [
            p
            for p in cluster.core.list_namespaced_pod(namespace).items
            if p.metadata.name.startswith(f"{app}-")
        ]
        assert pods == [], [p.metadata.name for p in pods]

    eventually(gone, timeout=60, what=f"{app}'s pods gone")


def held(report: TickReport) -> dict[str, str]:
    assert report.plan is not None
    return {h.workload.rpartition("/")[2]: h.reason.value for h in report.plan.holds}


def test_the_quarantine_survives_a_controller_restart(cluster: Cluster) -> None:
    namespace, old, _ = world(cluster)
    first = controller(cluster, namespace)
    quarantined(cluster, namespace, first)
    hit, spared = hit_and_spared(cluster, namespace, old)
    take_away_the_evidence(cluster, namespace, hit)
    restarted = controller(cluster, namespace)  # a new process: nothing in memory
    for _ in range(3):
        report = restarted.tick()
        assert held(report) == {spared: "quarantined"}, held(report)
    assert on_old(cluster, namespace, old, spared) == 2


def test_the_quarantine_survives_a_leader_change(cluster: Cluster) -> None:
    """Replica A leads and quarantines; replica B, which never saw the halt and whose own
    earlier term read an empty record, takes over: its new term reads the record first."""
    namespace, old, _ = world(cluster)
    a_leads, b_leads, b_term = [True], [False], [1]
    a = controller(cluster, namespace, leading=a_leads)
    b = controller(cluster, namespace, leading=b_leads, term=b_term)
    assert b.tick().skipped  # a follower skips passes
    quarantined(cluster, namespace, a)
    hit, spared = hit_and_spared(cluster, namespace, old)
    take_away_the_evidence(cluster, namespace, hit)
    a_leads[0], b_leads[0], b_term[0] = False, True, 2  # A lost the Lease; B took it
    assert a.tick().skipped
    for _ in range(3):
        report = b.tick()
        assert held(report) == {spared: "quarantined"}, held(report)
    assert on_old(cluster, namespace, old, spared) == 2


def test_a_person_s_clear_meets_the_controllers_record_and_the_roll_goes_on(
    cluster: Cluster, tmp_path: Any
) -> None:
    """``autoroll quarantine clear`` (the CLI, as in the controller's pod) writes the real
    ConfigMap; the controller's next full pass reads it and ``next`` rolls onto the digest."""
    namespace, old, _ = world(cluster)
    ctl = controller(cluster, namespace)
    quarantined(cluster, namespace, ctl)
    hit, spared = hit_and_spared(cluster, namespace, old)
    take_away_the_evidence(cluster, namespace, hit)
    env = {
        "KUBECONFIG": str(cluster.plane.kubeconfig),
        "QUARANTINE_CONFIGMAP": RECORD,
        "QUARANTINE_NAMESPACE": namespace,
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp_path),
    }
    listed = run_autoroll("quarantine", "list", env=env)
    assert listed.returncode == 0, listed.stderr
    assert "QUARANTINED" in listed.stdout and "failed-health-window" in listed.stdout
    repository = f"faults/{namespace}"
    done = run_autoroll(
        "quarantine", "clear", f"{cluster.registry.host}/{repository}:latest", env=env
    )
    assert done.returncode == 0, done.stderr
    assert "cleared the quarantine" in done.stdout
    report = ctl.tick()
    assert held(report).get(spared) != "quarantined", held(report)
    eventually(
        lambda: _less_than(on_old(cluster, namespace, old, spared), 2),
        timeout=60,
        what="the spared workload rolling onto the cleared digest",
    )


def _less_than(value: int, ceiling: int) -> int:
    assert value < ceiling, value
    return value
