"""Fault matrix rows that need the real API: kube-apiserver restarting mid-pass, and a secrets
scan over a full run of ``autoroll serve`` against the local control plane.

One private control plane for this module (etcd + kube-apiserver + kube-controller-manager
from ``tests/e2e``), so restarting its API server disturbs no other test; a simulated
kubelet "pulls" from a real docker-registry with htpasswd auth. That world (the ``cluster``
fixture, the API server's restarts, the stale Deployments) is in ``private_cluster.py``; the
controller wired in this process and the checks the rows poll are in
``in_process_controller.py``.
"""

from __future__ import annotations

import base64
import secrets
import time

import pytest

from tests.e2e.controller import running_autoroll
from tests.e2e.helpers import is_ready
from tests.e2e.kubelet_behaviour import Behaviour
from tests.faults.e2e.in_process_controller import (
    BeforeFirstDelete,
    _at_least,
    _exactly,
    _metric,
    controller,
)
from tests.faults.e2e.private_cluster import (
    RESTART_READY_SECONDS,
    Cluster,
    _all_ready,
    _gone,
    _replacements,
    deploy_stale,
    kube_cluster,
    selector,
)
from tests.support.wait import eventually

pytestmark = pytest.mark.e2e


# -- secrets over a full run ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("log_format", "leader"), [("text", False), ("json", False), ("json", True)]
)
def test_no_secret_in_any_output_of_a_full_e2e_roll(
    cluster: Cluster, log_format: str, leader: bool
) -> None:
    """``autoroll serve`` at debug level rolls a Deployment on the real API; its whole output
    (stdout and stderr: autoroll, gunicorn, urllib3) never shows a credential. The third
    run also elects itself leader on a Lease and emits Events."""
    namespace = f"secrets-{log_format}-{(leader and 'ha') or 'one'}-{secrets.token_hex(3)}"
    _, new, _ = deploy_stale(cluster, namespace)
    extra = {"LOG_LEVEL": "debug", "LOG_FORMAT": log_format, "LABEL_SELECTOR": selector(namespace)}
    if leader:
        extra |= {
            "LEADER_ELECTION": "true",
            "LEADER_ELECTION_NAMESPACE": namespace,
            "POD_NAME": "autoroll-0",
            "EMIT_EVENTS": "true",
        }
    with running_autoroll(
        plane=cluster.plane, registry=cluster.registry, poll_seconds=3600, extra_env=extra
    ) as autoroll:
        assert autoroll.webhook(sign=False) == 403
        assert autoroll.webhook(b"forged", sign=False) == 403

        def rolled() -> None:
            autoroll.webhook()  # each valid webhook nudges a pass
            _all_ready(cluster, namespace, 2, new)

        eventually(rolled, timeout=90, what="the roll to v2", interval=0.5)
        secret = autoroll.secret
    assert autoroll.process is not None  # a local process
    code = autoroll.process.wait(5)
    assert code == 0
    output = "\n".join(autoroll.output)
    user, token = cluster.registry.auth
    forbidden = {
        "FORGEJO_TOKEN": token,
        "WEBHOOK_SECRET": secret,
        "registry Basic credentials": base64.b64encode(f"{user}:{token}".encode()).decode(),
        "Kubernetes bearer token": cluster.plane.token,
    }
    assert "deleted stale pod" in output  # the scan read a real roll
    assert ("became leader" in output) is leader
    for what, value in forbidden.items():
        assert value not in output, f"{what} leaked into the output"


# -- kube-apiserver restarts mid-pass ------------------------------------------------------------


def test_the_api_server_is_down_between_snapshot_and_delete(cluster: Cluster) -> None:
    """Stopped after the snapshot; the DELETE finds nobody; back up, the next pass rolls."""
    namespace = f"restart-down-{secrets.token_hex(3)}"
    _, _, uids = deploy_stale(cluster, namespace)
    argv: list[str] = []

    def stop_api_server() -> None:
        argv.extend(cluster.restarts.stop())

    ctl = controller(
        BeforeFirstDelete(kube_cluster(cluster, namespace), stop_api_server), cluster.registry
    )
    try:
        ctl.worker.start()
        eventually(lambda: _at_least(ctl.worker.passes, 1), timeout=60, what="the first pass")
        report = ctl.reports[-1]
        assert [e.outcome for e in report.executed] == ["error"]
        assert "cannot reach the Kubernetes API" in report.executed[0].detail
        ctl.assert_survived()

        # Still down: the next pass fails at the snapshot, and survives.
        ctl.run_pass()
        errors = ctl.metrics.registry.get_sample_value("autoroll_ticks_total", {"outcome": "error"})
        assert errors == 1
        ctl.assert_survived()
    finally:
        if argv:
            cluster.restarts.start(argv)
    assert _gone(cluster, namespace, uids) == set()  # nothing was deleted while it was down

    try:
        report = ctl.run_pass()
        assert [e.outcome for e in report.executed] == ["deleted"]
        assert len(_gone(cluster, namespace, uids)) == 1
        ctl.assert_survived()
    finally:
        ctl.stop()


