"""``autoroll plan`` rendering: one dry pass through fakes, printed as a table."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

from autoroll.controller.approvals import ApprovalBook
from autoroll.controller.reconciler import TickReport
from autoroll.core.images import TagRef
from autoroll.core.model import (
    ContainerStatusView,
    ContainerView,
    DeleteOutcome,
    Digest,
    Enrolled,
    ImageContent,
    PodView,
    Unknown,
    WorkloadKind,
    WorkloadView,
)
from autoroll.core.policy import MIN_AGE, Guardrails
from autoroll.core.scope import FULL, Scope
from autoroll.edge.plan import HEADERS, render, rows, run_plan
from tests.support.answering_registry import AnsweringRegistry
from tests.support.views import deployment_view, pod_view

HOST = "git.example.org"
IMAGE = f"{HOST}/team/app:latest"
OTHER_IMAGE = f"{HOST}/team/api:latest"
REF = TagRef(HOST, "team/app", "latest")
OTHER = TagRef(HOST, "team/api", "latest")
OLD = Digest("sha256:" + "a" * 64)
NEW = Digest("sha256:" + "b" * 64)
NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)


def pod(name: str, digest: Digest, image: str = IMAGE, *, ready: bool = True) -> PodView:
    return pod_view(
        name,
        image,
        f"{image.rpartition(':')[0]}@{digest}",
        namespace="shop",
        created=NOW - timedelta(days=1),
        ready=ready,
        ready_changed_at=NOW - timedelta(days=1),  # past any health window
    )


def deployment(name: str, image: str, pods: Sequence[PodView], policy: str = "Always") -> Enrolled:
    view = deployment_view("shop", name, len(pods), (ContainerView("app", image, policy),))
    return Enrolled(view, tuple(pods))


class Cluster:
    def __init__(self, items: Sequence[Enrolled]) -> None:
        self.items = items
        self.deleted: list[str] = []

    def snapshot(self, scope: Scope = FULL) -> Sequence[Enrolled]:
        return self.items

    def read_now(self, workload: WorkloadView) -> Enrolled:
        return Enrolled(
            workload,
            tuple(next((e.pods for e in self.items if e.workload.key == workload.key), ())),
        )

    def delete_pod(
        self, namespace: str, name: str, uid: str, *, within: float | None = None
    ) -> DeleteOutcome:
        self.deleted.append(name)
        return DeleteOutcome.DELETED


def plan(cluster: Cluster, registry: AnsweringRegistry | None = None, **options: Any) -> TickReport:
    """``autoroll plan`` at ``NOW`` over ``cluster`` with ``HOST`` enrolled, the registry
    moving ``REF`` to ``NEW`` unless given; ``options`` are ``run_plan``'s others."""
    return run_plan(
        cluster=cluster,
        registry=registry if registry is not None else AnsweringRegistry({REF: NEW}),
        registries={HOST},
        now=NOW,
        **options,
    )


def test_plan_shows_every_deployment_and_container_and_deletes_nothing() -> None:
    cluster = Cluster(
        [
            deployment("web", IMAGE, [pod("web-1", OLD), pod("web-2", OLD)]),
            deployment("api", OTHER_IMAGE, [pod("api-1", NEW, OTHER_IMAGE)]),
            deployment("cache", IMAGE, [pod("cache-1", OLD)], policy="IfNotPresent"),
            deployment("ext", "docker.io/library/redis:7", [pod("ext-1", OLD)]),
        ]
    )
    report = plan(cluster, AnsweringRegistry({REF: NEW, OTHER: NEW}))
    assert cluster.deleted == []
    table = {row[0]: row for row in rows(report.decisions)}
    assert table["shop/deployment/web"][1:] == (
        "app",
        IMAGE,
        OLD.short,
        NEW.short,
        "stale → would delete pod web-1",
    )
    assert table["shop/deployment/api"][3:] == (NEW.short, NEW.short, "current")
    assert table["shop/deployment/cache"][5].startswith("skipped: pull-policy-not-always")
    assert table["shop/deployment/ext"][5].startswith("skipped: other-host")

    text = render(report)
    assert text.splitlines()[0].split() == list(HEADERS)
    assert "4 workload(s); 1 pod(s) would be deleted now." in text


