"""The quarantine through whole passes of the real Reconciler: a crash inside the window
quarantines the digest, a restart and a new term find it again in the record, a person's
clear and a new push end it.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

from autoroll.controller.reconciler import Reconciler, TickReport
from autoroll.core.policy import Guardrails
from autoroll.instruments.metrics import Metrics
from tests.support.quarantine import KEY, MemoryQuarantine, restarted
from tests.support.reconciler_fakes import (
    NEW,
    OLD,
    REF,
    T0,
    FakeCluster,
    enrolled,
    pod,
    reconciler_with,
)

# --- whole passes: a restart and a new term find the quarantine --------------------------------

#: Two workloads on one tag; the 30 s window.
WINDOW = Guardrails(deletions_per_period=0, in_flight=0, healthy=timedelta(seconds=30))


def crashing_world() -> FakeCluster:
    """web's replacement restarted inside its window (a crash after Ready); api has not
    rolled yet."""
    fresh = replace(
        restarted(pod("web-3", NEW, created=T0 - timedelta(seconds=20)), 1, ready=True),
        ready_changed_at=T0 - timedelta(seconds=5),
    )
    return FakeCluster(
        [enrolled("web", [pod("web-1"), fresh]), enrolled("api", [pod("api-1"), pod("api-2")])]
    )


def controller(
    cluster: FakeCluster, store: MemoryQuarantine | None, *, term: list[int] | None = None
) -> tuple[Reconciler, Metrics]:
    terms = term or [1]
    return reconciler_with(cluster, guardrails=WINDOW, quarantine=store, term=lambda: terms[0])


def hold_reasons(report: TickReport) -> list[str]:
    """Why the pass's plan held what it held, hold by hold."""
    assert report.plan is not None
    return [h.reason.value for h in report.plan.holds]


def test_a_crash_inside_the_window_quarantines_the_digest_and_no_other_workload_rolls() -> None:
    store = MemoryQuarantine()
    cluster = crashing_world()
    reconciler, metrics = controller(cluster, store)
    report = reconciler.tick()
    assert cluster.deleted == []
    assert report.plan is not None
    assert {h.workload: h.reason.value for h in report.plan.holds} == {
        "shop/deployment/api": "quarantined"
    }
    assert [(e.key, e.digest) for e in store.book.active] == [(KEY, NEW)]
    assert report.quarantine.active == store.book.active
    assert metrics.registry.get_sample_value("autoroll_quarantines_total") == 1


def test_the_quarantine_survives_a_restart_with_no_evidence_left() -> None:
    """The crashed pod is gone (a person deleted it, say): a restarted controller has no
    halt to see, and the record alone holds api."""
    store = MemoryQuarantine()
    cluster = crashing_world()
    controller(cluster, store)[0].tick()
    cluster.items = [enrolled("api", [pod("api-1"), pod("api-2")])]
    restarted_one, _ = controller(cluster, store)
    report = restarted_one.tick()
    assert cluster.deleted == []
    assert hold_reasons(report) == ["quarantined"]


def test_without_a_record_a_restart_forgets_the_quarantine() -> None:
    """What the record is for: the same world with QUARANTINE_CONFIGMAP unset."""
    cluster = crashing_world()
    controller(cluster, None)[0].tick()
    cluster.items = [enrolled("api", [pod("api-1"), pod("api-2")])]
    controller(cluster, None)[0].tick()
    assert [name for _, name, _ in cluster.deleted] == ["api-1"]


def test_a_new_term_reads_the_record_another_leader_wrote() -> None:
    """This replica led before the quarantine; another leader quarantined meanwhile; when
    this one leads again its term starts from the record, not from its old copy."""
    store = MemoryQuarantine()
    cluster = FakeCluster([enrolled("api", [pod("api-1"), pod("api-2")])])
    term = [1]
    follower, _ = controller(cluster, store, term=term)
    follower._keeper.refresh(full=True)  # it read the (empty) record in its first term
    other, _ = controller(crashing_world(), store)
    other.tick()  # the other leader quarantines NEW
    term[0] = 2
    report = follower.tick()
    assert cluster.deleted == []
    assert hold_reasons(report) == ["quarantined"]


def test_a_person_s_clear_is_seen_at_the_next_full_pass_and_the_roll_goes_on() -> None:
    store = MemoryQuarantine()
    cluster = crashing_world()
    reconciler, _ = controller(cluster, store)
    reconciler.tick()
    store.clear(KEY, now=T0)
    cluster.items = [cluster.items[1]]  # the crashed workload rolled back by hand, say
    reconciler.tick()
    assert [name for _, name, _ in cluster.deleted] == ["api-1"]


def test_a_new_push_ends_the_quarantine_in_the_record() -> None:
    store = MemoryQuarantine()
    cluster = crashing_world()
    reconciler, _ = controller(cluster, store)
    reconciler.tick()
    assert store.book.active
    reconciler._registry.answers[REF] = OLD  # type: ignore[attr-defined]
    reconciler.tick()
    assert store.book.entries == {}


def test_a_one_replica_workload_s_replacement_that_fails_quarantines_its_digest() -> None:
    """No stale pod is left to wait behind it, so no rollout is halted in the old sense;
    but the pod made for the new digest crashed inside its window: that is evidence."""
    store = MemoryQuarantine()
    cluster = FakeCluster(
        [enrolled("solo", [pod("solo-1")]), enrolled("api", [pod("api-1"), pod("api-2")])]
    )
    reconciler, _ = controller(cluster, store)
    reconciler.tick()  # solo is the digest's first workload: solo-1 goes, api waits
    assert [name for _, name, _ in cluster.deleted] == ["solo-1"]
    made = T0 + timedelta(seconds=1)
    crashed = replace(
        restarted(pod("solo-2", NEW, created=made), 1, ready=True),
        ready_changed_at=made + timedelta(seconds=8),
    )
    cluster.items = [enrolled("solo", [crashed]), cluster.items[1]]
    reconciler._clock.now = T0 + timedelta(seconds=12)  # type: ignore[attr-defined]
    report = reconciler.tick()
    assert [(e.key, e.reason.value) for e in store.book.active] == [(KEY, "failed-health-window")]
    assert report.plan is not None
    assert {h.workload: h.reason.value for h in report.plan.holds} == {
        "shop/deployment/api": "quarantined"
    }
    assert len(cluster.deleted) == 1
