"""A full reconcile pass where stale means "runs other content": containerd may name another
repository's manifest; each side resolved once, unresolvable pods and targets warned about,
a target's configs remembered.
"""

from __future__ import annotations

import logging
from datetime import timedelta

import pytest

from autoroll.core.decide import ContentRequest
from autoroll.core.model import Digest, ImageContent, Unknown
from tests.support import reconciler_fakes as fakes

# -- stale means "runs other content": containerd may name another repository's manifest ----

MIRROR_DIGEST = Digest("sha256:" + "4" * 64)
MIRROR_ID = f"{fakes.HOST}/aaa/mirror@{MIRROR_DIGEST}"  # sorts before team/app: containerd names it
NEW_CONFIG = ImageContent(frozenset({Digest("sha256:" + "c" * 64)}))
OLD_CONFIG = ImageContent(frozenset({Digest("sha256:" + "d" * 64)}))


def mirrored(
    target: ImageContent = NEW_CONFIG, mirror: ImageContent = NEW_CONFIG
) -> fakes.FakeRegistry:
    registry = fakes.FakeRegistry({fakes.REF: fakes.NEW})
    registry.content_answers = {fakes.NEW: target, MIRROR_DIGEST: mirror}
    return registry


def test_pods_named_by_a_mirror_of_the_targets_config_are_never_deleted_across_restarts(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The issue 12 reproduction at the shell: an up-to-date Deployment whose pods report
    another repository's manifest of the same config. No pass deletes, no restart (memory
    and caches lost, the next sighting lists every pod) deletes, and nothing warns."""
    caplog.set_level(logging.INFO)
    pods = [fakes.pod(f"web-{i}", MIRROR_ID) for i in range(3)]
    cluster = fakes.FakeCluster([fakes.enrolled("web", pods)])
    clock = fakes.Clock()
    for _restart in range(3):
        reconciler, _ = fakes.make(cluster, mirrored(), clock=clock)
        for _ in range(3):
            clock.now += timedelta(minutes=2)
            verdict = reconciler.tick().decisions[0].containers[0]
            assert (verdict.verdict.value, verdict.reason.value) == ("current", "up-to-date")
    assert cluster.deleted == []
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []
    assert "the target's content under another name" in verdict.detail


def test_a_real_push_still_rolls_pods_named_by_a_mirror_of_the_old_config() -> None:
    cluster = fakes.FakeCluster(
        [fakes.enrolled("web", [fakes.pod("web-1", MIRROR_ID), fakes.pod("web-2", fakes.NEW)])]
    )
    reconciler, _ = fakes.make(cluster, mirrored(mirror=OLD_CONFIG))
    report = reconciler.tick()
    assert cluster.deleted == [("shop", "web-1", "uid-web-1")]
    assert report.executed[0].action.from_digest == MIRROR_DIGEST


def test_each_side_is_resolved_once_from_the_repository_it_names() -> None:
    """Children first, then both sides' configs, in one pass; then from the caches, and
    shared by the pass's other Deployments."""
    cluster = fakes.FakeCluster(
        [
            fakes.enrolled("web", [fakes.pod("web-1", MIRROR_ID)]),
            fakes.enrolled("api", [fakes.pod("api-1", MIRROR_ID)], namespace="blog"),
        ]
    )
    registry = mirrored()
    reconciler, _ = fakes.make(cluster, registry)
    for _ in range(3):
        reconciler.tick()
    assert registry.children_calls == [fakes.NEW]
    assert sorted(registry.content_calls, key=lambda c: c.repository) == [
        ContentRequest(fakes.HOST, "aaa/mirror", MIRROR_DIGEST),
        ContentRequest(fakes.HOST, "team/app", fakes.NEW),
    ]
    assert cluster.deleted == []


