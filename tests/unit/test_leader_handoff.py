"""Two replicas wired by ``build_runtime`` around one fake Lease: only the leader reconciles,
a webhook at the follower makes the leader tick within 2 s, bursts coalesce, bad signatures
do nothing, and a clean shutdown hands leadership over at once."""

from __future__ import annotations

import hashlib
import hmac
import json
import threading
import time
from collections.abc import Iterator, Sequence

import pytest
from prometheus_client import CollectorRegistry

from autoroll.config import Config
from autoroll.controller.handoff import NudgeWatcher
from autoroll.controller.leader import Elector
from autoroll.core.election import Timings
from autoroll.core.model import Enrolled
from autoroll.core.records import LeaseRecord
from autoroll.core.scope import FULL, Scope
from autoroll.edge.receivers import SETTLE_SECONDS
from autoroll.edge.runtime import Runtime, build_runtime
from autoroll.instruments.metrics import Metrics
from tests.support.answering_registry import AnsweringRegistry
from tests.support.empty_cluster import EmptyCluster
from tests.support.fake_lease import FakeLease
from tests.support.ports import free_port
from tests.support.wait import wait_until

SECRET = "webhook-secret-0123456789"
ENV = {
    "FORGEJO_HOST": "git.example.org",
    "FORGEJO_USER": "autoroll",
    "FORGEJO_TOKEN": "token-0123456789",
    "WEBHOOK_SECRET": SECRET,
    "POLL_INTERVAL_SECONDS": "3600",  # only nudges and elections cause passes here
    "LEADER_ELECTION": "true",
    "LEADER_ELECTION_NAMESPACE": "autoroll",
    "LEADER_ELECTION_LEASE": "autoroll",
    "LEADER_ELECTION_LEASE_DURATION_SECONDS": "3",
    "LEADER_ELECTION_RENEW_DEADLINE_SECONDS": "2",
    "LEADER_ELECTION_RETRY_PERIOD_SECONDS": "0.1",
    "DISTRIBUTION_WEBHOOK_TOKEN": "distribution-token-0123456789",
}
#: A distribution registry's notification of a tag pushed to the configured registry.
ENVELOPE = json.dumps(
    {
        "events": [
            {
                "action": "push",
                "target": {"repository": "team/app", "tag": "latest"},
                "request": {"host": "git.example.org"},
            }
        ]
    }
).encode()


class GatedCluster(EmptyCluster):
    """Counts passes (snapshots); ``gate`` can hold a pass open."""

    def __init__(self) -> None:
        self.snapshots = 0
        self.gate = threading.Event()
        self.gate.set()
        self.in_pass = threading.Event()

    def snapshot(self, scope: Scope = FULL) -> Sequence[Enrolled]:
        self.snapshots += 1
        self.in_pass.set()
        self.gate.wait(10)
        self.in_pass.clear()
        return ()


def post(runtime: Runtime, body: bytes = b"{}", signature: str | None = None) -> int:
    signature = signature or hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()
    response = runtime.app.test_client().post(
        "/webhook", data=body, headers={"X-Forgejo-Signature": signature}
    )
    return response.status_code


class Pair:
    def __init__(self) -> None:
        self.lease = FakeLease()
        self.clusters = {name: GatedCluster() for name in ("a", "b")}
        self.runtimes = {
            name: build_runtime(
                Config.from_env(ENV | {"POD_NAME": name, "PROBE_ADDR": f"127.0.0.1:{free_port()}"}),
                cluster=self.clusters[name],
                registry=AnsweringRegistry({}),
                lease=self.lease,
            )
            for name in ("a", "b")
        }

    def leader(self) -> str:
        leaders = [n for n, r in self.runtimes.items() if r.election and r.election.elector.leading]
        assert len(leaders) <= 1, leaders
        return leaders[0] if leaders else ""

    def follower(self) -> str:
        return "b" if self.leader() == "a" else "a"


@pytest.fixture
def pair() -> Iterator[Pair]:
    pair = Pair()
    pair.runtimes["a"].start()
    wait_until(lambda: pair.leader() == "a")
    pair.runtimes["b"].start()
    # The new leader's first pass (nudged on election) is done before each test starts.
    wait_until(lambda: pair.runtimes["a"].worker.passes >= 1)
    yield pair
    for cluster in pair.clusters.values():
        cluster.gate.set()
    for runtime in pair.runtimes.values():
        runtime.stop(timeout=5)


def test_only_the_leader_reconciles_and_the_gauge_says_who_leads(pair: Pair) -> None:
    # The follower's first pass is counted after its metrics and after any snapshot it took.
    wait_until(lambda: pair.runtimes["b"].worker.passes >= 1, what="the follower's first pass")
    assert pair.clusters["b"].snapshots == 0
    assert pair.runtimes["b"].worker.passes >= 1  # its first pass ran, and was skipped
    gauge = {
        n: r.metrics.registry.get_sample_value("autoroll_leader") for n, r in pair.runtimes.items()
    }
    assert gauge == {"a": 1, "b": 0}
    skipped = pair.runtimes["b"].metrics.registry.get_sample_value(
        "autoroll_ticks_total", {"outcome": "skipped"}
    )
    assert skipped is not None and skipped >= 1


