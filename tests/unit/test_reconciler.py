"""A full reconcile pass driven with hand-written fakes for the cluster, registry and clock
(``tests.support.reconciler_fakes``). Content that differs by name only is in
``test_reconciler_content.py``; what the pass does with its decisions in
``test_reconciler_outcomes.py``.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timedelta

import pytest

from autoroll.core.images import TagRef
from autoroll.core.model import Digest, Enrolled, Unknown
from autoroll.core.policy import Guardrails
from autoroll.core.scope import FULL, Scope
from tests.support import reconciler_fakes as fakes


def test_a_stale_pod_is_deleted_with_its_uid() -> None:
    cluster = fakes.FakeCluster([fakes.enrolled("web", [fakes.pod("web-1")])])
    reconciler, metrics = fakes.make(cluster)
    report = reconciler.tick()
    assert cluster.deleted == [("shop", "web-1", "uid-web-1")]
    assert [e.outcome for e in report.executed] == ["deleted"]
    assert fakes.sample(metrics, "autoroll_pod_deletions_total", mode="real") == 1


def test_dry_run_deletes_nothing_and_logs_the_intended_deletion(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO)
    cluster = fakes.FakeCluster([fakes.enrolled("web", [fakes.pod("web-1")])])
    reconciler, metrics = fakes.make(cluster, dry_run=True)
    report = reconciler.tick()
    assert cluster.deleted == []
    assert [e.outcome for e in report.executed] == ["dry-run"]
    assert fakes.sample(metrics, "autoroll_pod_deletions_total", mode="dry") == 1
    assert fakes.sample(metrics, "autoroll_pod_deletions_total", mode="real") == 0
    [line] = [r for r in caplog.records if "would delete" in r.getMessage()]
    assert "shop/web-1" in line.getMessage()
    assert line.__dict__["running_digest"] == str(fakes.OLD)
    assert line.__dict__["registry_digest"] == str(fakes.NEW)


def test_at_most_one_deletion_per_deployment_per_tick() -> None:
    web = fakes.enrolled("web", [fakes.pod("web-1"), fakes.pod("web-2"), fakes.pod("web-3")])
    api = fakes.enrolled("api", [fakes.pod("api-1"), fakes.pod("api-2")])
    cluster = fakes.FakeCluster([web, api])
    reconciler, metrics = fakes.make(cluster, guardrails=fakes.AT_ONCE)
    reconciler.tick()
    assert sorted(name for _, name, _ in cluster.deleted) == ["api-1", "web-1"]
    assert fakes.sample(metrics, "autoroll_pod_deletions_total", mode="real") == 2


def test_repeated_ticks_while_unsettled_delete_nothing_more() -> None:
    # After the first deletion the replacement is not Ready yet: the next ticks wait.
    cluster = fakes.FakeCluster([fakes.enrolled("web", [fakes.pod("web-1"), fakes.pod("web-2")])])
    reconciler, _ = fakes.make(cluster)
    reconciler.tick()
    cluster.items = [
        fakes.enrolled(
            "web",
            [
                fakes.pod("web-2"),
                fakes.pod("web-3", fakes.NEW, created=fakes.T0 + timedelta(seconds=1), ready=False),
            ],
        )
    ]
    for _ in range(5):
        reconciler.tick()
    assert [name for _, name, _ in cluster.deleted] == ["web-1"]


def test_an_unknown_registry_answer_deletes_nothing_and_is_counted() -> None:
    cluster = fakes.FakeCluster([fakes.enrolled("web", [fakes.pod("web-1")])])
    reconciler, metrics = fakes.make(
        cluster, fakes.FakeRegistry({fakes.REF: Unknown("timeout", "no answer in 5s")})
    )
    report = reconciler.tick()
    assert cluster.deleted == []
    assert report.executed == ()
    assert (
        fakes.sample(metrics, "autoroll_containers_skipped_total", reason="registry-unknown") == 1
    )


def test_each_unique_ref_is_resolved_once_per_tick() -> None:
    other = TagRef(fakes.HOST, "team/other", "latest")
    cluster = fakes.FakeCluster(
        [
            fakes.enrolled("web", [fakes.pod("web-1", fakes.NEW)]),
            fakes.enrolled("api", [fakes.pod("api-1", fakes.NEW)], namespace="blog"),
            fakes.enrolled("job", [], image=f"{fakes.HOST}/team/other:latest"),
            fakes.enrolled("ext", [], image="docker.io/library/nginx:latest"),
        ]
    )
    registry = fakes.FakeRegistry({fakes.REF: fakes.NEW, other: fakes.NEW})
    reconciler, _ = fakes.make(cluster, registry)
    reconciler.tick()
    assert registry.resolve_calls == [[fakes.REF, other]]


def test_nothing_enrolled_asks_the_registry_nothing() -> None:
    registry = fakes.FakeRegistry({})
    reconciler, _ = fakes.make(fakes.FakeCluster([]), registry)
    assert reconciler.tick().decisions == ()
    assert registry.resolve_calls == []


def test_loop_guard_memory_survives_between_ticks() -> None:
    clock = fakes.Clock(fakes.T0)
    # Tick 1 at T0: the registry moves to NEW; web-1 runs OLD and is deleted.
    cluster = fakes.FakeCluster([fakes.enrolled("web", [fakes.pod("web-1", fakes.OLD)])])
    reconciler, metrics = fakes.make(cluster, clock=clock)
    reconciler.tick()
    assert reconciler.sightings[fakes.REF].first_seen_at == fakes.T0
    assert [name for _, name, _ in cluster.deleted] == ["web-1"]
    cluster.deleted.clear()

    # Tick 2, an hour later: its replacement, created after T0, still reports OLD (a
    # runtime quirk).
    clock.now = fakes.T0 + timedelta(hours=1)
    cluster.items = [
        fakes.enrolled(
            "web", [fakes.pod("web-2", fakes.OLD, created=fakes.T0 + timedelta(minutes=5))]
        )
    ]
    report = reconciler.tick()
    assert cluster.deleted == []
    assert report.decisions[0].containers[0].verdict.value == "loop-guard"
    assert fakes.sample(metrics, "autoroll_loop_guard_hits_total") == 1
    assert reconciler.sightings[fakes.REF].first_seen_at == fakes.T0  # not reset by later ticks

    # A reconciler without that memory would have deleted it: the memory is what guards.
    fresh_cluster = fakes.FakeCluster(cluster.items)
    fresh, _ = fakes.make(fresh_cluster, clock=clock)
    fresh.tick()
    assert [name for _, name, _ in fresh_cluster.deleted] == ["web-2"]


def test_a_new_digest_is_a_new_sighting() -> None:
    clock = fakes.Clock(fakes.T0)
    registry = fakes.FakeRegistry({fakes.REF: fakes.NEW})
    reconciler, _ = fakes.make(
        fakes.FakeCluster([fakes.enrolled("web", [fakes.pod("web-1", fakes.NEW)])]),
        registry,
        clock=clock,
    )
    reconciler.tick()
    clock.now = fakes.T0 + timedelta(hours=2)
    newer = Digest("sha256:" + "3" * 64)
    registry.answers[fakes.REF] = newer
    reconciler.tick()
    assert reconciler.sightings[fakes.REF].digest == newer
    assert reconciler.sightings[fakes.REF].first_seen_at == fakes.T0 + timedelta(hours=2)


def test_a_pod_created_in_the_sightings_second_is_rolled_and_its_replacement_is_guarded() -> None:
    """The one-second window is closed: "web-1" is stamped in the very second the pass first
    sees NEW, but that pass listed it before asking the registry, so it is replaced. Its
    replacement, stamped in the same second and still reporting OLD, is spared every pass."""
    second = fakes.T0  # whole seconds, as the API server stamps creationTimestamp
    clock = fakes.Clock(second + timedelta(milliseconds=300))
    cluster = fakes.FakeCluster(
        [fakes.enrolled("web", [fakes.pod("web-1", fakes.OLD, created=second)])]
    )
    # About the loop guard in one second: a pod 0.3 s old is inside any health window.
    no_window = Guardrails(healthy=timedelta(0))
    reconciler, metrics = fakes.make(cluster, clock=clock, guardrails=no_window)
    reconciler.tick()
    assert cluster.deleted == [("shop", "web-1", "uid-web-1")]
    assert reconciler.sightings[fakes.REF].older_uids == frozenset({"uid-web-1"})

    cluster.items = [
        fakes.enrolled("web", [fakes.pod("web-2", fakes.OLD, created=second)])
    ]  # created at .700
    for minutes in (1, 2, 3):
        clock.now = second + timedelta(minutes=minutes)
        report = reconciler.tick()
        assert report.decisions[0].containers[0].verdict.value == "loop-guard"
    assert cluster.deleted == [("shop", "web-1", "uid-web-1")]
    assert fakes.sample(metrics, "autoroll_loop_guard_hits_total") == 3
    assert reconciler.sightings[fakes.REF].older_uids == frozenset({"uid-web-1"}), "never extended"


def test_the_pass_lists_pods_then_reads_the_sighting_clock_then_asks_the_registry() -> None:
    """The order the loop guard relies on: every pod remembered at a sighting was listed
    before the sighting time was read, which was before the registry's answer."""
    steps: list[str] = []

    class Recording(fakes.FakeCluster):
        def snapshot(self, scope: Scope = FULL) -> Sequence[Enrolled]:
            steps.append("list")
            return super().snapshot(scope)

    class RecordingRegistry(fakes.FakeRegistry):
        def resolve(self, refs: Iterable[TagRef]) -> Mapping[TagRef, Digest | Unknown]:
            steps.append("registry")
            return super().resolve(refs)

    class Ticking(fakes.Clock):
        def __call__(self) -> datetime:
            self.now += timedelta(seconds=1)
            steps.append(f"clock {self.now:%S}")
            return self.now

    cluster = Recording(
        [fakes.enrolled("web", [fakes.pod("web-1", fakes.NEW), fakes.pod("web-2", fakes.NEW)])]
    )
    reconciler, _ = fakes.make(
        cluster, RecordingRegistry({fakes.REF: fakes.NEW}), clock=Ticking(fakes.T0)
    )
    reconciler.tick()
    sighting = reconciler.sightings[fakes.REF]
    read = f"clock {sighting.first_seen_at:%S}"
    assert steps.index("list") < steps.index(read) < steps.index("registry"), steps
    assert sighting.older_uids == frozenset({"uid-web-1", "uid-web-2"})


