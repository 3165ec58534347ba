"""A full reconcile pass driven with hand-written fakes for the cluster, registry and clock."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime, timedelta

import pytest
from prometheus_client import CollectorRegistry

from autoroll.controller.reconciler import Reconciler
from autoroll.core.decide import ChildrenRequest, ContentRequest
from autoroll.core.images import TagRef
from autoroll.core.model import (
    ContainerView,
    DeleteOutcome,
    Digest,
    Enrolled,
    ImageContent,
    PodView,
    Unknown,
    WorkloadView,
)
from autoroll.core.policy import Guardrails
from autoroll.core.scope import FULL, Scope
from autoroll.instruments.metrics import Metrics
from tests.support.views import deployment_view, pod_view

HOST = "git.example.org"
IMAGE = f"{HOST}/team/app:latest"
REF = TagRef(HOST, "team/app", "latest")
OLD = Digest("sha256:" + "0" * 64)
NEW = Digest("sha256:" + "1" * 64)
CHILD = Digest("sha256:" + "2" * 64)
T0 = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
#: No health window: a new digest reaches every workload on its tag in the same pass, as
#: before the window (with one, it proves itself on one workload first: test_rollorder.py).
AT_ONCE = Guardrails(healthy=timedelta(0))


def pod(
    name: str,
    digest: Digest | str = OLD,
    *,
    namespace: str = "shop",
    created: datetime = T0 - timedelta(days=1),
    ready: bool = True,
    image: str = IMAGE,
) -> PodView:
    image_id = f"{HOST}/team/app@{digest}" if isinstance(digest, Digest) else digest
    return pod_view(
        name,
        image,
        image_id,
        namespace=namespace,
        created=created,
        ready=ready,
        ready_changed_at=created,  # Ready (or not) since it started: past any health window
    )


def enrolled(
    name: str, pods: Sequence[PodView], *, namespace: str = "shop", image: str = IMAGE
) -> Enrolled:
    deployment = deployment_view(
        namespace=namespace,
        name=name,
        replicas=len(pods),
        containers=(ContainerView("app", image, "Always"),),
    )
    return Enrolled(deployment, tuple(pods))


class FakeCluster:
    """``items`` is what the snapshot finds (a cache, say); ``fresh`` what the API says now
    about a workload's pods (by default the same), read by ``read_now``."""

    def __init__(
        self, items: Sequence[Enrolled], outcome: DeleteOutcome = DeleteOutcome.DELETED
    ) -> None:
        self.items = list(items)
        self.fresh: dict[str, Sequence[PodView]] = {}
        self.deleted: list[tuple[str, str, str]] = []
        self.outcome = outcome
        self.fail_on: set[str] = set()
        self.scopes: list[Scope] = []
        self.reads: list[str] = []  # workload keys read fresh, in order
        self.calls: list[str] = []  # "snapshot", "read <key>", "delete <pod>", in order

    def snapshot(self, scope: Scope = FULL) -> Sequence[Enrolled]:
        self.scopes.append(scope)
        self.calls.append("snapshot")
        return self.items

    def read_now(self, workload: WorkloadView) -> Enrolled:
        self.reads.append(workload.key)
        self.calls.append(f"read {workload.key}")
        if workload.key in self.fresh:
            return Enrolled(workload, tuple(self.fresh[workload.key]))
        pods = next((e.pods for e in self.items if e.workload.key == workload.key), ())
        return Enrolled(workload, pods)

    def delete_pod(
        self, namespace: str, name: str, uid: str, *, within: float | None = None
    ) -> DeleteOutcome:
        if name in self.fail_on:
            raise RuntimeError(f"API said no to {name}")
        self.calls.append(f"delete {name}")
        self.deleted.append((namespace, name, uid))
        return self.outcome


