"""The pass and the pinning view (docs/adr/028): the approvals are published before the
first DELETE, so autoroll's own deletion is replaced by a pod pinned to the new digest; a
term's end empties the view; a pod admitted unpinned is said once, with a Warning Event."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import timedelta

from autoroll.controller.approvals import REASON_UNPINNED, ApprovalBook, Approver
from autoroll.controller.reconciler import Reconciler
from autoroll.core.model import DeleteOutcome, Digest, Enrolled
from autoroll.core.policy import Guardrails
from autoroll.core.records import EventType, RollEvent
from tests.support.reconciler_fakes import reconciler_with
from tests.unit.test_plan import (
    IMAGE,
    NEW,
    NOW,
    OLD,
    REF,
    Cluster,
    HoldingRegistry,
    deployment,
    pod,
)

OPEN = Guardrails(deletions_per_period=0, in_flight=0)
KEY = "shop/deployment/web"


class Events:
    def __init__(self) -> None:
        self.sent: list[RollEvent] = []

    def emit(self, event: RollEvent) -> None:
        self.sent.append(event)


class WatchingCluster(Cluster):
    """Records what the view says for the workload at the moment of each DELETE."""

    def __init__(self, items: Sequence[Enrolled], book: ApprovalBook) -> None:
        super().__init__(items)
        self.book = book
        self.approved_at_delete: list[Digest | None] = []

    def delete_pod(
        self, namespace: str, name: str, uid: str, *, within: float | None = None
    ) -> DeleteOutcome:
        self.approved_at_delete.append(self.book.approved(KEY, REF))
        return super().delete_pod(namespace, name, uid, within=within)


def pinning_pass(cluster: Cluster, registry: HoldingRegistry, approver: Approver) -> Reconciler:
    """The pass with pinning on and no budget, telling ``approver`` its plans; its clock
    moves a second further at each reading."""
    clock = iter(NOW + timedelta(seconds=i) for i in range(1000))
    return reconciler_with(
        cluster,
        registry=registry,
        clock=lambda: next(clock),
        guardrails=OPEN,
        pinning=True,
        approvals=approver,
    )[0]


def reconciler(cluster: Cluster, book: ApprovalBook, events: Events | None = None) -> Reconciler:
    registry = HoldingRegistry({REF: NEW}, gone=frozenset())
    approver = Approver(
        book=book, guardrails=OPEN, registries={"git.example.org"}, presence=registry, events=events
    )
    return pinning_pass(cluster, registry, approver)


def test_the_view_approves_the_new_digest_before_the_first_deletion() -> None:
    book = ApprovalBook()
    cluster = WatchingCluster(
        [deployment("web", IMAGE, [pod("web-1", OLD), pod("web-2", OLD)])], book
    )
    reconciler(cluster, book).tick()
    assert cluster.deleted == ["web-1"]
    assert cluster.approved_at_delete == [NEW]  # its replacement is pinned to NEW


def test_a_replica_that_stops_leading_empties_its_view() -> None:
    book = ApprovalBook()
    leading = iter([True, False])
    passes, _ = reconciler_with(
        Cluster([deployment("web", IMAGE, [pod("web-1", NEW)])]),
        registry=HoldingRegistry({REF: NEW}, gone=frozenset()),
        dry_run=True,
        clock=lambda: NOW,
        guardrails=OPEN,
        leading=lambda: next(leading),
        pinning=True,
        approvals=Approver(book=book, guardrails=OPEN, registries={"git.example.org"}),
    )
    passes.tick()
    assert book.approved(KEY, REF) == NEW
    passes.tick()  # a follower's pass: it no longer knows the plan
    assert (book.approved(KEY, REF), book.knows(KEY)) == (None, False)


def test_a_pod_admitted_unpinned_after_a_pinned_sibling_is_said_once() -> None:
    pinned = pod("web-1", NEW, f"{IMAGE}@{NEW}")
    late = replace(pod("web-2", NEW), created_at=NOW)
    book, events = ApprovalBook(), Events()
    passes = reconciler(Cluster([deployment("web", IMAGE, [pinned, late])]), book, events)
    passes.tick()
    passes.tick()
    assert [(e.reason, e.type, e.workload) for e in events.sent] == [
        (REASON_UNPINNED, EventType.WARNING, "web")
    ]
    assert "pod web-2 of deployment/web was admitted without its digest pinned" in (
        events.sent[0].message
    )
