"""The decision table's rows for a workload that has not settled (terminating, unready, too few
ready pods) and for crash loops, and ``is_settled`` itself.
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from autoroll.core.decide import Reason, SettledReason, Verdict, is_settled
from autoroll.core.model import PodView
from tests.support.decide_cases import HOST, NEW, T0, Case, check_rule, deployment, pod, run

CASES = [
    # --- settled ----------------------------------------------------------------------------
    Case(
        "terminating-pod-blocks",
        "settled: no pod terminating",
        [pod("a"), pod("b", digest=NEW), pod("c", digest=NEW, deleting=True)],
        Verdict.WAITING,
        Reason.NOT_SETTLED,
    ),
    Case(
        "unready-pod-blocks",
        "settled: every pod Ready",
        [pod("a"), pod("b", digest=NEW, ready=False)],
        Verdict.WAITING,
        Reason.NOT_SETTLED,
    ),
    Case(
        "unready-old-template-pod-blocks",
        "settled: every pod Ready",
        [pod("a"), pod("b", digest=NEW), pod("c", image=f"{HOST}/team/app:v1", ready=False)],
        Verdict.WAITING,
        Reason.NOT_SETTLED,
        deployment=deployment(replicas=2),
    ),
    Case(
        "too-few-ready-blocks",
        "settled: ready >= spec.replicas",
        [pod("a"), pod("b", digest=NEW)],
        Verdict.WAITING,
        Reason.NOT_SETTLED,
        deployment=deployment(replicas=3),
    ),
    Case(
        "failed-pod-does-not-unsettle",
        "Succeeded/Failed pods ignored (settled)",
        [
            pod("a"),
            pod("b", digest=NEW),
            pod("evicted", phase="Failed", ready=False, created=T0 - timedelta(days=1)),
        ],
        Verdict.STALE,
        Reason.STALE_POD,
        deletes="a",
    ),
    Case(
        "single-replica-stale-deleted",
        "settled: ready >= spec.replicas",
        [pod("a")],
        Verdict.STALE,
        Reason.STALE_POD,
        deletes="a",
        deployment=deployment(replicas=1),
    ),
    # --- crash loop ---------------------------------------------------------------------------
    Case(
        "crash-looping-new-image-never-deleted",
        "crash-looping new image already matches",
        [pod("a", digest=NEW, ready=False), pod("b")],
        Verdict.WAITING,
        Reason.NOT_SETTLED,
    ),
    Case(
        "crash-looping-alone-is-current",
        "crash-looping new image already matches",
        [pod("a", digest=NEW, ready=False)],
        Verdict.CURRENT,
        Reason.UP_TO_DATE,
        deployment=deployment(replicas=1),
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_rule(case: Case) -> None:
    check_rule(case)


def test_waiting_names_the_reason_and_next_pod() -> None:
    decision = run(CASES[[c.id for c in CASES].index("terminating-pod-blocks")])
    verdict = decision.containers[0]
    assert "c" in verdict.detail and "terminating" in verdict.detail
    assert verdict.pod == "a"
    assert decision.settledness.reason is SettledReason.POD_TERMINATING


@pytest.mark.parametrize(
    ("pods", "replicas", "expected"),
    [
        ([], 0, SettledReason.SETTLED),
        ([pod("a")], 1, SettledReason.SETTLED),
        ([pod("a"), pod("b", deleting=True)], 1, SettledReason.POD_TERMINATING),
        ([pod("a", ready=False)], 1, SettledReason.POD_NOT_READY),
        ([pod("a")], 2, SettledReason.TOO_FEW_READY),
        ([pod("a"), pod("x", phase="Succeeded", ready=False)], 1, SettledReason.SETTLED),
        ([pod("a"), pod("x", phase="Failed", ready=False)], 2, SettledReason.TOO_FEW_READY),
        # Deleted, containers exited: Succeeded/Failed while the kubelet still terminates it.
        (
            [pod("a"), pod("b"), pod("x", phase="Succeeded", ready=False, deleting=True)],
            2,
            SettledReason.POD_TERMINATING,
        ),
        (
            [pod("a"), pod("b"), pod("x", phase="Failed", ready=False, deleting=True)],
            2,
            SettledReason.POD_TERMINATING,
        ),
    ],
)
def test_is_settled(pods: list[PodView], replicas: int, expected: SettledReason) -> None:
    assert is_settled(workload=deployment(replicas=replicas), pods=pods).reason is expected
