"""The scenario checks are pure functions over a watch history; pin that they can say "no".

No control plane: hand-written histories of a 2-replica roll, once done right (each deletion
only when every pod is Ready) and once wrong (the second pod deleted while the first
replacement is still starting).
"""

from __future__ import annotations

from tests.e2e.scenario import PodSeen, became_ready, deletions, unsettled_deletions

OLD, NEW = "sha256:" + "a" * 64, "sha256:" + "b" * 64


def seen(
    at: float,
    kind: str,
    uid: str,
    *,
    ready: bool = True,
    terminating: bool = False,
    digest: str = OLD,
) -> PodSeen:
    return PodSeen(at, kind, f"pod-{uid}", uid, ready, terminating, digest, 0)


START = [seen(0, "INITIAL", "a"), seen(0, "INITIAL", "b")]
FIRST_REPLACED = [
    seen(1, "MODIFIED", "a", terminating=True),
    seen(1.1, "ADDED", "c", ready=False, digest=""),
    seen(1.2, "DELETED", "a", terminating=True),
    seen(1.5, "MODIFIED", "c", ready=False, digest=NEW),
]


def test_a_roll_that_waits_for_readiness_is_settled_at_every_deletion() -> None:
    history = [
        *START,
        *FIRST_REPLACED,
        seen(3, "MODIFIED", "c", digest=NEW),
        seen(5, "MODIFIED", "b", terminating=True),
        seen(5.1, "ADDED", "d", ready=False, digest=""),
        seen(5.2, "DELETED", "b", terminating=True),
        seen(7, "MODIFIED", "d", digest=NEW),
    ]
    assert unsettled_deletions(history, replicas=2) == []
    assert [(d.uid, d.at) for d in deletions(history)] == [("a", 1), ("b", 5)]
    assert [(r.uid, r.at) for r in became_ready(history, NEW)] == [("c", 3), ("d", 7)]


def test_deleting_while_a_replacement_is_unready_is_reported() -> None:
    history = [
        *START,
        *FIRST_REPLACED,
        seen(2, "MODIFIED", "b", terminating=True),  # c is not Ready yet
    ]
    problems = unsettled_deletions(history, replicas=2)
    assert len(problems) == 1
    assert "pod-b deleted" in problems[0] and "unready=['pod-c']" in problems[0]


def test_deleting_while_another_pod_terminates_is_reported() -> None:
    history = [*START, seen(1, "MODIFIED", "a", terminating=True), seen(1.1, "DELETED", "b")]
    assert unsettled_deletions(history, replicas=2) == [
        "pod-b deleted while terminating=['pod-a'] unready=[] ready=1/2"
    ]