def test_plan_says_why_a_stale_deployment_waits() -> None:
    cluster = Cluster(
        [deployment("web", IMAGE, [pod("web-1", OLD), pod("web-2", NEW, ready=False)])]
    )
    report = plan(cluster)
    [row] = rows(report.decisions)
    assert row[5] == "waiting: web-1 is stale; not-settled: pod-not-ready (pod not ready: web-2)"
    assert row[3] == f"{OLD.short},{NEW.short}"


def test_plan_shows_an_unknown_registry_digest_as_skipped() -> None:
    cluster = Cluster([deployment("web", IMAGE, [pod("web-1", OLD)])])
    report = plan(cluster, AnsweringRegistry({REF: Unknown("unauthorized", "HTTP 401")}))
    [row] = rows(report.decisions)
    assert row[4] == "unknown (unauthorized)"
    assert row[5].startswith("skipped: registry-unknown")
    assert cluster.deleted == []


def test_plan_says_why_a_pod_under_another_name_is_current_or_not_rolled() -> None:
    """containerd may name another repository's manifest of the config a pod runs."""
    mirror, elsewhere = Digest("sha256:" + "c" * 64), Digest("sha256:" + "d" * 64)
    config = ImageContent(frozenset({Digest("sha256:" + "e" * 64)}))

    def mirrored(name: str, image_id: str) -> PodView:
        status = ContainerStatusView("app", IMAGE, image_id, True)
        return replace(pod(name, NEW), statuses=(status,))

    cluster = Cluster(
        [
            deployment("web", IMAGE, [mirrored("web-1", f"{HOST}/aaa/mirror@{mirror}")]),
            deployment("api", IMAGE, [mirrored("api-1", f"docker.io/aaa/app@{elsewhere}")]),
        ]
    )
    registry = AnsweringRegistry({REF: NEW}, {NEW: config, mirror: config})
    report = plan(cluster, registry)
    table = {row[0]: row for row in rows(report.decisions)}
    assert table["shop/deployment/web"][3:] == (
        mirror.short,
        NEW.short,
        f"current (web-1: the target's content under another name ({HOST}/aaa/mirror@{mirror}))",
    )
    assert table["shop/deployment/api"][5].startswith(
        "skipped: content-unknown (api-1: docker.io/aaa/app@"
    )
    assert "delete the pod by hand" in table["shop/deployment/api"][5]
    assert cluster.deleted == []


def test_plan_with_nothing_enrolled_says_so() -> None:
    report = plan(Cluster([]), AnsweringRegistry({}))
    assert render(report, label_selector="aethnet.se/autoroll=true") == (
        "No Deployment, StatefulSet or DaemonSet matches LABEL_SELECTOR=aethnet.se/autoroll=true;"
        " nothing to roll.\n"
    )
    only = render(report, kinds=[WorkloadKind.STATEFULSET])
    assert only == "No StatefulSet matches the label selector; nothing to roll.\n"


# --- the guardrails in the plan ------------------------------------------------------------


def annotated(name: str, annotations: Mapping[str, str], pods: Sequence[PodView]) -> Enrolled:
    enrolled = deployment(name, IMAGE, pods)
    view = replace(enrolled.workload, annotations=tuple(sorted(annotations.items())))
    return replace(enrolled, workload=view)


def test_plan_shows_a_closed_window_and_when_the_next_one_opens() -> None:
    # NOW is Sunday 2026-11-29 12:00 UTC; the window opens on Monday at 22:00 Stockholm.
    window = {"autoroll.aethnet.se/window": "Mon-Fri 22:00-06:00 Europe/Stockholm"}
    cluster = Cluster([annotated("web", window, [pod("web-1", OLD)])])
    report = plan(cluster)
    [row] = rows(report.decisions, report.plan)
    assert row[5].startswith("stale → pod web-1 held (outside-window): outside its window")
    assert "next opens Mon 2026-11-30 22:00 Europe/Stockholm" in row[5]
    assert "2026-11-30T21:00:00+00:00 (in 1d9h)" in row[5]
    text = render(report)
    assert "1 workload(s); 0 pod(s) would be deleted now; 1 held by the guardrails." in text
    assert cluster.deleted == []