class FakeRegistry:
    def __init__(self, answers: Mapping[TagRef, Digest | Unknown]) -> None:
        self.answers = dict(answers)
        self.resolve_calls: list[list[TagRef]] = []
        self.children_answers: dict[Digest, frozenset[Digest] | Unknown] = {}
        self.children_calls: list[Digest] = []
        self.cache: dict[Digest, frozenset[Digest]] = {}  # like the real client's
        # By default each manifest stands for its own config (different digest, different
        # content); tests set other answers, e.g. a mirror's manifest of the target's config.
        self.content_answers: dict[Digest, ImageContent | Unknown] = {}
        self.content_calls: list[ContentRequest] = []
        self.content_cache: dict[Digest, ImageContent] = {}

    def resolve(self, refs: Iterable[TagRef]) -> Mapping[TagRef, Digest | Unknown]:
        asked = list(refs)
        self.resolve_calls.append(asked)
        return {r: self.answers.get(r, Unknown("not-found")) for r in asked}

    def known_children(self) -> Mapping[Digest, frozenset[Digest]]:
        return dict(self.cache)

    def fetch_children(
        self, wanted: Iterable[ChildrenRequest]
    ) -> Mapping[Digest, frozenset[Digest] | Unknown]:
        answers: dict[Digest, frozenset[Digest] | Unknown] = {}
        for item in wanted:
            self.children_calls.append(item.digest)
            answer = self.children_answers.get(item.digest, frozenset())
            if isinstance(answer, frozenset):
                self.cache[item.digest] = answer
            answers[item.digest] = answer
        return answers

    def known_content(self) -> Mapping[Digest, ImageContent]:
        return dict(self.content_cache)

    def fetch_content(
        self, wanted: Iterable[ContentRequest]
    ) -> Mapping[Digest, ImageContent | Unknown]:
        answers: dict[Digest, ImageContent | Unknown] = {}
        for item in wanted:
            self.content_calls.append(item)
            answer = self.content_answers.get(item.digest, ImageContent(frozenset({item.digest})))
            if isinstance(answer, ImageContent):
                self.content_cache[item.digest] = answer
            answers[item.digest] = answer
        return answers


class Clock:
    def __init__(self, now: datetime = T0) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


def make(
    cluster: FakeCluster,
    registry: FakeRegistry,
    *,
    dry_run: bool = False,
    clock: Clock | None = None,
    guardrails: Guardrails | None = None,
) -> tuple[Reconciler, Metrics]:
    metrics = Metrics(CollectorRegistry())
    reconciler = Reconciler(
        cluster=cluster,
        registry=registry,
        metrics=metrics,
        registries={HOST},
        dry_run=dry_run,
        clock=clock or Clock(),
        guardrails=guardrails,
    )
    return reconciler, metrics


def sample(metrics: Metrics, name: str, kind: str = "deployment", **labels: str) -> float:
    """A pass counter's sample; every one is labelled with the workload kind."""
    return metrics.registry.get_sample_value(name, {**labels, "kind": kind}) or 0.0


def test_a_stale_pod_is_deleted_with_its_uid() -> None:
    cluster = FakeCluster([enrolled("web", [pod("web-1")])])
    reconciler, metrics = make(cluster, FakeRegistry({REF: NEW}))
    report = reconciler.tick()
    assert cluster.deleted == [("shop", "web-1", "uid-web-1")]
    assert [e.outcome for e in report.executed] == ["deleted"]
    assert sample(metrics, "autoroll_pod_deletions_total", mode="real") == 1


def test_dry_run_deletes_nothing_and_logs_the_intended_deletion(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO)
    cluster = FakeCluster([enrolled("web", [pod("web-1")])])
    reconciler, metrics = make(cluster, FakeRegistry({REF: NEW}), dry_run=True)
    report = reconciler.tick()
    assert cluster.deleted == []
    assert [e.outcome for e in report.executed] == ["dry-run"]
    assert sample(metrics, "autoroll_pod_deletions_total", mode="dry") == 1
    assert sample(metrics, "autoroll_pod_deletions_total", mode="real") == 0
    [line] = [r for r in caplog.records if "would delete" in r.getMessage()]
    assert "shop/web-1" in line.getMessage()
    assert line.__dict__["running_digest"] == str(OLD)
    assert line.__dict__["registry_digest"] == str(NEW)


def test_at_most_one_deletion_per_deployment_per_tick() -> None:
    web = enrolled("web", [pod("web-1"), pod("web-2"), pod("web-3")])
    api = enrolled("api", [pod("api-1"), pod("api-2")])
    cluster = FakeCluster([web, api])
    reconciler, metrics = make(cluster, FakeRegistry({REF: NEW}), guardrails=AT_ONCE)
    reconciler.tick()
    assert sorted(name for _, name, _ in cluster.deleted) == ["api-1", "web-1"]
    assert sample(metrics, "autoroll_pod_deletions_total", mode="real") == 2