def test_the_api_server_restarts_between_snapshot_and_delete(cluster: Cluster) -> None:
    """Stopped and started again after the snapshot: the pooled connection is dead, the
    DELETE (with its UID precondition) goes to the new process and removes one pod."""
    namespace = f"restart-up-{secrets.token_hex(3)}"
    _, _, uids = deploy_stale(cluster, namespace)

    def restart_api_server() -> None:
        cluster.restarts.start(cluster.restarts.stop())

    ctl = controller(
        BeforeFirstDelete(kube_cluster(cluster, namespace), restart_api_server), cluster.registry
    )
    try:
        ctl.worker.start()
        # The first pass restarts the API server in its delete step and waits until it is up.
        eventually(
            lambda: _at_least(ctl.worker.passes, 1),
            timeout=RESTART_READY_SECONDS * 3 + 30,
            what="the first pass",
        )
        report = ctl.reports[-1]
        outcomes = [e.outcome for e in report.executed]
        print(f"\nDELETE right after an API server restart: {outcomes}")
        # The dead connection may be noticed too late (an error), or the fresh API server may
        # not serve lists yet (no action). Either way nothing is deleted, and a following pass
        # against the restarted server does the one deletion.
        deadline = time.monotonic() + 90
        while outcomes != ["deleted"] and time.monotonic() < deadline:
            assert outcomes in ([], ["error"]), report.executed
            assert _gone(cluster, namespace, uids) == set()
            report = ctl.run_pass()
            outcomes = [e.outcome for e in report.executed]
        assert outcomes == ["deleted"], [
            (v.verdict, v.reason, v.detail) for d in report.decisions for v in d.containers
        ]
        assert len(_gone(cluster, namespace, uids)) == 1
        ctl.assert_survived()
    finally:
        ctl.stop()


# -- the watch breaks mid-rollout ------------------------------------------------------------


def test_the_watch_breaks_mid_rollout_and_no_second_pod_goes_while_the_replacement_is_unready(
    cluster: Cluster,
) -> None:
    """``autoroll serve`` with its watched cache (the default) deletes the first of three stale
    pods; the replacement (simulated kubelet: held unready) is not Ready. The API server is
    killed and started again, so every watch breaks and the cache relists. Over many passes
    before and after the break, no second pod is deleted; once the replacement is Ready the
    roll goes on to the end (the row is not vacuous)."""
    namespace = f"watch-break-{secrets.token_hex(3)}"
    _, new, uids = deploy_stale(cluster, namespace, replicas=3)
    cluster.kubelet.behave(new, Behaviour(ready_after=24 * 3600))  # v2 pods stay unready
    try:
        extra = {"LABEL_SELECTOR": selector(namespace), "WATCH_CACHE": "true"}
        with running_autoroll(
            plane=cluster.plane, registry=cluster.registry, poll_seconds=5, extra_env=extra
        ) as autoroll:
            eventually(
                lambda: _exactly(len(_gone(cluster, namespace, uids)), 1),
                timeout=120,
                what="the first deletion",
            )
            eventually(
                lambda: _exactly(len(_replacements(cluster, namespace, uids)), 1),
                timeout=60,
                what="the replacement pod",
            )
            relists = _metric(autoroll, "autoroll_cache_relists_total")
            cluster.restarts.start(cluster.restarts.stop())  # every watch breaks
            eventually(
                lambda: _at_least(
                    int(_metric(autoroll, "autoroll_cache_relists_total")), int(relists) + 1
                ),
                timeout=120,
                what="the cache to relist after the break",
            )
            eventually(
                lambda: _exactly(_metric(autoroll, "autoroll_cache_synced"), 1.0),
                timeout=120,
                what="the cache to be synced again",
            )

            def ok_passes() -> int:
                return int(_metric(autoroll, "autoroll_ticks_total", {"outcome": "ok"}))

            passes = ok_passes()
            # Passes on the relisted cache (poll every 5 s, and webhooks): still one gone.
            for n in range(1, 6):
                assert autoroll.webhook() == 202
                eventually(
                    lambda n=n: _at_least(ok_passes(), passes + n),  # type: ignore[misc]
                    timeout=60,
                    what="another pass",
                )
                assert len(_gone(cluster, namespace, uids)) == 1
                replacement = _replacements(cluster, namespace, uids)
                assert len(replacement) == 1 and not is_ready(replacement[0])
            assert len(autoroll.lines("deleted stale pod")) == 1

            cluster.kubelet.behave(new, Behaviour())  # the replacement becomes Ready
            eventually(
                lambda: _all_ready(cluster, namespace, 3, new),
                timeout=180,
                what="the roll to finish after the replacement is Ready",
            )
            assert len(autoroll.lines("deleted stale pod")) == 3
    finally:
        cluster.kubelet.behave(new, Behaviour())
