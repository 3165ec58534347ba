"""A rollout that a StatefulSet's or a DaemonSet's own controller has in hand is named in full:
the sentence the wait log and ``autoroll plan`` print (``autoroll.core.kinds``). The clauses one
by one are in ``test_kinds_settledness.py``."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from autoroll.core.decide import SettledReason
from autoroll.core.kinds import is_settled
from autoroll.core.model import PodView, WorkloadView
from tests.support import kind_views as kinds

REV, NEXT_REV = kinds.REV, kinds.NEXT_REV


@pytest.mark.parametrize(
    ("workload", "pods", "detail"),
    [
        (
            kinds.statefulset(update_revision=NEXT_REV),
            kinds.sts_pods(),
            f"currentRevision {REV} != updateRevision {NEXT_REV}: a template rollout is in"
            " progress; it is the StatefulSet controller's to finish",
        ),
        (
            kinds.statefulset(update_revision=NEXT_REV, partition=2),
            [*kinds.sts_pods(2), kinds.pod("db-2", revision=NEXT_REV)],
            f"currentRevision {REV} != updateRevision {NEXT_REV}: a template rollout is in"
            " progress; partition 2 holds the ordinals below it at currentRevision; it is the"
            " StatefulSet controller's to finish",
        ),
        (
            # A status written before the controller filled the revisions in.
            kinds.statefulset(current_revision="", update_revision=NEXT_REV),
            kinds.sts_pods(),
            f"currentRevision unset != updateRevision {NEXT_REV}: a template rollout is in"
            " progress; it is the StatefulSet controller's to finish",
        ),
        (
            kinds.statefulset(update_revision=""),
            kinds.sts_pods(),
            f"currentRevision {REV} != updateRevision unset: a template rollout is in"
            " progress; it is the StatefulSet controller's to finish",
        ),
        (
            kinds.web(updated_replicas=2),
            kinds.sts_pods(),
            "status.updatedReplicas 2 < spec.replicas 3: a template rollout is in progress;"
            " it is the Deployment controller's to finish",
        ),
        (
            kinds.daemonset(updated_number_scheduled=2),
            kinds.ds_pods(),
            "status.updatedNumberScheduled 2 != desiredNumberScheduled 3: a template rollout"
            " is in progress; it is the DaemonSet controller's to finish",
        ),
    ],
)
def test_a_rollout_of_its_own_controller_is_named_in_full(
    workload: WorkloadView, pods: list[PodView], detail: str
) -> None:
    """The whole sentence the wait log and ``autoroll plan`` print, word for word."""
    found = is_settled(workload=workload, pods=pods, now=kinds.NOW)
    assert (found.reason, found.detail) == (SettledReason.ROLLOUT_IN_PROGRESS, detail)


def test_a_deployment_past_its_progress_deadline_says_its_last_rollout_failed() -> None:
    found = is_settled(
        workload=kinds.web(progress_deadline_exceeded=True), pods=kinds.sts_pods(), now=kinds.NOW
    )
    assert found.detail == (
        "the Progressing condition says ProgressDeadlineExceeded: its last rollout failed"
    )


@pytest.mark.parametrize(
    ("min_ready", "ready_since", "shown"),
    [
        (1, kinds.NOW - timedelta(milliseconds=500), "db-2 (Ready 0s)"),  # 1 s is a wait too
        (30, kinds.NOW + timedelta(seconds=5), "db-2 (Ready 0s)"),  # a clock ahead: never < 0
    ],
)
def test_a_pod_not_available_yet_says_for_how_long_it_has_been_ready(
    min_ready: int, ready_since: datetime, shown: str
) -> None:
    pods = [*kinds.sts_pods(2), kinds.pod("db-2", ready_since=ready_since)]
    found = is_settled(workload=kinds.web(min_ready_seconds=min_ready), pods=pods, now=kinds.NOW)
    assert found.detail == f"pod not available yet: {shown} (minReadySeconds {min_ready})"


@pytest.mark.parametrize(
    ("pods", "workload", "detail"),
    [
        (
            [kinds.pod("db-0", deleting=True), kinds.pod("db-1"), kinds.pod("db-2", deleting=True)],
            kinds.statefulset(),
            "pod terminating: db-0, db-2",
        ),
        (
            [kinds.pod("db-0", ready=False), kinds.pod("db-1"), kinds.pod("db-2", ready=False)],
            kinds.statefulset(),
            "pod not ready: db-0, db-2",
        ),
        (
            [
                kinds.pod("db-0", ready_since=kinds.NOW - timedelta(seconds=5)),
                kinds.pod("db-1"),
                kinds.pod("db-2", ready_since=kinds.NOW - timedelta(seconds=7)),
            ],
            kinds.web(min_ready_seconds=30),
            "pod not available yet: db-0 (Ready 5s), db-2 (Ready 7s) (minReadySeconds 30)",
        ),
    ],
)
def test_every_pod_a_clause_waits_on_is_named(
    pods: list[PodView], workload: WorkloadView, detail: str
) -> None:
    assert is_settled(workload=workload, pods=pods, now=kinds.NOW).detail == detail