def test_repeated_ticks_while_unsettled_delete_nothing_more() -> None:
    # After the first deletion the replacement is not Ready yet: the next ticks wait.
    cluster = FakeCluster([enrolled("web", [pod("web-1"), pod("web-2")])])
    reconciler, _ = make(cluster, FakeRegistry({REF: NEW}))
    reconciler.tick()
    cluster.items = [
        enrolled(
            "web",
            [pod("web-2"), pod("web-3", NEW, created=T0 + timedelta(seconds=1), ready=False)],
        )
    ]
    for _ in range(5):
        reconciler.tick()
    assert [name for _, name, _ in cluster.deleted] == ["web-1"]


def test_an_unknown_registry_answer_deletes_nothing_and_is_counted() -> None:
    cluster = FakeCluster([enrolled("web", [pod("web-1")])])
    reconciler, metrics = make(cluster, FakeRegistry({REF: Unknown("timeout", "no answer in 5s")}))
    report = reconciler.tick()
    assert cluster.deleted == []
    assert report.executed == ()
    assert sample(metrics, "autoroll_containers_skipped_total", reason="registry-unknown") == 1


def test_each_unique_ref_is_resolved_once_per_tick() -> None:
    other = TagRef(HOST, "team/other", "latest")
    cluster = FakeCluster(
        [
            enrolled("web", [pod("web-1", NEW)]),
            enrolled("api", [pod("api-1", NEW)], namespace="blog"),
            enrolled("job", [], image=f"{HOST}/team/other:latest"),
            enrolled("ext", [], image="docker.io/library/nginx:latest"),
        ]
    )
    registry = FakeRegistry({REF: NEW, other: NEW})
    reconciler, _ = make(cluster, registry)
    reconciler.tick()
    assert registry.resolve_calls == [[REF, other]]


def test_nothing_enrolled_asks_the_registry_nothing() -> None:
    registry = FakeRegistry({})
    reconciler, _ = make(FakeCluster([]), registry)
    assert reconciler.tick().decisions == ()
    assert registry.resolve_calls == []


def test_loop_guard_memory_survives_between_ticks() -> None:
    clock = Clock(T0)
    # Tick 1 at T0: the registry moves to NEW; web-1 runs OLD and is deleted.
    cluster = FakeCluster([enrolled("web", [pod("web-1", OLD)])])
    reconciler, metrics = make(cluster, FakeRegistry({REF: NEW}), clock=clock)
    reconciler.tick()
    assert reconciler.sightings[REF].first_seen_at == T0
    assert [name for _, name, _ in cluster.deleted] == ["web-1"]
    cluster.deleted.clear()

    # Tick 2, an hour later: its replacement, created after T0, still reports OLD (a
    # runtime quirk).
    clock.now = T0 + timedelta(hours=1)
    cluster.items = [enrolled("web", [pod("web-2", OLD, created=T0 + timedelta(minutes=5))])]
    report = reconciler.tick()
    assert cluster.deleted == []
    assert report.decisions[0].containers[0].verdict.value == "loop-guard"
    assert sample(metrics, "autoroll_loop_guard_hits_total") == 1
    assert reconciler.sightings[REF].first_seen_at == T0  # not reset by later ticks

    # A reconciler without that memory would have deleted it: the memory is what guards.
    fresh_cluster = FakeCluster(cluster.items)
    fresh, _ = make(fresh_cluster, FakeRegistry({REF: NEW}), clock=clock)
    fresh.tick()
    assert [name for _, name, _ in fresh_cluster.deleted] == ["web-2"]


def test_a_new_digest_is_a_new_sighting() -> None:
    clock = Clock(T0)
    registry = FakeRegistry({REF: NEW})
    reconciler, _ = make(FakeCluster([enrolled("web", [pod("web-1", NEW)])]), registry, clock=clock)
    reconciler.tick()
    clock.now = T0 + timedelta(hours=2)
    newer = Digest("sha256:" + "3" * 64)
    registry.answers[REF] = newer
    reconciler.tick()
    assert reconciler.sightings[REF].digest == newer
    assert reconciler.sightings[REF].first_seen_at == T0 + timedelta(hours=2)


