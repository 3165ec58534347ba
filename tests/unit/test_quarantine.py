"""The quarantine: which halts condemn which digest (autoroll.core.quarantine), how the book
changes, and the keeper that holds it in step with the record (autoroll.controller.quarantines),
through whole passes of the real Reconciler (``test_quarantine_passes.py``): a restart and a
new term find it again."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest
from prometheus_client import CollectorRegistry

from autoroll.controller.quarantines import QuarantineKeeper
from autoroll.core.decide import Decision, Sighting, decide
from autoroll.core.halt import HaltReason, RolloutHalt
from autoroll.core.model import ContainerStatusView, ContainerView, Enrolled, PodView, Unknown
from autoroll.core.quarantine import (
    MAX_ENTRIES,
    QuarantineBook,
    QuarantineEntry,
    QuarantineKey,
    QuarantineReason,
    blocking,
    clear,
    condemned,
    prune,
    record,
)
from autoroll.instruments.metrics import Metrics
from tests.support import reconciler_fakes as fakes
from tests.support.quarantine import KEY, MemoryQuarantine, restarted

SEEN = Sighting(fakes.NEW, fakes.T0 - timedelta(minutes=30), frozenset({"uid-web-1", "uid-web-2"}))


def judged(item: Enrolled) -> Decision:
    return decide(
        workload=item.workload,
        pods=item.pods,
        registries={fakes.HOST},
        resolved={fakes.REF: fakes.NEW},
        sightings={fakes.REF: SEEN},
        children={fakes.NEW: frozenset()},
        contents={},
        now=fakes.T0,
    )


def halt(
    pod_name: str, *, restarts: int = 0, reason: HaltReason = HaltReason.NOT_READY
) -> RolloutHalt:
    return RolloutHalt(
        "shop/deployment/web", pod_name, timedelta(minutes=11), restarts, 1, reason, "detail"
    )


def found(item: Enrolled, h: RolloutHalt) -> list[QuarantineEntry]:
    return condemned([(item, judged(item), h)], sightings={fakes.REF: SEEN}, now=fakes.T0)


# --- what a halt condemns ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("restarts", "reason", "expected"),
    [
        (1, HaltReason.FAILED_HEALTH_WINDOW, QuarantineReason.FAILED_HEALTH_WINDOW),
        (4, HaltReason.NOT_READY, QuarantineReason.CRASH_LOOP),
        (0, HaltReason.NOT_READY, QuarantineReason.NOT_READY),
    ],
)
def test_a_halted_pod_on_the_target_condemns_the_target_for_its_tag(
    restarts: int, reason: HaltReason, expected: QuarantineReason
) -> None:
    failing = restarted(
        fakes.pod("web-3", fakes.NEW, created=fakes.T0 - timedelta(minutes=20)),
        restarts,
        ready=False,
    )
    item = fakes.enrolled("web", [fakes.pod("web-1"), failing])
    [entry] = found(item, halt("web-3", restarts=restarts, reason=reason))
    assert (entry.key, entry.digest, entry.reason) == (KEY, fakes.NEW, expected)
    assert (entry.workload, entry.pod, entry.at, entry.is_active) == (
        "shop/deployment/web",
        "web-3",
        fakes.T0,
        True,
    )


def no_image(name: str, created: object) -> PodView:
    """A pod whose container reports no image yet: it has not pulled (ErrImagePull)."""
    p = fakes.pod(name, "", created=created, ready=False)  # type: ignore[arg-type]
    return replace(p, statuses=(ContainerStatusView("app", image=fakes.IMAGE, image_id=""),))


def test_a_pod_made_after_the_sighting_that_cannot_pull_condemns_the_target() -> None:
    item = fakes.enrolled(
        "web", [fakes.pod("web-1"), no_image("web-3", fakes.T0 - timedelta(minutes=20))]
    )
    [entry] = found(item, halt("web-3"))
    assert (entry.digest, entry.reason) == (fakes.NEW, QuarantineReason.FAILED_TO_PULL)


def test_a_pod_older_than_the_sighting_that_cannot_pull_says_nothing_of_the_target() -> None:
    item = fakes.enrolled(
        "web", [fakes.pod("web-1"), no_image("web-3", fakes.T0 - timedelta(hours=2))]
    )
    assert found(item, halt("web-3")) == []


def test_a_halted_pod_on_the_old_content_says_nothing_of_the_target() -> None:
    stuck = restarted(fakes.pod("web-3", fakes.OLD), 3, ready=False)
    item = fakes.enrolled("web", [fakes.pod("web-1"), stuck])
    assert found(item, halt("web-3", restarts=3)) == []


def test_only_the_container_that_fails_condemns_its_tag() -> None:
    side_image = f"{fakes.HOST}/team/side:v1"
    side_ref = replace(fakes.REF, repository="team/side", tag="v1")
    failing = PodView(
        namespace="shop",
        name="web-3",
        uid="uid-web-3",
        created_at=fakes.T0 - timedelta(minutes=20),
        ready=False,
        containers=(ContainerView("app", fakes.IMAGE), ContainerView("side", side_image)),
        statuses=(
            ContainerStatusView(
                "app", fakes.IMAGE, f"{fakes.HOST}/team/app@{fakes.NEW}", ready=True
            ),
            ContainerStatusView(
                "side",
                side_image,
                f"{fakes.HOST}/team/side@{fakes.NEW}",
                ready=False,
                restart_count=2,
            ),
        ),
    )
    view = replace(
        fakes.enrolled("web", [failing]).workload,
        containers=(ContainerView("app", fakes.IMAGE), ContainerView("side", side_image)),
    )
    item = Enrolled(view, (failing,))
    decision = decide(
        workload=view,
        pods=item.pods,
        registries={fakes.HOST},
        resolved={fakes.REF: fakes.NEW, side_ref: fakes.NEW},
        sightings={fakes.REF: SEEN, side_ref: SEEN},
        children={fakes.NEW: frozenset()},
        contents={},
        now=fakes.T0,
    )
    entries = condemned([(item, decision, halt("web-3", restarts=2))], sightings={}, now=fakes.T0)
    assert [e.key for e in entries] == [QuarantineKey.named(fakes.HOST, "team/side", "v1")]


# --- the book ---------------------------------------------------------------------------------


def entry(digest: object = fakes.NEW, **fields: object) -> QuarantineEntry:
    base = QuarantineEntry(
        KEY, fakes.NEW, QuarantineReason.CRASH_LOOP, "shop/deployment/web", "web-3", "d", fakes.T0
    )
    return replace(base, digest=digest, **fields)  # type: ignore[arg-type]


def test_record_adds_a_new_digest_and_keeps_the_first_evidence_of_one_it_holds() -> None:
    book, added = record(QuarantineBook(), [entry()])
    assert added == (entry(),) and blocking(book, fakes.REF, fakes.NEW) == entry()
    again, added = record(book, [entry(pod="web-4")])
    assert added == () and again.entries[KEY].pod == "web-3"
    moved, added = record(book, [entry(fakes.OLD)])
    assert added == (entry(fakes.OLD),) and moved.entries[KEY].digest == fakes.OLD


def test_a_cleared_digest_is_not_quarantined_again_by_the_same_evidence() -> None:
    book, _ = record(QuarantineBook(), [entry()])
    cleared = clear(book, KEY, now=fakes.T0 + timedelta(minutes=1))
    assert blocking(cleared, fakes.REF, fakes.NEW) is None
    again, added = record(cleared, [entry(at=fakes.T0 + timedelta(minutes=2))])
    assert added == () and blocking(again, fakes.REF, fakes.NEW) is None
    with pytest.raises(KeyError):
        clear(QuarantineBook(), KEY, now=fakes.T0)


def test_a_new_push_ends_the_quarantine_an_unknown_answer_does_not() -> None:
    book, _ = record(QuarantineBook(), [entry()])
    assert prune(book, {fakes.REF: Unknown("timeout")}) == book
    assert prune(book, {fakes.REF: fakes.NEW}) == book
    assert prune(book, {fakes.REF: fakes.OLD}).entries == {}


def test_the_book_is_bounded_newest_kept() -> None:
    many = [
        replace(
            entry(),
            key=QuarantineKey.named(fakes.HOST, f"team/app{i}", "latest"),
            at=fakes.T0 + timedelta(seconds=i),
        )
        for i in range(MAX_ENTRIES + 5)
    ]
    book, _ = record(QuarantineBook(), many)
    assert len(book.entries) == MAX_ENTRIES
    assert QuarantineKey.named(fakes.HOST, "team/app0", "latest") not in book.entries


@pytest.mark.parametrize(
    "text",
    [
        "team/app:latest",  # no host: the same path on two registries is two images
        "forgejo.example/team/app",
        "forgejo.example/team/app:",
        "forgejo.example/:latest",
        "forgejo.example/team/app@sha256:00",
        "forgejo.example/team/app:a/b",
    ],
)
def test_a_key_that_is_not_host_repository_colon_tag_names_the_form(text: str) -> None:
    with pytest.raises(ValueError, match="is not <host>/<repository>:<tag>"):
        QuarantineKey.parse(text)


def test_a_key_is_read_with_its_host_normalised_as_images_are() -> None:
    assert QuarantineKey.parse(" Git.Example.ORG/Team/App:Latest ") == QuarantineKey.named(
        fakes.HOST, "team/app", "Latest"
    )
    assert QuarantineKey.parse("index.docker.io/nginx:1") == QuarantineKey(
        "docker.io", "library/nginx", "1"
    )
    assert QuarantineKey.parse("localhost:5000/app:v1").host == "localhost:5000"


# --- the keeper and the record ----------------------------------------------------------------


def keeper(store: MemoryQuarantine | None) -> tuple[QuarantineKeeper, Metrics]:
    metrics = Metrics(CollectorRegistry())
    return QuarantineKeeper(metrics=metrics, store=store), metrics


def test_a_term_that_cannot_read_the_record_acts_on_nothing() -> None:
    store = MemoryQuarantine()
    store.fail = ConnectionError("API unreachable")
    held, _ = keeper(store)
    with pytest.raises(ConnectionError):
        held.refresh(full=True)


def test_a_later_read_that_fails_keeps_the_copy() -> None:
    store = MemoryQuarantine()
    held, _ = keeper(store)
    held.refresh(full=True)
    held.condemn([entry()])
    store.fail = ConnectionError("API unreachable")
    held.refresh(full=True)
    assert blocking(held.book, fakes.REF, fakes.NEW) is not None


def test_a_write_refused_for_a_stale_read_is_made_again_on_a_fresh_one() -> None:
    """A person cleared another tag while this term held its copy: both survive."""
    store = MemoryQuarantine()
    other = replace(entry(), key=QuarantineKey.named(fakes.HOST, "team/other", "v1"))
    store.book, _ = record(QuarantineBook(), [other])
    store.version = 1
    held, metrics = keeper(store)
    held.refresh(full=True)
    store.clear(other.key, now=fakes.T0)  # the record moves on under the copy
    held.condemn([entry()])
    assert set(store.book.entries) == {KEY, other.key}
    assert store.book.entries[other.key].cleared_at == fakes.T0
    assert store.book.entries[KEY].is_active
    assert metrics.registry.get_sample_value("autoroll_digests_quarantined") == 1


def test_a_failed_write_holds_in_the_copy_and_is_written_at_the_next_full_pass() -> None:
    store = MemoryQuarantine()
    held, metrics = keeper(store)
    held.refresh(full=True)
    store.fail = ConnectionError("API unreachable")
    held.condemn([entry()])
    assert blocking(held.book, fakes.REF, fakes.NEW) is not None
    assert metrics.registry.get_sample_value("autoroll_quarantine_write_errors_total") == 1
    store.fail = None
    held.refresh(full=True)
    assert blocking(store.book, fakes.REF, fakes.NEW) is not None
