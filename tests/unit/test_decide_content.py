"""The decision table's rows and tests for "stale means runs other content" (issue 12): foreign
references, Docker lists, indexes that share some platforms, bare configs, and the content the
core asks the shell to resolve.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from datetime import timedelta
from functools import partial
from typing import Any

import pytest

from autoroll.core.decide import (
    ChildrenRequest,
    ContentMatch,
    ContentRequest,
    PodState,
    Reason,
    Sighting,
    Verdict,
    match_content,
)
from autoroll.core.model import Digest, ImageContent, PodView, Unknown
from tests.support.decide_cases import (
    AFTER,
    AMD,
    AMD_CFG,
    ARM,
    ARM_CFG,
    ARM_OLD_CFG,
    BEFORE,
    BUILD,
    BUILD_AS_LIST,
    DLIST,
    FOREIGN,
    FOREIGN_SAME,
    HALF_OLD,
    HOST,
    MIRROR_ID,
    NEW,
    OLD,
    OTHER,
    OWN_CONTENT,
    REF,
    SEEN,
    Case,
    check_rule,
    config,
    deployment,
    pod,
    run,
)
from tests.support.decide_scene import decide_app


def half_old_build_on(
    platform: str | None,
    case_id: str,
    rule: str,
    verdict: Verdict,
    reason: Reason,
    *,
    deletes: str | None = None,
) -> Case:
    """A row where pod ``a`` runs ``HALF_OLD`` under a mirror's name on a node of ``platform``
    (None: not known), beside ``b`` on the target ``BUILD``, an index of amd64 and arm64."""
    return Case(
        case_id,
        rule,
        [replace(pod("a", digest=MIRROR_ID), platform=platform), pod("b", digest=NEW)],
        verdict,
        reason,
        deletes=deletes,
        children={NEW: frozenset({AMD, ARM})},
        contents={NEW: BUILD, FOREIGN: HALF_OLD},
    )


def same_config_under_a_mirrors_name(
    case_id: str, rule: str, pods: list[PodView], **fields: Any
) -> Case:
    """A row where pods run the target's config under the mirror's name (``MIRROR_ID``,
    ``FOREIGN_SAME``): current, never stale; ``fields`` are the row's other ``Case`` fields."""
    return Case(
        case_id, rule, pods, Verdict.CURRENT, Reason.UP_TO_DATE, contents=FOREIGN_SAME, **fields
    )


def content_unknown(
    case_id: str, rule: str, reference: str, contents: Mapping[Digest, ImageContent | Unknown]
) -> Case:
    """A row where pod ``a`` runs ``reference``, whose content ``contents`` cannot tell,
    beside ``b`` on the target: skipped, never stale."""
    return Case(
        case_id,
        rule,
        [pod("a", digest=reference), pod("b", digest=NEW)],
        Verdict.SKIPPED,
        Reason.CONTENT_UNKNOWN,
        contents=contents,
    )


