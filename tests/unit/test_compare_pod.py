"""``compare_pod`` (``autoroll.core.compare``) branch by branch, judged whole: which pod, its
UID, its state, the digest it runs and what the runtime named. The decision tables reach these
through ``decide``; this table pins each finding's every field, which the plan and the loop
guard read."""

from __future__ import annotations

import pytest

from autoroll.core.compare import compare_pod
from autoroll.core.decide import PodFinding, PodState
from autoroll.core.images import RunningImage
from autoroll.core.model import ContainerView, Digest, PodView, Unknown
from tests.support import decide_cases as cases

APP = ContainerView("app", cases.IMAGE)


def running(digest: Digest) -> RunningImage:
    return RunningImage(digest, cases.HOST, "team/app")


ROWS = [
    (
        "a pod being deleted is only terminating",
        cases.pod("a", deleting=True),
        PodFinding("a", "uid-a", PodState.TERMINATING),
    ),
    (
        "a pod of another template is its controller's",
        cases.pod("a", image=f"{cases.HOST}/team/app:v1"),
        PodFinding("a", "uid-a", PodState.OLD_TEMPLATE),
    ),
    (
        "no status for the container yet",
        cases.pod("a", digest=None),
        PodFinding("a", "uid-a", PodState.NO_DIGEST, Unknown("no-status")),
    ),
    (
        "a status without an image ID yet",
        cases.pod("a", digest=""),
        PodFinding(
            "a",
            "uid-a",
            PodState.NO_DIGEST,
            Unknown("no-image-id", "the runtime has not resolved the image yet"),
        ),
    ),
    (
        "runs the target",
        cases.pod("a", digest=cases.NEW),
        PodFinding("a", "uid-a", PodState.CURRENT, cases.NEW, running(cases.NEW)),
    ),
    (
        "pinned by the webhook to the target: the spec's digest is what it runs",
        cases.pod("a", digest=cases.OLD, image=f"{cases.IMAGE}@{cases.NEW}"),
        PodFinding("a", "uid-a", PodState.CURRENT, cases.NEW, running(cases.NEW)),
    ),
]


@pytest.mark.parametrize(("case", "pod", "expected"), ROWS, ids=[r[0] for r in ROWS])
def test_a_pod_compared(case: str, pod: PodView, expected: PodFinding) -> None:
    found = compare_pod(
        pod,
        APP,
        target=cases.NEW,
        index_children=frozenset(),
        contents={},
        registries={cases.HOST},
    )
    assert found == expected, case


def test_a_child_of_the_target_index_is_current() -> None:
    """The runtime names the platform manifest it pulled from the target index."""
    found = compare_pod(
        cases.pod("a", digest=cases.AMD),
        APP,
        target=cases.NEW,
        index_children=frozenset({cases.AMD, cases.ARM}),
        contents={},
        registries={cases.HOST},
    )
    assert found == PodFinding("a", "uid-a", PodState.CURRENT_CHILD, cases.AMD, running(cases.AMD))


def test_an_index_whose_children_are_unknown_leaves_another_digest_a_mismatch() -> None:
    found = compare_pod(
        cases.pod("a", digest=cases.OLD),
        APP,
        target=cases.NEW,
        index_children=Unknown("timeout"),
        contents={},
        registries={cases.HOST},
    )
    assert found == PodFinding("a", "uid-a", PodState.MISMATCH, cases.OLD, running(cases.OLD))