def test_a_platform_child_digest_counts_as_current_and_children_are_cached() -> None:
    cluster = fakes.FakeCluster([fakes.enrolled("web", [fakes.pod("web-1", fakes.CHILD)])])
    registry = fakes.FakeRegistry({fakes.REF: fakes.NEW})
    registry.children_answers[fakes.NEW] = frozenset({fakes.CHILD})
    reconciler, _ = fakes.make(cluster, registry)
    for _ in range(3):
        report = reconciler.tick()
        assert report.decisions[0].containers[0].verdict.value == "current"
    assert cluster.deleted == []
    assert registry.children_calls == [fakes.NEW]  # fetched once, then seeded from the cache


def test_unknown_children_delete_nothing_and_are_asked_again_next_tick() -> None:
    cluster = fakes.FakeCluster([fakes.enrolled("web", [fakes.pod("web-1")])])
    registry = fakes.FakeRegistry({fakes.REF: fakes.NEW})
    registry.children_answers[fakes.NEW] = Unknown("timeout")
    reconciler, metrics = fakes.make(cluster, registry)
    reconciler.tick()
    reconciler.tick()
    assert cluster.deleted == []
    assert registry.children_calls == [fakes.NEW, fakes.NEW]
    assert (
        fakes.sample(metrics, "autoroll_containers_skipped_total", reason="children-unknown") == 2
    )


def test_a_plain_manifest_mismatch_is_stale_after_the_children_check() -> None:
    cluster = fakes.FakeCluster([fakes.enrolled("web", [fakes.pod("web-1")])])
    registry = fakes.FakeRegistry({fakes.REF: fakes.NEW})  # children of NEW: empty (not an index)
    reconciler, _ = fakes.make(cluster, registry)
    reconciler.tick()
    assert [name for _, name, _ in cluster.deleted] == ["web-1"]
