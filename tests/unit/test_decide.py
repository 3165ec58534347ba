"""Table tests for the pure decision core: at least one case per rule of issue 5.

Each case builds a Deployment, its pods and the registry's answers, and states the verdict,
reason and deletion it expects. Breaking any rule in ``autoroll.core.decide`` flips at least
one row here or in the table's other modules (``test_decide_*.py``; the builders are in
``tests.support.decide_cases``).
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from autoroll.core.decide import ChildrenRequest, PodState, Reason, Verdict
from autoroll.core.model import ContainerView, Unknown
from tests.support import decide_cases as cases
from tests.support.decide_scene import decide_app


def skipped_container(
    case_id: str, rule: str, reason: Reason, image: str, *, pull_policy: str = "Always"
) -> cases.Case:
    """A row of two settled pods whose Deployment's one container, ``image`` pulled by
    ``pull_policy``, is skipped for ``reason``."""
    return cases.Case(
        case_id,
        rule,
        [cases.pod("a"), cases.pod("b")],
        Verdict.SKIPPED,
        reason,
        deployment=cases.deployment(ContainerView("app", image, pull_policy)),
    )


CASES = [
    # --- which containers count -------------------------------------------------------------
    skipped_container(
        "other-host-ignored",
        "only images on FORGEJO_HOST",
        Reason.OTHER_HOST,
        "docker.io/library/nginx:latest",
    ),
    cases.Case(
        "host-compare-is-case-insensitive",
        "only images on FORGEJO_HOST",
        [
            cases.pod("a", image=f"{cases.HOST.upper()}/team/app:latest"),
            cases.pod("b", digest=cases.NEW, image=f"{cases.HOST.upper()}/team/app:latest"),
        ],
        Verdict.STALE,
        Reason.STALE_POD,
        deletes="a",
        deployment=cases.deployment(
            ContainerView("app", f"{cases.HOST.upper()}/team/app:latest", "Always")
        ),
    ),
    skipped_container(
        "digest-pinned-ignored",
        "tag-referenced only; digest-pinned ignored",
        Reason.DIGEST_PINNED,
        f"{cases.HOST}/team/app@{cases.OLD}",
    ),
    skipped_container(
        "tag-and-digest-is-pinned",
        "tag-referenced only; digest-pinned ignored",
        Reason.DIGEST_PINNED,
        f"{cases.HOST}/team/app:latest@{cases.OLD}",
    ),
    skipped_container(
        "pull-policy-if-not-present-never-rolled",
        "pullPolicy != Always: never rolled, warning",
        Reason.PULL_POLICY_NOT_ALWAYS,
        cases.IMAGE,
        pull_policy="IfNotPresent",
    ),
    skipped_container(
        "pull-policy-unset-never-rolled",
        "pullPolicy != Always: never rolled, warning",
        Reason.PULL_POLICY_NOT_ALWAYS,
        cases.IMAGE,
        pull_policy="",
    ),
    skipped_container(
        "invalid-image-skipped",
        "which containers count",
        Reason.INVALID_IMAGE,
        f"{cases.HOST}/Team/App:latest",
    ),
    # --- the registry -----------------------------------------------------------------------
    cases.Case(
        "registry-unknown-skips",
        "registry unknown -> skip, never changed",
        [cases.pod("a"), cases.pod("b")],
        Verdict.SKIPPED,
        Reason.REGISTRY_UNKNOWN,
        resolved={cases.REF: Unknown("http-500")},
    ),
    cases.Case(
        "registry-not-asked-skips",
        "a tag a targeted pass did not ask about -> skip quietly, never changed",
        [cases.pod("a"), cases.pod("b")],
        Verdict.SKIPPED,
        Reason.NOT_IN_SCOPE,
        resolved={},
    ),
    # --- current / stale ----------------------------------------------------------------------
    cases.Case(
        "all-current",
        "stale only when digests differ",
        [cases.pod("a", digest=cases.NEW), cases.pod("b", digest=cases.NEW)],
        Verdict.CURRENT,
        Reason.UP_TO_DATE,
    ),
    cases.Case(
        "stale-deleted-when-settled",
        "stale + settled -> delete one",
        [cases.pod("a", digest=cases.NEW), cases.pod("b")],
        Verdict.STALE,
        Reason.STALE_POD,
        deletes="b",
    ),
    cases.Case(
        "oldest-stale-goes-first",
        "at most one deletion per tick",
        [
            cases.pod("young", created=cases.BEFORE + timedelta(minutes=1)),
            cases.pod("old", created=cases.BEFORE),
        ],
        Verdict.STALE,
        Reason.STALE_POD,
        deletes="old",
    ),
    cases.Case(
        "docker-pullable-prefix-stripped",
        "imageID forms",
        [
            cases.pod("a", digest=f"docker-pullable://{cases.HOST}/team/app@{cases.NEW}"),
            cases.pod("b", digest=cases.NEW),
        ],
        Verdict.CURRENT,
        Reason.UP_TO_DATE,
    ),
    cases.Case(
        "child-digest-is-current",
        "pod digest among index children -> current",
        [cases.pod("a", digest=cases.CHILD), cases.pod("b", digest=cases.NEW)],
        Verdict.CURRENT,
        Reason.UP_TO_DATE,
        children={cases.NEW: frozenset({cases.CHILD})},
    ),
    cases.Case(
        "not-a-child-is-stale",
        "stale = differ and not a child",
        [cases.pod("a", digest=cases.OTHER), cases.pod("b", digest=cases.NEW)],
        Verdict.STALE,
        Reason.STALE_POD,
        deletes="a",
        children={cases.NEW: frozenset({cases.CHILD})},
    ),
    cases.Case(
        "mismatch-without-children-asks-for-them",
        "GET index children only on a mismatch",
        [cases.pod("a"), cases.pod("b", digest=cases.NEW)],
        Verdict.NEEDS_CHILDREN,
        Reason.CHILDREN_NEEDED,
        children={},
    ),
    cases.Case(
        "children-unknown-skips",
        "unknown never means changed (children)",
        [cases.pod("a"), cases.pod("b", digest=cases.NEW)],
        Verdict.SKIPPED,
        Reason.CHILDREN_UNKNOWN,
        children={cases.NEW: Unknown("timeout")},
    ),
    # --- pods that are not compared ---------------------------------------------------------
    cases.Case(
        "old-template-pod-not-compared",
        "only pods with the template's image string",
        [cases.pod("a", image=f"{cases.HOST}/team/app:v1"), cases.pod("b", digest=cases.NEW)],
        Verdict.CURRENT,
        Reason.UP_TO_DATE,
    ),
    cases.Case(
        "only-old-template-pods",
        "only pods with the template's image string",
        [
            cases.pod("a", image=f"{cases.HOST}/team/app:v1"),
            cases.pod("b", image=f"{cases.HOST}/team/app:v1"),
        ],
        Verdict.SKIPPED,
        Reason.NO_COMPARABLE_POD,
    ),
    cases.Case(
        "failed-pod-ignored",
        "Succeeded/Failed pods ignored",
        [
            cases.pod("a", digest=cases.NEW),
            cases.pod("b", digest=cases.NEW),
            cases.pod("evicted", phase="Failed", ready=False),
        ],
        Verdict.CURRENT,
        Reason.UP_TO_DATE,
    ),
    cases.Case(
        "succeeded-pod-ignored-and-not-deleted",
        "Succeeded/Failed pods ignored",
        [
            cases.pod("a", digest=cases.NEW),
            cases.pod("b", digest=cases.NEW),
            cases.pod("done", phase="Succeeded", ready=False),
        ],
        Verdict.CURRENT,
        Reason.UP_TO_DATE,
    ),
    cases.Case(
        "no-image-id-skipped",
        "pod with no resolved imageID skipped",
        [cases.pod("a", digest=""), cases.pod("b", digest=None)],
        Verdict.SKIPPED,
        Reason.NO_COMPARABLE_POD,
    ),
    cases.Case(
        "docker-scheme-config-id-never-deleted",
        "docker:// bare image ID is unknown (a config or an index digest, by Docker's store)",
        [cases.pod("a", digest=f"docker://{cases.OTHER}"), cases.pod("b", digest=cases.NEW)],
        Verdict.CURRENT,
        Reason.UP_TO_DATE,
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_rule(case: cases.Case) -> None:
    cases.check_rule(case)


def test_deletion_names_pod_image_and_both_digests() -> None:
    decision = cases.run(CASES[[c.id for c in CASES].index("stale-deleted-when-settled")])
    (action,) = decision.actions
    assert (action.namespace, action.name, action.uid) == ("ns", "b", "uid-b")
    assert (action.image, action.from_digest, action.to_digest) == (
        cases.IMAGE,
        cases.OLD,
        cases.NEW,
    )
    assert (action.workload, action.container) == ("app", "app")
    assert decision.containers[0].pod == "b"


def test_mismatch_requests_children_of_the_target_only() -> None:
    decision = cases.run(
        CASES[[c.id for c in CASES].index("mismatch-without-children-asks-for-them")]
    )
    assert decision.needs_children == frozenset({ChildrenRequest(cases.REF, cases.NEW)})
    assert decision.actions == ()


def test_no_children_request_without_a_mismatch() -> None:
    decision = decide_app(
        [cases.pod("a", digest=cases.NEW), cases.pod("b", digest=cases.NEW)], children={}
    )
    assert decision.needs_children == frozenset()
    assert decision.containers[0].verdict is Verdict.CURRENT


def test_decide_again_with_children_then_deletes() -> None:
    """The shell's two-pass flow: mismatch -> fetch children -> decide again."""
    pods = [cases.pod("a", digest=cases.OTHER), cases.pod("b", digest=cases.CHILD)]
    first = decide_app(pods, children={})
    assert first.actions == () and first.needs_children
    second = decide_app(pods, children={cases.NEW: frozenset({cases.CHILD})})
    assert [a.name for a in second.actions] == ["a"]
    states = {f.pod: f.state for f in second.containers[0].pods}
    assert states == {"a": PodState.STALE, "b": PodState.CURRENT_CHILD}


def test_warnings_are_flagged() -> None:
    assert Reason.PULL_POLICY_NOT_ALWAYS.is_warning
    assert Reason.CREATED_AFTER_TARGET.is_warning
    assert Reason.REGISTRY_UNKNOWN.is_warning  # the registry is offline: rolling has stopped
    assert Reason.CHILDREN_UNKNOWN.is_warning
    assert Reason.TARGET_CONTENT_UNKNOWN.is_warning  # no pod of the image can roll
    # One pod's unresolvable reference can last as long as the pod: the shell warns once.
    assert not Reason.CONTENT_UNKNOWN.is_warning
    assert not Reason.PLATFORM_UNKNOWN.is_warning
    assert not Reason.UP_TO_DATE.is_warning
    assert not Reason.NOT_IN_SCOPE.is_warning  # a targeted pass looks at other tags: normal
    assert not Reason.NOT_SETTLED.is_warning  # waiting for readiness is normal