def test_a_pod_created_in_the_sightings_second_is_rolled_and_its_replacement_is_guarded() -> None:
    """The one-second window is closed: "web-1" is stamped in the very second the pass first
    sees NEW, but that pass listed it before asking the registry, so it is replaced. Its
    replacement, stamped in the same second and still reporting OLD, is spared every pass."""
    second = T0  # whole seconds, as the API server stamps creationTimestamp
    clock = Clock(second + timedelta(milliseconds=300))
    cluster = FakeCluster([enrolled("web", [pod("web-1", OLD, created=second)])])
    # About the loop guard in one second: a pod 0.3 s old is inside any health window.
    no_window = Guardrails(healthy=timedelta(0))
    reconciler, metrics = make(cluster, FakeRegistry({REF: NEW}), clock=clock, guardrails=no_window)
    reconciler.tick()
    assert cluster.deleted == [("shop", "web-1", "uid-web-1")]
    assert reconciler.sightings[REF].older_uids == frozenset({"uid-web-1"})

    cluster.items = [enrolled("web", [pod("web-2", OLD, created=second)])]  # created at .700
    for minutes in (1, 2, 3):
        clock.now = second + timedelta(minutes=minutes)
        report = reconciler.tick()
        assert report.decisions[0].containers[0].verdict.value == "loop-guard"
    assert cluster.deleted == [("shop", "web-1", "uid-web-1")]
    assert sample(metrics, "autoroll_loop_guard_hits_total") == 3
    assert reconciler.sightings[REF].older_uids == frozenset({"uid-web-1"}), "never extended"


def test_the_pass_lists_pods_then_reads_the_sighting_clock_then_asks_the_registry() -> None:
    """The order the loop guard relies on: every pod remembered at a sighting was listed
    before the sighting time was read, which was before the registry's answer."""
    steps: list[str] = []

    class Recording(FakeCluster):
        def snapshot(self, scope: Scope = FULL) -> Sequence[Enrolled]:
            steps.append("list")
            return super().snapshot(scope)

    class RecordingRegistry(FakeRegistry):
        def resolve(self, refs: Iterable[TagRef]) -> Mapping[TagRef, Digest | Unknown]:
            steps.append("registry")
            return super().resolve(refs)

    class Ticking(Clock):
        def __call__(self) -> datetime:
            self.now += timedelta(seconds=1)
            steps.append(f"clock {self.now:%S}")
            return self.now

    cluster = Recording([enrolled("web", [pod("web-1", NEW), pod("web-2", NEW)])])
    reconciler, _ = make(cluster, RecordingRegistry({REF: NEW}), clock=Ticking(T0))
    reconciler.tick()
    sighting = reconciler.sightings[REF]
    read = f"clock {sighting.first_seen_at:%S}"
    assert steps.index("list") < steps.index(read) < steps.index("registry"), steps
    assert sighting.older_uids == frozenset({"uid-web-1", "uid-web-2"})


def test_a_platform_child_digest_counts_as_current_and_children_are_cached() -> None:
    cluster = FakeCluster([enrolled("web", [pod("web-1", CHILD)])])
    registry = FakeRegistry({REF: NEW})
    registry.children_answers[NEW] = frozenset({CHILD})
    reconciler, _ = make(cluster, registry)
    for _ in range(3):
        report = reconciler.tick()
        assert report.decisions[0].containers[0].verdict.value == "current"
    assert cluster.deleted == []
    assert registry.children_calls == [NEW]  # fetched once, then seeded from the cache


def test_unknown_children_delete_nothing_and_are_asked_again_next_tick() -> None:
    cluster = FakeCluster([enrolled("web", [pod("web-1")])])
    registry = FakeRegistry({REF: NEW})
    registry.children_answers[NEW] = Unknown("timeout")
    reconciler, metrics = make(cluster, registry)
    reconciler.tick()
    reconciler.tick()
    assert cluster.deleted == []
    assert registry.children_calls == [NEW, NEW]
    assert sample(metrics, "autoroll_containers_skipped_total", reason="children-unknown") == 2


