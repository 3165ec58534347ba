"""What a pod whose own image configs cannot be read says, word for word: the reason and
what would fix it differ for a registry that refuses autoroll, one that no longer holds the
old manifest (Gitea and Forgejo drop it on a re-push), and a failure worth asking again."""

from __future__ import annotations

from dataclasses import replace

import pytest

from autoroll.core.decide import PodFinding, PodState, Reason, Verdict
from autoroll.core.model import Unknown
from tests.support import decide_cases as cases
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
        [cases.pod("a", digest=cases.MIRROR_ID), cases.pod("b", digest=cases.NEW)],
        contents={**cases.OWN_CONTENT, cases.FOREIGN: Unknown(reason)},
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
    pods = [
        cases.pod("a", digest=cases.MIRROR_ID),
        cases.pod("c", digest=cases.MIRROR_ID),
        cases.pod("b", digest=cases.NEW),
    ]
    [verdict] = decide_app(
        pods, workload=cases.deployment(replicas=3), contents=cases.FOREIGN_SAME
    ).containers
    assert verdict.detail == f"a, c: the target's content under another name ({cases.MIRROR_ID})"


ELSEWHERE = f"docker.io/team/app@{cases.FOREIGN}"
UNREADABLE = f"{cases.HOST}/Team/App@{cases.FOREIGN}"
BY_HAND = "not rolled, not counted current (delete the pod by hand to replace it)"
ONLY_HOST = frozenset({cases.HOST})


@pytest.mark.parametrize(
    ("reference", "registries", "note"),
    [
        (
            ELSEWHERE,
            ONLY_HOST,
            f"{ELSEWHERE} is on another registry host than the configured ones"
            f" ({cases.HOST}), which autoroll does not ask; {BY_HAND}",
        ),
        (
            ELSEWHERE,
            ONLY_HOST | {"zot.example"},
            f"{ELSEWHERE} is on another registry host than the configured ones"
            f" ({cases.HOST}, zot.example), which autoroll does not ask; {BY_HAND}",
        ),
        # Only the digest can be read back from such a reference, so only it is named.
        (
            UNREADABLE,
            ONLY_HOST,
            f"{cases.FOREIGN} names no repository autoroll can read; {BY_HAND}",
        ),
    ],
)
def test_a_reference_autoroll_cannot_ask_about_says_so(
    reference: str, registries: frozenset[str], note: str
) -> None:
    pods = [cases.pod("a", digest=reference), cases.pod("b", digest=cases.NEW)]
    [verdict] = decide_app(pods, contents={}, registries=registries).containers
    (finding,) = [f for f in verdict.pods if f.pod == "a"]
    assert (finding.state, finding.note) == (PodState.CONTENT_UNKNOWN, note)


def test_every_pod_whose_content_cannot_be_told_is_named_with_its_note() -> None:
    pods = [
        cases.pod("a", digest=ELSEWHERE),
        cases.pod("b", digest=cases.NEW),
        cases.pod("c", digest=UNREADABLE),
    ]
    [verdict] = decide_app(pods, workload=cases.deployment(replicas=3), contents={}).containers
    assert (verdict.verdict, verdict.reason) == (Verdict.SKIPPED, Reason.CONTENT_UNKNOWN)
    assert verdict.detail == (
        f"a: {ELSEWHERE} is on another registry host than the configured ones"
        f" ({cases.HOST}), which autoroll does not ask; {BY_HAND};"
        f" c: {cases.FOREIGN} names no repository autoroll can read; {BY_HAND}"
    )


def half_old(platform: str | None) -> PodFinding:
    """Pod ``a`` runs an index sharing only its amd64 build with the target's."""
    a = replace(cases.pod("a", digest=cases.MIRROR_ID), platform=platform)
    [verdict] = decide_app(
        [a, cases.pod("b", digest=cases.NEW)],
        children={cases.NEW: frozenset({cases.AMD, cases.ARM})},
        contents={cases.NEW: cases.BUILD, cases.FOREIGN: cases.HALF_OLD},
    ).containers
    (finding,) = [f for f in verdict.pods if f.pod == "a"]
    return finding


SHARES_SOME = (
    f"{cases.MIRROR_ID} shares only some platforms' image configs with the target (a multi-arch"
    " push that left some platforms unchanged): which one the pod runs depends on"
)


@pytest.mark.parametrize(
    ("platform", "state", "note"),
    [
        (
            None,
            PodState.PLATFORM_UNKNOWN,
            f"{SHARES_SOME} its node's platform, which autoroll reads only with"
            f" PLATFORM_AWARE=true; {BY_HAND}",
        ),
        (
            "linux/riscv64",
            PodState.PLATFORM_UNKNOWN,
            f"{SHARES_SOME} its node's platform linux/riscv64, which one of the two indexes does"
            f" not name (or names twice); {BY_HAND}",
        ),
        (
            "linux/amd64",
            PodState.SAME_PLATFORM,
            f"its node's platform linux/amd64 has the same image in {cases.MIRROR_ID} and in the"
            " target (only other platforms changed)",
        ),
        ("linux/arm64", PodState.STALE, ""),
    ],
)
def test_an_index_sharing_some_platforms_is_judged_by_the_nodes(
    platform: str | None, state: PodState, note: str
) -> None:
    finding = half_old(platform)
    assert (finding.state, finding.note) == (state, note)


def test_a_target_whose_content_is_unknown_says_so() -> None:
    pods = [cases.pod("a", digest=cases.MIRROR_ID), cases.pod("b", digest=cases.NEW)]
    contents = {
        **cases.OWN_CONTENT,
        cases.FOREIGN: cases.OWN_CONTENT[cases.NEW],
        cases.NEW: Unknown("timeout"),
    }
    [verdict] = decide_app(pods, contents=contents).containers
    (finding,) = [f for f in verdict.pods if f.pod == "a"]
    assert finding.note == "the target's image configs are unknown (timeout)"


def test_with_no_pod_reporting_a_digest_nothing_is_comparable() -> None:
    [verdict] = decide_app([cases.pod("a", digest=None), cases.pod("b", digest=None)]).containers
    assert (verdict.reason, verdict.detail) == (
        Reason.NO_COMPARABLE_POD,
        "no pod of this template has a digest",
    )


def test_a_target_whose_configs_cannot_be_resolved_skips_the_image_and_says_why() -> None:
    pods = [cases.pod("a"), cases.pod("b", digest=cases.NEW)]
    contents = {**cases.OWN_CONTENT, cases.NEW: Unknown("timeout")}
    [verdict] = decide_app(pods, contents=contents).containers
    assert verdict.detail == (
        f"the image configs of {cases.NEW.short} could not be resolved: unknown (timeout)"
    )