def test_an_unresolvable_pod_is_warned_about_once_per_reference_not_every_pass(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO)
    elsewhere = f"docker.io/team/app@{MIRROR_DIGEST}"
    web_1, web_2 = fakes.pod("web-1", elsewhere), fakes.pod("web-2", fakes.NEW)
    cluster = fakes.FakeCluster([fakes.enrolled("web", [web_1, web_2])])
    reconciler, metrics = fakes.make(cluster, mirrored())

    def warnings() -> list[str]:
        return [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]

    for _ in range(3):
        reconciler.tick()
    assert cluster.deleted == []
    [line] = warnings()
    assert "cannot tell what pod web-1 runs" in line
    assert "another registry host" in line and "delete the pod by hand" in line
    assert fakes.sample(metrics, "autoroll_containers_skipped_total", reason="content-unknown") == 3

    # Another reference for the same pod is news: one more warning.
    cluster.items = [
        fakes.enrolled("web", [fakes.pod("web-1", f"docker.io/x/y@{MIRROR_DIGEST}"), web_2])
    ]
    reconciler.tick()
    reconciler.tick()
    assert len(warnings()) == 2
    # A pod no longer listed is forgotten (the memory is bounded by the listed pods).
    cluster.items = [fakes.enrolled("web", [web_2])]
    reconciler.tick()
    cluster.items = [fakes.enrolled("web", [web_1, web_2])]
    reconciler.tick()
    assert len(warnings()) == 3


def test_a_target_whose_configs_cannot_be_resolved_warns_every_pass(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO)
    cluster = fakes.FakeCluster(
        [fakes.enrolled("web", [fakes.pod("web-1", MIRROR_ID), fakes.pod("web-2")])]
    )
    registry = mirrored(target=NEW_CONFIG)
    registry.content_answers[fakes.NEW] = Unknown("timeout", "no answer in 5s")
    reconciler, _ = fakes.make(cluster, registry)
    reconciler.tick()
    reconciler.tick()
    assert cluster.deleted == []
    lines = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert [r.__dict__["reason"] for r in lines] == ["target-content-unknown"] * 2
    # Not cached: asked again next pass.
    assert [c.digest for c in registry.content_calls].count(fakes.NEW) == 2


def test_a_targets_configs_are_remembered_so_a_push_rolls_when_the_registry_drops_it(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Gitea and Forgejo answer 404 for a tag's previous manifest once it is pushed again.
    A controller that saw it as the target resolved its configs then, and rolls; one that
    starts after the push cannot tell what the pods run, and says so once."""
    caplog.set_level(logging.INFO)
    cluster = fakes.FakeCluster([fakes.enrolled("web", [fakes.pod("web-1"), fakes.pod("web-2")])])
    registry = fakes.FakeRegistry({fakes.REF: fakes.OLD})
    registry.content_answers = {fakes.OLD: OLD_CONFIG, fakes.NEW: NEW_CONFIG}
    clock = fakes.Clock()
    reconciler, _ = fakes.make(cluster, registry, clock=clock)
    reconciler.tick()  # steady state: every pod runs the target
    assert registry.content_calls == [ContentRequest(fakes.HOST, "team/app", fakes.OLD)]

    registry.answers[fakes.REF] = fakes.NEW  # the push; the registry drops OLD's manifest
    registry.content_answers[fakes.OLD] = Unknown("not-found", "HTTP 404")
    clock.now += timedelta(minutes=2)
    reconciler.tick()
    assert cluster.deleted == [("shop", "web-1", "uid-web-1")]

    started_after_the_push, _ = fakes.make(
        fakes.FakeCluster([fakes.enrolled("web", [fakes.pod("web-2")])]),
        registry_without_cache(registry),
    )
    verdict = started_after_the_push.tick().decisions[0].containers[0]
    assert (verdict.verdict.value, verdict.reason.value) == ("skipped", "content-unknown")
    [line] = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert "no longer holds it" in line and "delete the pod by hand" in line


def registry_without_cache(registry: fakes.FakeRegistry) -> fakes.FakeRegistry:
    """The same registry as a freshly started process's client sees it."""
    fresh = fakes.FakeRegistry(registry.answers)
    fresh.content_answers = dict(registry.content_answers)
    return fresh
