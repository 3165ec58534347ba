"""What a pod whose own image configs cannot be read says, word for word: the reason and
what would fix it differ for a registry that refuses autoroll, one that no longer holds the
old manifest (Gitea and Forgejo drop it on a re-push), and a failure worth asking again."""

from __future__ import annotations

import pytest

from autoroll.core.decide import PodState
from autoroll.core.model import Unknown
from tests.support.decide_cases import (
    FOREIGN,
    FOREIGN_SAME,
    MIRROR_ID,
    NEW,
    OWN_CONTENT,
    deployment,
    pod,
)
from tests.support.decide_scene import decide_app

GONE = (
    "the registry no longer holds it: Gitea and Forgejo drop a tag's previous manifest when"
    " the tag is pushed again, and autoroll knows its content only if it saw it as the target"
    " before; delete the pod by hand"
)


@pytest.mark.parametrize(
    ("reason", "hint"),
    [
        (
            "forbidden",
            "give autoroll's registry user read access to {repo}, or delete the pod by hand",
        ),
        (
            "unauthorized",
            "give autoroll's registry user read access to {repo}, or delete the pod by hand",
        ),
        ("not-found", GONE),
        ("timeout", "asked again next pass"),
    ],
)
def test_an_unreadable_pod_says_why_and_what_to_do(reason: str, hint: str) -> None:
    decision = decide_app(
        [pod("a", digest=MIRROR_ID), pod("b", digest=NEW)],
        contents={**OWN_CONTENT, FOREIGN: Unknown(reason)},
    )
    (finding,) = [f for f in decision.containers[0].pods if f.pod == "a"]
    assert finding.state is PodState.CONTENT_UNKNOWN
    assert finding.running is not None
    expected = hint.format(repo=finding.running.repository)
    assert finding.note == (
        f"{finding.running.reference} could not be resolved: unknown ({reason});"
        f" not rolled, not counted current ({expected})"
    )


def test_every_pod_on_the_targets_content_under_another_name_is_named_once() -> None:
    pods = [pod("a", digest=MIRROR_ID), pod("c", digest=MIRROR_ID), pod("b", digest=NEW)]
    [verdict] = decide_app(pods, workload=deployment(replicas=3), contents=FOREIGN_SAME).containers
    assert verdict.detail == f"a, c: the target's content under another name ({MIRROR_ID})"