def test_a_plain_manifest_mismatch_is_stale_after_the_children_check() -> None:
    cluster = FakeCluster([enrolled("web", [pod("web-1")])])
    registry = FakeRegistry({REF: NEW})  # children of NEW: empty (not an index)
    reconciler, _ = make(cluster, registry)
    reconciler.tick()
    assert [name for _, name, _ in cluster.deleted] == ["web-1"]


# -- stale means "runs other content": containerd may name another repository's manifest ----

MIRROR_DIGEST = Digest("sha256:" + "4" * 64)
MIRROR_ID = f"{HOST}/aaa/mirror@{MIRROR_DIGEST}"  # sorts before team/app: containerd names it
NEW_CONFIG = ImageContent(frozenset({Digest("sha256:" + "c" * 64)}))
OLD_CONFIG = ImageContent(frozenset({Digest("sha256:" + "d" * 64)}))


def mirrored(target: ImageContent = NEW_CONFIG, mirror: ImageContent = NEW_CONFIG) -> FakeRegistry:
    registry = FakeRegistry({REF: NEW})
    registry.content_answers = {NEW: target, MIRROR_DIGEST: mirror}
    return registry


def test_pods_named_by_a_mirror_of_the_targets_config_are_never_deleted_across_restarts(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The issue 12 reproduction at the shell: an up-to-date Deployment whose pods report
    another repository's manifest of the same config. No pass deletes, no restart (memory
    and caches lost, the next sighting lists every pod) deletes, and nothing warns."""
    caplog.set_level(logging.INFO)
    pods = [pod(f"web-{i}", MIRROR_ID) for i in range(3)]
    cluster = FakeCluster([enrolled("web", pods)])
    clock = Clock()
    for _restart in range(3):
        reconciler, _ = make(cluster, mirrored(), clock=clock)
        for _ in range(3):
            clock.now += timedelta(minutes=2)
            verdict = reconciler.tick().decisions[0].containers[0]
            assert (verdict.verdict.value, verdict.reason.value) == ("current", "up-to-date")
    assert cluster.deleted == []
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []
    assert "the target's content under another name" in verdict.detail


def test_a_real_push_still_rolls_pods_named_by_a_mirror_of_the_old_config() -> None:
    cluster = FakeCluster([enrolled("web", [pod("web-1", MIRROR_ID), pod("web-2", NEW)])])
    reconciler, _ = make(cluster, mirrored(mirror=OLD_CONFIG))
    report = reconciler.tick()
    assert cluster.deleted == [("shop", "web-1", "uid-web-1")]
    assert report.executed[0].action.from_digest == MIRROR_DIGEST


def test_each_side_is_resolved_once_from_the_repository_it_names() -> None:
    """Children first, then both sides' configs, in one pass; then from the caches, and
    shared by the pass's other Deployments."""
    cluster = FakeCluster(
        [
            enrolled("web", [pod("web-1", MIRROR_ID)]),
            enrolled("api", [pod("api-1", MIRROR_ID)], namespace="blog"),
        ]
    )
    registry = mirrored()
    reconciler, _ = make(cluster, registry)
    for _ in range(3):
        reconciler.tick()
    assert registry.children_calls == [NEW]
    assert sorted(registry.content_calls, key=lambda c: c.repository) == [
        ContentRequest(HOST, "aaa/mirror", MIRROR_DIGEST),
        ContentRequest(HOST, "team/app", NEW),
    ]
    assert cluster.deleted == []


