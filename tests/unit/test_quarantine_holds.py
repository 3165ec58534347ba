"""The quarantine as a hold on the pinning view (docs/adr/026, docs/adr/028): a digest
quarantined for its tag is never what new pods are pinned to, from the very pass that
quarantines it (``QuarantineHolds`` reads the reconciler's copy, as ``wiring`` wires it)."""

from __future__ import annotations

from autoroll.controller.approvals import ApprovalBook, Approver
from autoroll.controller.reconciler import Reconciler
from autoroll.core.approval import HeldBy
from autoroll.core.images import TagRef
from autoroll.core.quarantine import (
    EMPTY,
    QuarantineEntry,
    QuarantineKey,
    QuarantineReason,
    clear,
    record,
)
from autoroll.edge.plan import render
from autoroll.edge.services import QuarantineHolds
from tests.support.quarantine import MemoryQuarantine
from tests.unit.test_plan import (
    HOST,
    IMAGE,
    NEW,
    NOW,
    OLD,
    OTHER,
    REF,
    Cluster,
    HoldingRegistry,
    deployment,
    plan,
    pod,
)
from tests.unit.test_reconciler_pinning import KEY, OPEN, pinning_pass

ENTRY = QuarantineEntry(
    QuarantineKey.of(REF),
    NEW,
    QuarantineReason.CRASH_LOOP,
    KEY,
    "web-3",
    "3 restart(s), not Ready",
    NOW,
)
BOOK, _ = record(EMPTY, [ENTRY])


def test_a_quarantined_digest_is_held_for_its_tag_and_says_why() -> None:
    holds = QuarantineHolds(lambda: BOOK)
    why = holds.held(REF, NEW)
    assert why == (f"{NEW.short} is quarantined for {HOST}/team/app:latest: crash-loop"), why


def test_another_digest_another_tag_or_a_cleared_entry_is_not_held() -> None:
    cleared = clear(BOOK, QuarantineKey.of(REF), now=NOW)
    assert QuarantineHolds(lambda: BOOK).held(REF, OLD) is None
    assert QuarantineHolds(lambda: BOOK).held(OTHER, NEW) is None
    assert (
        QuarantineHolds(lambda: BOOK).held(TagRef("other.example.org", "team/app", "latest"), NEW)
        is None
    )
    assert QuarantineHolds(lambda: cleared).held(REF, NEW) is None


def test_the_book_is_read_at_each_call() -> None:
    books = [EMPTY]
    holds = QuarantineHolds(lambda: books[0])
    assert holds.held(REF, NEW) is None
    books[0] = BOOK
    assert holds.held(REF, NEW) is not None


def test_the_pass_that_quarantines_a_digest_publishes_approvals_on_the_old_one() -> None:
    """A replacement pinned to NEW crash-loops behind two pods on OLD: the pass records the
    quarantine before it publishes, so a scale-up from then on is pinned to OLD."""
    book = ApprovalBook()
    crashing = pod("web-3", NEW, f"{IMAGE}@{NEW}", ready=False)
    cluster = Cluster([deployment("web", IMAGE, [pod("web-1", OLD), pod("web-2", OLD), crashing])])
    registry = HoldingRegistry({REF: NEW}, gone=frozenset())
    passes: list[Reconciler] = []
    approver = Approver(
        book=book,
        guardrails=OPEN,
        registries={HOST},
        presence=registry,
        holds=QuarantineHolds(lambda: passes[0].quarantine_book),
    )
    passes.append(pinning_pass(cluster, registry, approver))
    report = passes[0].tick()
    assert [e.digest for e in report.quarantine.active] == [NEW]
    assert book.approved(KEY, REF) == OLD
    approval = book.of(KEY)[REF]
    assert (approval.held_by, approval.target) == (HeldBy.QUARANTINED, NEW)
    assert cluster.deleted == []


def test_autoroll_plan_shows_new_pods_pinned_to_the_old_digest_while_the_new_is_quarantined() -> (
    None
):
    """``autoroll plan`` reads the record the controller wrote: its pinning lines must say
    what the controller's webhook answers, never the quarantined digest."""
    record_ = MemoryQuarantine()
    record_.book = BOOK
    crashing = pod("web-3", NEW, f"{IMAGE}@{NEW}", ready=False)
    book = ApprovalBook()
    report = plan(
        Cluster([deployment("web", IMAGE, [pod("web-1", OLD), pod("web-2", OLD), crashing])]),
        HoldingRegistry({REF: NEW}, gone=frozenset()),
        guardrails=OPEN,
        quarantine=record_,
        approvals=book,
    )
    assert book.approved(KEY, REF) == OLD
    text = render(report, approvals=book)
    assert f"team/app:latest  {OLD.short}; {NEW.short} held (quarantined)" in text, text
