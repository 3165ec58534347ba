"""Fault matrix, Kubernetes API rows: the real client against a fake API that fails on request.

Each row: no wrong deletion while the fault lasts, the worker and ``/healthz`` survive, and
once the fault clears the next pass deletes the stale pod ``web-1`` (exactly once).
"""

from __future__ import annotations

import time

import pytest

from tests.faults.rig import KUBE_TIMEOUT, Rig
from tests.support.fake_kube import Fault
from tests.support.kube_wire import Route

pytestmark = pytest.mark.integration

KIND = "deployment"  # the fake API's one workload is a Deployment


@pytest.mark.parametrize("route", ["list-deployments", "list-pods"])
def test_a_list_answering_500_fails_the_pass_and_the_next_pass_rolls(
    rig: Rig, route: Route
) -> None:
    rig.api.inject(route, Fault(500))
    rig.start()
    assert rig.ticks("error") == 1
    assert rig.api.deletes == []
    assert rig.api.requests_to(route) == 1  # answered once, not retried in a loop
    rig.assert_survived()
    rig.assert_recovers()


def test_a_list_that_hangs_times_out_once_within_the_read_timeout(rig: Rig) -> None:
    rig.api.inject("list-deployments", Fault(0, delay_seconds=8.0), times=5)
    started = time.monotonic()
    rig.start()
    elapsed = time.monotonic() - started
    assert rig.ticks("error") == 1
    # One read timeout (1.5 s here, 30 s in production), not one per urllib3 retry.
    assert elapsed < KUBE_TIMEOUT[1] + 1.5, elapsed
    assert rig.api.requests_to("list-deployments") == 1
    assert rig.api.deletes == []
    rig.assert_survived()
    rig.assert_recovers()


def test_a_throttled_list_does_not_sleep_out_retry_after_inside_the_pass(rig: Rig) -> None:
    rig.api.inject("list-deployments", Fault(429, headers=(("Retry-After", "3600"),)), times=5)
    started = time.monotonic()
    rig.start()
    elapsed = time.monotonic() - started
    # The pass ends at once and says so; the next tick asks again (a poll interval later).
    assert elapsed < 2.0, elapsed
    assert rig.ticks("error") == 1
    assert rig.api.requests_to("list-deployments") == 1
    assert rig.api.deletes == []
    rig.assert_survived()
    rig.assert_recovers()


def test_a_delete_answering_404_is_already_gone_counted_not_an_error(rig: Rig) -> None:
    rig.api.inject("delete", Fault(404))
    rig.start()
    assert [e.outcome for e in rig.last.executed] == ["already-gone"]
    assert (
        rig.sample("autoroll_pod_deletions_not_done_total", reason="already-gone", kind=KIND) == 1
    )
    assert rig.ticks("ok") == 1 and rig.ticks("error") == 0
    assert rig.api.deleted == []
    rig.assert_survived()
    rig.assert_recovers()


def test_a_delete_answering_409_is_replaced_and_not_retried_in_the_pass(rig: Rig) -> None:
    rig.api.inject("delete", Fault(409))
    rig.start()
    assert [e.outcome for e in rig.last.executed] == ["replaced"]
    assert rig.sample("autoroll_pod_deletions_not_done_total", reason="replaced", kind=KIND) == 1
    assert rig.api.requests_to("delete") == 1
    assert rig.api.deleted == []
    rig.assert_survived()
    rig.assert_recovers()


@pytest.mark.parametrize("evict", [True])
def test_a_throttled_eviction_is_blocked_not_an_error_and_the_next_pass_evicts(
    rig: Rig, evict: bool
) -> None:
    """ROLLOUT_METHOD=evict: a 429 means a disruption budget says "not now" — try next tick."""
    rig.api.inject("delete", Fault(429, headers=(("Retry-After", "3600"),)), times=5)
    started = time.monotonic()
    rig.start()
    assert time.monotonic() - started < 2.0
    assert [e.outcome for e in rig.last.executed] == ["blocked-by-disruption-budget"]
    assert (
        rig.sample(
            "autoroll_pod_deletions_not_done_total",
            reason="blocked-by-disruption-budget",
            kind=KIND,
        )
        == 1
    )
    assert rig.ticks("ok") == 1 and rig.ticks("error") == 0
    assert rig.api.requests_to("delete") == 1
    assert rig.api.deleted == []
    rig.assert_survived()
    rig.assert_recovers()
    assert rig.api.deletes[-1] == ("web-1", "uid-web-1")  # an Eviction with the UID


def test_a_throttled_delete_is_one_request_and_waits_for_the_next_pass(rig: Rig) -> None:
    rig.api.inject("delete", Fault(429, headers=(("Retry-After", "3600"),)), times=5)
    started = time.monotonic()
    rig.start()
    elapsed = time.monotonic() - started
    assert elapsed < 2.0, elapsed
    assert [e.outcome for e in rig.last.executed] == ["error"]
    assert rig.api.requests_to("delete") == 1  # never resent inside the pass
    assert rig.api.deleted == []
    rig.assert_survived()
    rig.assert_recovers()


def test_the_api_server_restarting_between_snapshot_and_delete(rig: Rig) -> None:
    """Fake API: it goes away right after answering the pod list, then comes back."""
    rig.api.inject("list-pods", Fault(0, go_down=True))
    rig.start()
    # The fresh read of the workload right before its DELETE finds the API gone (ADR 017):
    # nothing is deleted and the pass ends.
    assert [e.outcome for e in rig.last.executed] == ["read-failed"]
    assert "cannot reach the Kubernetes API" in rig.last.executed[0].detail
    assert rig.api.deletes == []  # the DELETE never arrived: nothing half-done
    rig.assert_survived()

    # Still down: the next pass fails at the snapshot, deletes nothing, survives.
    rig.run_pass()
    assert rig.ticks("error") == 1
    assert rig.api.deletes == []
    rig.assert_survived()

    rig.kube.start()  # same port, same state
    rig.assert_recovers()


def test_a_delete_answered_after_the_read_timeout_is_not_sent_again(rig: Rig) -> None:
    """The API server carries the DELETE out but answers too late: the client has given up.

    The call is not resent (no second deletion from one decision), and the next pass sees
    the truth — the pod gone, its replacement not Ready — and deletes nothing more.
    """
    rig.api.inject("delete", Fault(0, delay_seconds=KUBE_TIMEOUT[1] + 1.0))
    rig.start()
    assert [e.outcome for e in rig.last.executed] == ["error"]
    assert rig.api.requests_to("delete") == 1
    deadline = time.monotonic() + 10
    while rig.api.deleted != ["web-1"] and time.monotonic() < deadline:
        time.sleep(0.05)
    assert rig.api.deleted == ["web-1"]  # carried out by the server, whole
    rig.run_pass()
    assert rig.last.executed == ()  # not settled: the replacement is not Ready
    assert rig.api.requests_to("delete") == 1
    rig.assert_survived()


def test_a_list_answering_401_says_the_credentials_were_rejected_not_forbidden(
    rig: Rig, caplog: pytest.LogCaptureFixture
) -> None:
    """An expired ServiceAccount token is not an RBAC problem: no ClusterRole hint."""
    rig.api.inject("list-deployments", Fault(401))
    rig.start()
    assert rig.ticks("error") == 1
    failure = next(
        r.getMessage() for r in caplog.records if "reconcile pass failed" in r.getMessage()
    )
    assert "401" in failure and "rejected the controller's credentials" in failure
    assert "forbidden" not in failure.lower() and "ClusterRole" not in failure
    assert rig.api.deletes == []
    rig.assert_survived()
    rig.assert_recovers()
