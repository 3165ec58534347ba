"""Builders for the guardrails planner's tests: small workloads and their pods, decided by the
real ``decide`` so that "stale", "settled" and "mid-roll" mean what they mean in a pass, and
``plan`` to run ``plan_rolls`` over them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta

from autoroll.core.budget import Deletion
from autoroll.core.decide import Decision, Sighting, decide
from autoroll.core.guardrails import RollPlan, plan_rolls
from autoroll.core.holds import HoldReason
from autoroll.core.images import TagRef
from autoroll.core.model import (
    ContainerStatusView,
    ContainerView,
    Digest,
    Enrolled,
    ImageContent,
    PodView,
    Unknown,
)
from autoroll.core.policy import Guardrails
from tests.support.views import deployment_view

HOST = "forgejo.example"
REF = TagRef(HOST, "team/app", "latest")
SIDE = TagRef(HOST, "team/side", "v1")
OLD, NEW, SIDE_OLD, SIDE_NEW = (Digest("sha256:" + c * 64) for c in "0123")


def own_configs(*digests: Digest) -> dict[Digest, ImageContent]:
    """Each digest its own image config (``a``, ``b``, ``c``... in order): a new digest is new
    content, so no pod on another digest counts as already running the target."""
    return {
        d: ImageContent(frozenset({Digest("sha256:" + c * 64)}))
        for d, c in zip(digests, "abcdef"[: len(digests)], strict=True)
    }


CONTENTS = own_configs(OLD, NEW, SIDE_OLD, SIDE_NEW)
NOW = datetime(2026, 12, 7, 12, 0, tzinfo=UTC)  # a Monday
LONG_AGO = NOW - timedelta(days=1)  # when the targets were first seen
BORN = NOW - timedelta(days=2)  # when the old pods were created
#: No budget, no pause, no window, no min-age, no health window (so no first workload
#: proving a digest: test_rollorder.py): only the clause under test is switched on.
OPEN = Guardrails(deletions_per_period=0, in_flight=0, healthy=timedelta(0))


def pod(
    name: str,
    digest: Digest = OLD,
    *,
    created: datetime = BORN,
    ready: bool = True,
    deleting: bool = False,
    side: Digest | None = None,
) -> PodView:
    statuses = [ContainerStatusView("app", image_id=f"{HOST}/team/app@{digest}", ready=ready)]
    containers = [ContainerView("app", f"{HOST}/team/app:latest")]
    if side is not None:
        statuses.append(ContainerStatusView("side", image_id=f"{HOST}/team/side@{side}"))
        containers.append(ContainerView("side", f"{HOST}/team/side:v1"))
    return PodView(
        namespace="shop",
        name=name,
        uid=f"uid-{name}",
        created_at=created,
        ready=ready,
        deleting=deleting,
        containers=tuple(containers),
        statuses=tuple(statuses),
    )


def workload(
    name: str,
    pods: Sequence[PodView] | None = None,
    *,
    annotations: Mapping[str, str] | None = None,
    side: bool = False,
) -> Enrolled:
    pods = list(pods) if pods is not None else [pod(f"{name}-1")]
    containers = [ContainerView("app", f"{HOST}/team/app:latest")]
    if side:
        containers.append(ContainerView("side", f"{HOST}/team/side:v1"))
    view = deployment_view(
        namespace="shop",
        name=name,
        replicas=len([p for p in pods if not p.deleting]),
        containers=tuple(containers),
        annotations=tuple(sorted((annotations or {}).items())),
    )
    return Enrolled(view, tuple(pods))


def sighted(seen_at: datetime = LONG_AGO, **more: datetime) -> dict[TagRef, Sighting]:
    found = {REF: Sighting(NEW, seen_at)}
    if "side" in more:
        found[SIDE] = Sighting(SIDE_NEW, more["side"])
    return found


def decided(
    workloads: Sequence[Enrolled],
    sightings: Mapping[TagRef, Sighting],
    resolved: Mapping[TagRef, Digest | Unknown] | None = None,
) -> list[tuple[Enrolled, Decision]]:
    answers = resolved if resolved is not None else {REF: NEW, SIDE: SIDE_NEW}
    return [
        (
            e,
            decide(
                workload=e.workload,
                pods=e.pods,
                registries={HOST},
                resolved=answers,
                sightings=sightings,
                children={NEW: frozenset(), SIDE_NEW: frozenset()},
                contents=CONTENTS,
            ),
        )
        for e in workloads
    ]


def plan(
    workloads: Sequence[Enrolled],
    guardrails: Guardrails = OPEN,
    *,
    sightings: Mapping[TagRef, Sighting] | None = None,
    deleted_at: Sequence[datetime | Deletion] = (),
    now: datetime = NOW,
    resolved: Mapping[TagRef, Digest | Unknown] | None = None,
) -> RollPlan:
    seen = sightings if sightings is not None else sighted()
    return plan_rolls(
        items=decided(workloads, seen, resolved),
        sightings=seen,
        guardrails=guardrails,
        deleted_at=deleted_at,
        now=now,
    )


def half_rolled(name: str) -> Enrolled:
    """Three replicas, one already on the new digest: mid-roll."""
    return workload(name, [pod(f"{name}-1"), pod(f"{name}-2"), pod(f"{name}-3", NEW, created=NOW)])


def going(result: RollPlan) -> list[str]:
    return [a.workload for a in result.go]


def held(result: RollPlan) -> dict[str, HoldReason]:
    return {h.action.workload: h.reason for h in result.holds}


def budget(
    deletions: int = 0, in_flight: int = 0, seconds: int = 60, *, shares: bool = False
) -> Guardrails:
    """The cluster-wide budget; the per-namespace shares (every workload here is in one
    namespace) only with ``shares``, their own table below."""
    off = {} if shares else {"deletions_per_namespace": 0, "in_flight_per_namespace": 0}
    return Guardrails(
        deletions_per_period=deletions,
        period=timedelta(seconds=seconds),
        in_flight=in_flight,
        healthy=timedelta(0),  # every workload at once: the budget alone orders them
        **off,  # type: ignore[arg-type]
    )