def test_plan_footer_shows_the_budget_and_every_pause_and_bad_annotation() -> None:
    cluster = Cluster(
        [
            annotated("a", {}, [pod("a-1", OLD)]),
            annotated("b", {}, [pod("b-1", OLD)]),
            annotated("p", {"autoroll.aethnet.se/paused": "true"}, [pod("p-1", NEW)]),
            annotated("x", {"autoroll.aethnet.se/min-age": "soon"}, [pod("x-1", NEW)]),
        ]
    )
    report = plan(cluster, guardrails=Guardrails(deletions_per_period=1, in_flight=5))
    text = render(report)
    assert (
        "Budget: 1 of 1 deletions in the last 1m (the next at 2026-11-29T12:01:00+00:00);" in text
    )
    assert "0 of 5 workloads mid-roll." in text
    assert "Paused by annotation: shop/deployment/p." in text  # said though it has nothing to roll
    assert (
        "NOT ROLLED, fix the annotation: shop/deployment/x: annotation autoroll.aethnet.se/min-age"
        in text
    )
    assert "held (budget): 1 of 1 deletions in the last 1m" in text


def test_plan_says_loudly_that_rolling_is_paused_cluster_wide() -> None:
    cluster = Cluster([annotated("a", {}, [pod("a-1", OLD)])])
    report = plan(cluster, guardrails=Guardrails(paused=True))
    text = render(report)
    assert "PAUSED: rolling is paused cluster-wide (ROLL_PAUSED=true)." in text
    assert "held (paused): paused cluster-wide" in text


# --- pinning (docs/adr/028) ------------------------------------------------------------------


class HoldingRegistry(AnsweringRegistry):
    """A registry that still holds every digest asked about (``PresencePort``)."""

    def __init__(self, answers: Mapping[TagRef, Digest | Unknown], gone: frozenset[Digest]) -> None:
        super().__init__(answers)
        self.gone = gone
        self.asked: list[Digest] = []

    def holds_manifest(self, ref: TagRef, digest: Digest) -> bool | None:
        self.asked.append(digest)
        return digest not in self.gone


def test_plan_shows_what_new_pods_are_pinned_to_and_why_a_newer_digest_waits() -> None:
    maturing = deployment("web", IMAGE, [pod("web-1", OLD), pod("web-2", OLD)])
    maturing = replace(
        maturing, workload=replace(maturing.workload, annotations=((MIN_AGE, "1h"),))
    )
    # IfNotPresent rolls with pinning on: its replacement is pinned to the digest.
    cached = deployment("cache", IMAGE, [pod("cache-1", NEW)], policy="IfNotPresent")
    book = ApprovalBook()
    registry = HoldingRegistry({REF: NEW}, gone=frozenset())
    report = plan(
        Cluster([maturing, cached]),
        registry,
        guardrails=Guardrails(deletions_per_period=0, in_flight=0),
        approvals=book,
    )
    text = render(report, approvals=book)
    assert "New pods are pinned to (pinning):" in text
    assert (
        f"  shop/deployment/web  team/app:latest  {OLD.short}; {NEW.short} held (maturing,"
        f" until {(NOW + timedelta(hours=1)).isoformat(timespec='seconds')})"
    ) in text
    assert f"  shop/deployment/cache  team/app:latest  {NEW.short} (the registry's digest)" in text
    assert registry.asked == [OLD]  # the held-back digest is checked, the target is not
    [cache_row] = [r for r in rows(report.decisions) if r[0] == "shop/deployment/cache"]
    assert cache_row[5] == "current"  # not skipped for its pull policy


def test_plan_says_a_held_back_digest_the_registry_dropped_is_not_pinned() -> None:
    book = ApprovalBook()
    plan(
        Cluster([deployment("web", IMAGE, [pod("web-1", OLD)])]),
        HoldingRegistry({REF: NEW}, gone=frozenset({OLD})),
        guardrails=Guardrails(deletions_per_period=0, in_flight=0, paused=True),
        approvals=book,
    )
    [approval] = book.of("shop/deployment/web").values()
    assert approval.digest is None
    assert "no longer holds it" in approval.detail