def test_an_unresolvable_pod_is_warned_about_once_per_reference_not_every_pass(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO)
    elsewhere = f"docker.io/team/app@{MIRROR_DIGEST}"
    web_1, web_2 = pod("web-1", elsewhere), pod("web-2", NEW)
    cluster = FakeCluster([enrolled("web", [web_1, web_2])])
    reconciler, metrics = make(cluster, mirrored())

    def warnings() -> list[str]:
        return [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]

    for _ in range(3):
        reconciler.tick()
    assert cluster.deleted == []
    [line] = warnings()
    assert "cannot tell what pod web-1 runs" in line
    assert "another registry host" in line and "delete the pod by hand" in line
    assert sample(metrics, "autoroll_containers_skipped_total", reason="content-unknown") == 3

    # Another reference for the same pod is news: one more warning.
    cluster.items = [enrolled("web", [pod("web-1", f"docker.io/x/y@{MIRROR_DIGEST}"), web_2])]
    reconciler.tick()
    reconciler.tick()
    assert len(warnings()) == 2
    # A pod no longer listed is forgotten (the memory is bounded by the listed pods).
    cluster.items = [enrolled("web", [web_2])]
    reconciler.tick()
    cluster.items = [enrolled("web", [web_1, web_2])]
    reconciler.tick()
    assert len(warnings()) == 3


def test_a_target_whose_configs_cannot_be_resolved_warns_every_pass(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO)
    cluster = FakeCluster([enrolled("web", [pod("web-1", MIRROR_ID), pod("web-2")])])
    registry = mirrored(target=NEW_CONFIG)
    registry.content_answers[NEW] = Unknown("timeout", "no answer in 5s")
    reconciler, _ = make(cluster, registry)
    reconciler.tick()
    reconciler.tick()
    assert cluster.deleted == []
    lines = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert [r.__dict__["reason"] for r in lines] == ["target-content-unknown"] * 2
    # Not cached: asked again next pass.
    assert [c.digest for c in registry.content_calls].count(NEW) == 2