def test_a_webhook_at_the_follower_makes_the_leader_tick_within_two_seconds(pair: Pair) -> None:
    before = pair.clusters["a"].snapshots
    assert post(pair.runtimes["b"]) == 202
    latency = wait_until(lambda: pair.clusters["a"].snapshots > before, timeout=2.0)
    assert latency < 2.0
    assert pair.clusters["b"].snapshots == 0
    assert (
        pair.runtimes["b"].metrics.registry.get_sample_value(
            "autoroll_webhook_handoffs_total", {"outcome": "published"}
        )
        == 1
    )
    assert (
        pair.runtimes["a"].metrics.registry.get_sample_value(
            "autoroll_webhook_handoffs_total", {"outcome": "received"}
        )
        == 1
    )


def test_a_webhook_at_the_leader_nudges_it_directly(pair: Pair) -> None:
    before = pair.clusters["a"].snapshots
    assert post(pair.runtimes["a"]) == 202
    wait_until(lambda: pair.clusters["a"].snapshots > before, timeout=2.0)
    assert pair.lease.record is not None and pair.lease.record.nudge == ""
    assert (
        pair.runtimes["a"].metrics.registry.get_sample_value(
            "autoroll_webhook_handoffs_total", {"outcome": "local"}
        )
        == 1
    )


@pytest.mark.parametrize("at", ["follower", "leader"])
def test_a_registry_notification_reaches_the_leader_once_the_tag_is_written(
    pair: Pair, at: str
) -> None:
    """The distribution registry notifies before it writes the tag: the hand-off delivers
    the nudge SETTLE_SECONDS later, from the follower through the Lease or at the leader."""
    replica = pair.runtimes[pair.follower() if at == "follower" else pair.leader()]
    before = pair.clusters["a"].snapshots
    started = time.monotonic()
    response = replica.app.test_client().post(
        "/webhook/distribution",
        data=ENVELOPE,
        headers={"Authorization": f"Bearer {ENV['DISTRIBUTION_WEBHOOK_TOKEN']}"},
    )
    assert response.status_code == 202
    wait_until(lambda: pair.clusters["a"].snapshots > before, timeout=4.0)
    assert time.monotonic() - started >= SETTLE_SECONDS
    assert pair.clusters["b"].snapshots == 0


def test_bad_signatures_at_the_follower_publish_nothing_and_cause_no_pass(pair: Pair) -> None:
    before = pair.clusters["a"].snapshots
    for i in range(200):
        assert post(pair.runtimes["b"], body=f"{i}".encode(), signature="0" * 64) == 403
    time.sleep(1.0)
    assert pair.lease.record is not None and pair.lease.record.nudge == ""
    assert pair.clusters["a"].snapshots == before


def test_a_burst_at_the_follower_during_a_pass_causes_at_most_one_follow_up(pair: Pair) -> None:
    leader = pair.clusters["a"]
    leader.gate.clear()
    pair.runtimes["a"].nudge.nudge()
    assert leader.in_pass.wait(2)
    during = leader.snapshots
    threads = [threading.Thread(target=post, args=(pair.runtimes["b"],)) for _ in range(100)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    time.sleep(1.5)  # the hand-off publishes (rate-limited) and the leader sees it
    leader.gate.set()
    time.sleep(1.5)
    assert leader.snapshots - during <= 1
    assert leader.snapshots - during == 1  # ...and the burst was not lost either
    published = pair.runtimes["b"].metrics.registry.get_sample_value(
        "autoroll_webhook_handoffs_total", {"outcome": "published"}
    )
    assert published is not None and published <= 4  # coalesced, not one per webhook


def test_a_clean_shutdown_hands_leadership_over_at_once(pair: Pair) -> None:
    before = pair.clusters["b"].snapshots
    pair.runtimes["a"].stop(timeout=5)
    # Released, not expired: well under the 3 s lease duration.
    took = wait_until(lambda: pair.leader() == "b", timeout=2.0)
    assert took < 1.0
    wait_until(lambda: pair.clusters["b"].snapshots > before, timeout=2.0)


def test_without_leader_election_a_single_replica_behaves_as_before() -> None:
    env = {k: v for k, v in ENV.items() if not k.startswith("LEADER_ELECTION")}
    env["PROBE_ADDR"] = f"127.0.0.1:{free_port()}"
    cluster = GatedCluster()
    runtime = build_runtime(Config.from_env(env), cluster=cluster, registry=AnsweringRegistry({}))
    assert runtime.election is None
    assert runtime.metrics.registry.get_sample_value("autoroll_leader") == 1
    runtime.start()
    try:
        wait_until(lambda: cluster.snapshots == 1)
        assert post(runtime) == 202
        wait_until(lambda: cluster.snapshots == 2, timeout=2.0)
    finally:
        runtime.stop(timeout=5)


class SilentWatchLease(FakeLease):
    """Every watch ends at once without events, as after a server-side timeout."""

    def watch(self, resource_version: str, timeout_seconds: int) -> Iterator[LeaseRecord]:
        time.sleep(0.01)
        return iter(())


def test_a_nudge_published_between_two_watches_is_delivered_once() -> None:
    lease = SilentWatchLease()
    metrics = Metrics(CollectorRegistry())
    elector = Elector(lease, identity="a", timings=Timings(3, 2, 0.1), metrics=metrics)
    elector.cycle()
    nudges: list[float] = []
    watcher = NudgeWatcher(
        lease, elector=elector, on_nudge=lambda: nudges.append(time.monotonic()), metrics=metrics
    )
    watcher.start()
    try:
        time.sleep(0.1)
        assert nudges == []  # what was on the Lease when we started leading is not a nudge
        lease.publish_nudge("n1")
        elector.cycle()  # the elector's next read carries the new value
        wait_until(lambda: len(nudges) == 1, timeout=2)
        time.sleep(0.3)  # many more (silent) watches: no repeat
        assert len(nudges) == 1
    finally:
        watcher.stop(timeout=2)
