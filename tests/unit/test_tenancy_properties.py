"""Properties of the budget's per-namespace shares over generated tenants (issue 30).

Each example is a few namespaces, each with recent deletions, workloads already mid-roll
and decided deletions waiting, under random cluster-wide limits and the default shares
(half of each limit). ``plan_rolls`` must keep every namespace within its share and the
cluster within its limits, counting each namespace only up to its share; and one greedy
namespace, however much it holds, must never stall a modest one.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from autoroll.core.budget import Deletion
from autoroll.core.decide import (
    ContainerVerdict,
    Decision,
    DeletePod,
    PodFinding,
    PodState,
    Reason,
    Settledness,
    SettledReason,
    Sighting,
    Verdict,
)
from autoroll.core.guardrails import plan_rolls
from autoroll.core.images import TagRef
from autoroll.core.model import ContainerView, Digest, Enrolled, PodView
from autoroll.core.policy import Guardrails
from tests.support.views import deployment_view

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
REF = TagRef("git.example.org", "team/app", "latest")
OLD, NEW = Digest("sha256:" + "0" * 64), Digest("sha256:" + "1" * 64)
SIGHTINGS = {REF: Sighting(NEW, NOW - timedelta(days=1))}


def candidate(namespace: str, name: str) -> tuple[Enrolled, Decision]:
    """A settled workload with one stale pod, decided for deletion (not mid-roll yet)."""
    container = ContainerView("app", f"{REF.host}/{REF.repository}:latest")
    view = deployment_view(namespace, name, 1, (container,))
    pod = PodView(namespace, f"{name}-1", f"uid-{namespace}-{name}", NOW - timedelta(days=2))
    action = DeletePod(
        namespace, pod.name, pod.uid, "stale", container.image, OLD, NEW, name, "app"
    )
    verdict = ContainerVerdict(
        "app",
        container.image,
        Verdict.STALE,
        Reason.STALE_POD,
        "",
        REF,
        NEW,
        (PodFinding(pod.name, pod.uid, PodState.STALE, OLD),),
        pod.name,
    )
    decision = Decision(namespace, name, Settledness(SettledReason.SETTLED), (verdict,), (action,))
    return Enrolled(view, (pod,)), decision


@st.composite
def tenants(draw: st.DrawFn) -> dict[str, object]:
    names = [f"ns{i}" for i in range(draw(st.integers(1, 4)))]
    return {
        "deletions": draw(st.integers(2, 30)),
        "in_flight": draw(st.integers(2, 12)),
        "namespaces": {
            ns: (
                draw(st.integers(0, 8)),  # decided deletions waiting
                draw(st.integers(0, 12)),  # workloads already mid-roll
                draw(st.integers(0, 25)),  # deletions in the last period
            )
            for ns in names
        },
    }


def run(
    example: dict[str, object],
) -> tuple[Guardrails, dict[str, tuple[int, int, int]], dict[str, int]]:
    deletions, in_flight = example["deletions"], example["in_flight"]
    spaces = example["namespaces"]
    assert isinstance(deletions, int) and isinstance(in_flight, int) and isinstance(spaces, dict)
    guardrails = Guardrails(
        deletions_per_period=deletions, in_flight=in_flight, healthy=timedelta(0)
    )
    items = [candidate(ns, f"w{k}") for ns, (n, _, _) in spaces.items() for k in range(n)]
    elsewhere = {f"{ns}/deployment/m{k}" for ns, (_, m, _) in spaces.items() for k in range(m)}
    deleted = [
        Deletion(NOW - timedelta(seconds=1 + k), ns)
        for ns, (_, _, used) in spaces.items()
        for k in range(used)
    ]
    plan = plan_rolls(
        items=items,
        sightings=SIGHTINGS,
        guardrails=guardrails,
        deleted_at=deleted,
        now=NOW,
        mid_roll_elsewhere=elsewhere,
    )
    granted: dict[str, int] = {}
    for action in plan.go:
        granted[action.namespace] = granted.get(action.namespace, 0) + 1
    return guardrails, spaces, granted


@settings(max_examples=400, deadline=None)
@given(tenants())
def test_every_namespace_stays_within_its_share_and_the_cluster_within_its_limits(
    example: dict[str, object],
) -> None:
    guardrails, spaces, granted = run(example)
    share_d, share_f = guardrails.namespace_deletions, guardrails.namespace_in_flight
    for ns, (_, mid, used) in spaces.items():
        got = granted.get(ns, 0)
        assert got <= max(0, share_d - used), (ns, got, used, share_d)
        assert got <= max(0, share_f - mid), (ns, got, mid, share_f)
    total = sum(granted.values())
    assert sum(min(u, share_d) for _, _, u in spaces.values()) + total <= max(
        guardrails.deletions_per_period, sum(min(u, share_d) for _, _, u in spaces.values())
    )
    assert sum(min(m, share_f) for _, m, _ in spaces.values()) + total <= max(
        guardrails.in_flight, sum(min(m, share_f) for _, m, _ in spaces.values())
    )


@settings(max_examples=400, deadline=None)
@given(
    st.integers(2, 30),
    st.integers(2, 12),
    st.tuples(st.integers(0, 20), st.integers(0, 30), st.integers(0, 60)),
    st.data(),
)
def test_one_greedy_namespace_never_stalls_a_modest_one(
    deletions: int, in_flight: int, greedy: tuple[int, int, int], data: st.DataObject
) -> None:
    guardrails = Guardrails(
        deletions_per_period=deletions, in_flight=in_flight, healthy=timedelta(0)
    )
    share_d, share_f = guardrails.namespace_deletions, guardrails.namespace_in_flight
    modest = (
        data.draw(st.integers(1, 5)),
        data.draw(st.integers(0, share_f - 1)),
        data.draw(st.integers(0, share_d - 1)),
    )
    _, _, granted = run(
        {"deletions": deletions, "in_flight": in_flight, "namespaces": {"a": greedy, "b": modest}}
    )
    assert granted.get("b", 0) >= 1, (greedy, modest, granted)