def test_a_targets_configs_are_remembered_so_a_push_rolls_when_the_registry_drops_it(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Gitea and Forgejo answer 404 for a tag's previous manifest once it is pushed again.
    A controller that saw it as the target resolved its configs then, and rolls; one that
    starts after the push cannot tell what the pods run, and says so once."""
    caplog.set_level(logging.INFO)
    cluster = FakeCluster([enrolled("web", [pod("web-1"), pod("web-2")])])
    registry = FakeRegistry({REF: OLD})
    registry.content_answers = {OLD: OLD_CONFIG, NEW: NEW_CONFIG}
    clock = Clock()
    reconciler, _ = make(cluster, registry, clock=clock)
    reconciler.tick()  # steady state: every pod runs the target
    assert registry.content_calls == [ContentRequest(HOST, "team/app", OLD)]

    registry.answers[REF] = NEW  # the push; the registry drops OLD's manifest
    registry.content_answers[OLD] = Unknown("not-found", "HTTP 404")
    clock.now += timedelta(minutes=2)
    reconciler.tick()
    assert cluster.deleted == [("shop", "web-1", "uid-web-1")]

    started_after_the_push, _ = make(
        FakeCluster([enrolled("web", [pod("web-2")])]), registry_without_cache(registry)
    )
    verdict = started_after_the_push.tick().decisions[0].containers[0]
    assert (verdict.verdict.value, verdict.reason.value) == ("skipped", "content-unknown")
    [line] = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert "no longer holds it" in line and "delete the pod by hand" in line


def registry_without_cache(registry: FakeRegistry) -> FakeRegistry:
    """The same registry as a freshly started process's client sees it."""
    fresh = FakeRegistry(registry.answers)
    fresh.content_answers = dict(registry.content_answers)
    return fresh


def test_a_failed_deletion_is_logged_and_the_pass_goes_on(caplog: pytest.LogCaptureFixture) -> None:
    cluster = FakeCluster(
        [enrolled("web", [pod("web-1")]), enrolled("api", [pod("api-1")], namespace="blog")]
    )
    cluster.fail_on = {"api-1"}
    reconciler, _ = make(cluster, FakeRegistry({REF: NEW}), guardrails=AT_ONCE)
    report = reconciler.tick()
    assert [name for _, name, _ in cluster.deleted] == ["web-1"]
    assert sorted(e.outcome for e in report.executed) == ["deleted", "error"]
    assert "API said no to api-1" in caplog.text


@pytest.mark.parametrize("outcome", [DeleteOutcome.ALREADY_GONE, DeleteOutcome.REPLACED])
def test_a_pod_already_gone_is_not_counted_as_a_deletion(outcome: DeleteOutcome) -> None:
    cluster = FakeCluster([enrolled("web", [pod("web-1")])], outcome=outcome)
    reconciler, metrics = make(cluster, FakeRegistry({REF: NEW}))
    reconciler.tick()
    assert sample(metrics, "autoroll_pod_deletions_total", mode="real") == 0
    assert sample(metrics, "autoroll_pod_deletions_not_done_total", reason=outcome.value) == 1


def test_stopping_while_deciding_abandons_the_pass_and_deletes_nothing() -> None:
    # The guardrails plan over the whole pass: a pass cut short is never acted on in part.
    cluster = FakeCluster([enrolled("a", [pod("a-1")]), enrolled("b", [pod("b-1")])])
    reconciler, _ = make(cluster, FakeRegistry({REF: NEW}))
    answers = iter([False, True])
    report = reconciler.tick(lambda: next(answers))
    assert report.abandoned
    assert [d.name for d in report.decisions] == ["a"]
    assert report.plan is None
    assert cluster.deleted == []


def test_stopping_between_deletions_leaves_the_rest_undone() -> None:
    cluster = FakeCluster([enrolled("a", [pod("a-1")]), enrolled("b", [pod("b-1")])])
    reconciler, _ = make(cluster, FakeRegistry({REF: NEW}), guardrails=AT_ONCE)
    answers = iter([False, False, False, True])  # two decisions, one deletion, then stop
    report = reconciler.tick(lambda: next(answers))
    assert report.abandoned
    assert report.plan is not None and len(report.plan.go) == 2
    first = report.plan.go[0]
    assert cluster.deleted == [("shop", first.name, first.uid)]


def test_one_log_line_per_decision_names_workload_kind_pod_image_and_both_digests(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO)
    cluster = FakeCluster(
        [
            enrolled("web", [pod("web-1")]),
            enrolled("api", [pod("api-1", NEW)]),
            enrolled("ext", [pod("ext-1")], image="docker.io/library/nginx:latest"),
        ]
    )
    reconciler, _ = make(cluster, FakeRegistry({REF: NEW}))
    reconciler.tick()
    decisions = [r for r in caplog.records if r.__dict__.get("event") == "decision"]
    lines = {r.__dict__["workload"]: r.__dict__ for r in decisions}
    assert set(lines) == {"shop/deployment/web", "shop/deployment/api", "shop/deployment/ext"}
    assert {r.__dict__["kind"] for r in decisions} == {"deployment"}
    web = lines["shop/deployment/web"]
    assert (web["pod"], web["image"], web["verdict"]) == ("web-1", IMAGE, "stale")
    assert (web["running_digest"], web["registry_digest"]) == (str(OLD), str(NEW))
    assert web["settled"] == "settled"
    assert any(r.getMessage().startswith("shop/deployment/web app: stale") for r in decisions)
    api = lines["shop/deployment/api"]
    assert api["verdict"] == "current"
    assert api["running_digest"] == api["registry_digest"] == str(NEW)
    assert lines["shop/deployment/ext"]["verdict"] == "skipped"
    assert lines["shop/deployment/ext"]["reason"] == "other-host"


def test_a_pull_policy_that_is_not_always_warns_every_tick(
    caplog: pytest.LogCaptureFixture,
) -> None:
    item = enrolled("web", [pod("web-1")])
    item = Enrolled(
        deployment_view("shop", "web", 1, (ContainerView("app", IMAGE, "IfNotPresent"),)), item.pods
    )
    cluster = FakeCluster([item])
    reconciler, metrics = make(cluster, FakeRegistry({REF: NEW}))
    reconciler.tick()
    reconciler.tick()
    warnings = [
        r
        for r in caplog.records
        if r.levelno == logging.WARNING and "imagePullPolicy" in r.getMessage()
    ]
    assert len(warnings) == 2
    assert cluster.deleted == []
    assert (
        sample(metrics, "autoroll_containers_skipped_total", reason="pull-policy-not-always") == 2
    )


def test_a_cluster_error_propagates_to_the_worker() -> None:
    class Down(FakeCluster):
        def snapshot(self, scope: Scope = FULL) -> Sequence[Enrolled]:
            raise ConnectionError("refused")

    reconciler, _ = make(Down([]), FakeRegistry({}))
    with pytest.raises(ConnectionError):
        reconciler.tick()