CASES = [
    # --- stale means "runs other content" (issue 12) ---------------------------------------
    # containerd names the alphabetically first reference it recorded for the pod's config.
    same_config_under_a_mirrors_name(
        "foreign-reference-to-the-same-config-is-current",
        "same config under another repository's manifest: current, never stale",
        [pod("a", digest=MIRROR_ID), pod("b", digest=NEW)],
    ),
    same_config_under_a_mirrors_name(
        "foreign-reference-only-pods-are-current-after-a-restart",
        "same config: current whoever listed the pods (a restarted controller's sighting)",
        [
            pod("a", digest=MIRROR_ID),
            pod("b", digest=MIRROR_ID, created=BEFORE + timedelta(seconds=1)),
        ],
        sightings={REF: Sighting(NEW, SEEN, frozenset({"uid-a", "uid-b"}))},
    ),
    same_config_under_a_mirrors_name(
        "foreign-reference-of-replacements-is-not-a-loop",
        "same config on pods created after the sighting: current, not the loop guard",
        [pod("a", digest=MIRROR_ID, created=AFTER), pod("b", digest=MIRROR_ID, created=AFTER)],
    ),
    same_config_under_a_mirrors_name(
        "foreign-reference-needs-no-sighting",
        "same config is never stale, so the missing sighting does not matter",
        [pod("a", digest=MIRROR_ID), pod("b", digest=NEW)],
        sightings={},
    ),
    Case(
        "foreign-reference-to-the-old-config-is-stale",
        "a real push still rolls: the foreign name stands for the old config",
        [pod("a", digest=MIRROR_ID), pod("b", digest=NEW)],
        Verdict.STALE,
        Reason.STALE_POD,
        deletes="a",
        contents={**OWN_CONTENT, FOREIGN: ImageContent(frozenset({config(0)}))},
    ),
    Case(
        "docker-list-of-the-same-build-is-current",
        "an OCI index and a Docker list of one build in the same repository: current",
        [pod("a", digest=f"{HOST}/team/app@{DLIST}"), pod("b", digest=NEW)],
        Verdict.CURRENT,
        Reason.UP_TO_DATE,
        children={NEW: frozenset({AMD, ARM})},
        contents={NEW: BUILD, DLIST: BUILD_AS_LIST},
    ),
    half_old_build_on(
        None,
        "index-sharing-some-platforms-is-platform-unknown",
        "partial overlap without the node's platform: unknown, never stale",
        Verdict.SKIPPED,
        Reason.PLATFORM_UNKNOWN,
    ),
    half_old_build_on(
        "linux/arm64",
        "index-sharing-some-platforms-on-a-changed-platform-is-stale",
        "partial overlap with the node's platform (issue 18's seam): its config decides",
        Verdict.STALE,
        Reason.STALE_POD,
        deletes="a",
    ),
    half_old_build_on(
        "linux/amd64",
        "index-sharing-some-platforms-on-an-unchanged-platform-is-current",
        "partial overlap with the node's platform (issue 18's seam): its config decides",
        Verdict.CURRENT,
        Reason.UP_TO_DATE,
    ),
    half_old_build_on(
        "linux/s390x",
        "index-sharing-some-platforms-on-an-unnamed-platform-is-platform-unknown",
        "partial overlap, a platform neither index names: unknown, never stale",
        Verdict.SKIPPED,
        Reason.PLATFORM_UNKNOWN,
    ),
    content_unknown(
        "foreign-reference-on-another-host-is-content-unknown",
        "a reference on another host cannot be resolved: unknown, never stale",
        f"docker.io/team/app@{FOREIGN}",
        contents={},
    ),
    content_unknown(
        "foreign-reference-without-a-readable-name-is-content-unknown",
        "a reference whose repository does not parse cannot be resolved: unknown",
        f"{HOST}/Team/App@{FOREIGN}",
        contents={},
    ),
    content_unknown(
        "foreign-reference-that-cannot-be-resolved-is-content-unknown",
        "the registry could not resolve the pod's reference: unknown, never stale",
        MIRROR_ID,
        contents={**OWN_CONTENT, FOREIGN: Unknown("forbidden", "HTTP 403")},
    ),
    Case(
        "target-content-unknown-skips",
        "the target's configs unknown: nothing can be called stale",
        [pod("a"), pod("b", digest=NEW)],
        Verdict.SKIPPED,
        Reason.TARGET_CONTENT_UNKNOWN,
        contents={**OWN_CONTENT, NEW: Unknown("timeout")},
    ),
    Case(
        "content-not-known-yet-is-asked-for",
        "resolve configs only when neither the target nor a child matches by digest",
        [pod("a", digest=MIRROR_ID), pod("b", digest=NEW)],
        Verdict.NEEDS_CONTENT,
        Reason.CONTENT_NEEDED,
        contents={},
    ),
    Case(
        "stale-pod-rolls-beside-an-unresolvable-one",
        "an unknown pod is skipped, not a reason to spare a pod proven stale",
        [
            pod("a", digest=f"docker.io/team/app@{FOREIGN}", created=BEFORE),
            pod("b", created=BEFORE + timedelta(seconds=1)),
        ],
        Verdict.STALE,
        Reason.STALE_POD,
        deletes="b",
    ),
    Case(
        "bare-config-of-the-target-is-current",
        "a bare sha256 imageID is the config the pod runs: compared with the target's",
        [pod("a", digest=str(config(1)))],
        Verdict.CURRENT,
        Reason.UP_TO_DATE,
        deployment=deployment(replicas=1),
    ),
    Case(
        "bare-config-of-other-content-is-stale",
        "a bare sha256 imageID is the config the pod runs: compared with the target's",
        [pod("a", digest=str(config(0))), pod("b", digest=NEW)],
        Verdict.STALE,
        Reason.STALE_POD,
        deletes="a",
    ),
    Case(
        "bare-config-among-the-index-configs-is-current",
        "a bare sha256 imageID is the config the pod runs: compared with the target's",
        [pod("a", digest=str(ARM_CFG))],
        Verdict.CURRENT,
        Reason.UP_TO_DATE,
        deployment=deployment(replicas=1),
        children={NEW: frozenset({AMD, ARM})},
        contents={NEW: BUILD},
    ),
    Case(
        "bare-config-with-the-target-content-unknown-never-deleted",
        "the target's configs unknown: nothing can be called stale",
        [pod("a", digest=str(config(0))), pod("b", digest=NEW)],
        Verdict.SKIPPED,
        Reason.TARGET_CONTENT_UNKNOWN,
        contents={NEW: Unknown("not-found")},
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_rule(case: Case) -> None:
    check_rule(case)


def case(case_id: str) -> Case:
    return CASES[[c.id for c in CASES].index(case_id)]


def test_content_is_asked_of_the_repository_each_side_names() -> None:
    """The target from the enrolled repository, the pod's reference from its own; a bare
    config needs only the target's, and a reference on another host is never asked for."""
    pods = [
        pod("a", digest=MIRROR_ID),
        pod("b", digest=str(config(0))),
        pod("c", digest=f"docker.io/aaa/mirror@{OTHER}"),
        pod("d", digest=NEW),
    ]
    decision = decide_app(pods, workload=deployment(replicas=4), contents={})
    assert decision.actions == ()
    assert decision.needs_children == frozenset()
    assert decision.needs_content == frozenset(
        {ContentRequest(HOST, "team/app", NEW), ContentRequest(HOST, "aaa/mirror", FOREIGN)}
    )
    states = {f.pod: f.state for f in decision.containers[0].pods}
    assert states == {
        "a": PodState.NEEDS_CONTENT,
        "b": PodState.NEEDS_CONTENT,
        "c": PodState.CONTENT_UNKNOWN,
        "d": PodState.CURRENT,
    }
    # Nothing is known of a pod still waiting on a read, so it carries no note yet.
    assert [f.note for f in decision.containers[0].pods if f.pod in "ab"] == ["", ""]


def test_a_known_side_is_not_asked_for_again() -> None:
    decision = decide_app(
        [pod("a", digest=MIRROR_ID), pod("b", digest=NEW)], contents={NEW: OWN_CONTENT[NEW]}
    )
    assert decision.needs_content == frozenset({ContentRequest(HOST, "aaa/mirror", FOREIGN)})


def test_children_then_content_then_the_decision() -> None:
    """The shell's flow: a mismatch asks for the index's children; not a child, it asks
    for both sides' configs; then it decides (here: the old build, under a mirror's name)."""
    run_once = partial(decide_app, [pod("a", digest=MIRROR_ID), pod("b", digest=NEW)])
    first = run_once(children={}, contents={})
    assert first.needs_children == frozenset({ChildrenRequest(REF, NEW)})
    assert first.needs_content == frozenset()
    second = run_once(children={NEW: frozenset()}, contents={})
    assert second.needs_content and second.actions == ()
    contents: dict[Digest, ImageContent | Unknown] = {
        NEW: OWN_CONTENT[NEW],
        FOREIGN: OWN_CONTENT[OLD],
    }
    third = run_once(children={NEW: frozenset()}, contents=contents)
    assert not third.needs_children and not third.needs_content
    assert [a.name for a in third.actions] == ["a"]
    assert third.actions[0].from_digest == FOREIGN


def test_same_content_says_why_the_pod_is_current() -> None:
    verdict = run(case("foreign-reference-to-the-same-config-is-current")).containers[0]
    assert verdict.detail == f"a: the target's content under another name ({MIRROR_ID})"
    (finding,) = [f for f in verdict.pods if f.pod == "a"]
    assert finding.state is PodState.SAME_CONTENT
    assert finding.running is not None and finding.running.reference == MIRROR_ID
    assert "under another name" in finding.note


@pytest.mark.parametrize(
    ("case_id", "fragments"),
    [
        ("foreign-reference-on-another-host-is-content-unknown", ["another registry host", HOST]),
        ("foreign-reference-without-a-readable-name-is-content-unknown", ["no repository"]),
        (
            "foreign-reference-that-cannot-be-resolved-is-content-unknown",
            ["forbidden", "read access to aaa/mirror"],
        ),
        ("index-sharing-some-platforms-is-platform-unknown", ["some platforms", "node's platform"]),
    ],
)
def test_an_unresolved_pod_says_why_and_what_to_do(case_id: str, fragments: list[str]) -> None:
    verdict = run(case(case_id)).containers[0]
    (finding,) = [f for f in verdict.pods if f.pod == "a"]
    assert finding.state in {PodState.CONTENT_UNKNOWN, PodState.PLATFORM_UNKNOWN}
    for fragment in [*fragments, "not rolled", "delete the pod by hand"]:
        assert fragment in finding.note
    assert verdict.detail == f"a: {finding.note}"


def test_a_transient_failure_is_asked_again_not_blamed_on_access() -> None:
    decision = decide_app(
        [pod("a", digest=MIRROR_ID), pod("b", digest=NEW)],
        contents={**OWN_CONTENT, FOREIGN: Unknown("timeout")},
    )
    (finding,) = [f for f in decision.containers[0].pods if f.pod == "a"]
    assert "asked again next pass" in finding.note and "read access" not in finding.note


@pytest.mark.parametrize(
    ("running", "target", "platform", "expected"),
    [
        (BUILD_AS_LIST, BUILD, None, ContentMatch.SAME),
        (ImageContent(frozenset({AMD_CFG})), BUILD, None, ContentMatch.SAME),
        (BUILD, ImageContent(frozenset({AMD_CFG})), None, ContentMatch.PARTIAL),
        (ImageContent(frozenset({ARM_OLD_CFG})), BUILD, None, ContentMatch.OTHER),
        (HALF_OLD, BUILD, None, ContentMatch.PARTIAL),
        (HALF_OLD, BUILD, "linux/amd64", ContentMatch.SAME),
        (HALF_OLD, BUILD, "linux/arm64", ContentMatch.OTHER),
        (HALF_OLD, BUILD, "linux/riscv64", ContentMatch.PARTIAL),
        # A Docker list of the half-old build names no platforms: still partial.
        (ImageContent(HALF_OLD.configs), BUILD, "linux/arm64", ContentMatch.PARTIAL),
    ],
)
def test_match_content(
    running: ImageContent, target: ImageContent, platform: str | None, expected: ContentMatch
) -> None:
    assert match_content(running, target, platform=platform) is expected


def test_image_content_is_never_empty_and_its_platforms_are_its_configs() -> None:
    with pytest.raises(ValueError, match="at least one config"):
        ImageContent(frozenset())
    with pytest.raises(ValueError, match="not among the configs"):
        ImageContent(frozenset({AMD_CFG}), (("linux/arm64", ARM_CFG),))
    twice = ImageContent(
        frozenset({AMD_CFG, ARM_CFG}), (("linux/amd64", AMD_CFG), ("linux/amd64", ARM_CFG))
    )
    assert twice.config_for("linux/amd64") is None  # two answers are no answer
    assert BUILD.config_for("linux/arm64") == ARM_CFG
