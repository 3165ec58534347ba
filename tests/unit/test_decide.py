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
from tests.support.decide_cases import (
    BEFORE,
    CHILD,
    HOST,
    IMAGE,
    NEW,
    OLD,
    OTHER,
    REF,
    Case,
    check_rule,
    deployment,
    pod,
    run,
)
from tests.support.decide_scene import decide_app


def skipped_container(
    case_id: str, rule: str, reason: Reason, image: str, *, pull_policy: str = "Always"
) -> Case:
    """A row of two settled pods whose Deployment's one container, ``image`` pulled by
    ``pull_policy``, is skipped for ``reason``."""
    return Case(
        case_id,
        rule,
        [pod("a"), pod("b")],
        Verdict.SKIPPED,
        reason,
        deployment=deployment(ContainerView("app", image, pull_policy)),
    )


CASES = [
    # --- which containers count -------------------------------------------------------------
    skipped_container(
        "other-host-ignored",
        "only images on FORGEJO_HOST",
        Reason.OTHER_HOST,
        "docker.io/library/nginx:latest",
    ),
    Case(
        "host-compare-is-case-insensitive",
        "only images on FORGEJO_HOST",
        [
            pod("a", image=f"{HOST.upper()}/team/app:latest"),
            pod("b", digest=NEW, image=f"{HOST.upper()}/team/app:latest"),
        ],
        Verdict.STALE,
        Reason.STALE_POD,
        deletes="a",
        deployment=deployment(ContainerView("app", f"{HOST.upper()}/team/app:latest", "Always")),
    ),
    skipped_container(
        "digest-pinned-ignored",
        "tag-referenced only; digest-pinned ignored",
        Reason.DIGEST_PINNED,
        f"{HOST}/team/app@{OLD}",
    ),
    skipped_container(
        "tag-and-digest-is-pinned",
        "tag-referenced only; digest-pinned ignored",
        Reason.DIGEST_PINNED,
        f"{HOST}/team/app:latest@{OLD}",
    ),
    skipped_container(
        "pull-policy-if-not-present-never-rolled",
        "pullPolicy != Always: never rolled, warning",
        Reason.PULL_POLICY_NOT_ALWAYS,
        IMAGE,
        pull_policy="IfNotPresent",
    ),
    skipped_container(
        "pull-policy-unset-never-rolled",
        "pullPolicy != Always: never rolled, warning",
        Reason.PULL_POLICY_NOT_ALWAYS,
        IMAGE,
        pull_policy="",
    ),
    skipped_container(
        "invalid-image-skipped",
        "which containers count",
        Reason.INVALID_IMAGE,
        f"{HOST}/Team/App:latest",
    ),
    # --- the registry -----------------------------------------------------------------------
    Case(
        "registry-unknown-skips",
        "registry unknown -> skip, never changed",
        [pod("a"), pod("b")],
        Verdict.SKIPPED,
        Reason.REGISTRY_UNKNOWN,
        resolved={REF: Unknown("http-500")},
    ),
    Case(
        "registry-not-asked-skips",
        "a tag a targeted pass did not ask about -> skip quietly, never changed",
        [pod("a"), pod("b")],
        Verdict.SKIPPED,
        Reason.NOT_IN_SCOPE,
        resolved={},
    ),
    # --- current / stale ----------------------------------------------------------------------
    Case(
        "all-current",
        "stale only when digests differ",
        [pod("a", digest=NEW), pod("b", digest=NEW)],
        Verdict.CURRENT,
        Reason.UP_TO_DATE,
    ),
    Case(
        "stale-deleted-when-settled",
        "stale + settled -> delete one",
        [pod("a", digest=NEW), pod("b")],
        Verdict.STALE,
        Reason.STALE_POD,
        deletes="b",
    ),
    Case(
        "oldest-stale-goes-first",
        "at most one deletion per tick",
        [pod("young", created=BEFORE + timedelta(minutes=1)), pod("old", created=BEFORE)],
        Verdict.STALE,
        Reason.STALE_POD,
        deletes="old",
    ),
    Case(
        "docker-pullable-prefix-stripped",
        "imageID forms",
        [pod("a", digest=f"docker-pullable://{HOST}/team/app@{NEW}"), pod("b", digest=NEW)],
        Verdict.CURRENT,
        Reason.UP_TO_DATE,
    ),
    Case(
        "child-digest-is-current",
        "pod digest among index children -> current",
        [pod("a", digest=CHILD), pod("b", digest=NEW)],
        Verdict.CURRENT,
        Reason.UP_TO_DATE,
        children={NEW: frozenset({CHILD})},
    ),
    Case(
        "not-a-child-is-stale",
        "stale = differ and not a child",
        [pod("a", digest=OTHER), pod("b", digest=NEW)],
        Verdict.STALE,
        Reason.STALE_POD,
        deletes="a",
        children={NEW: frozenset({CHILD})},
    ),
    Case(
        "mismatch-without-children-asks-for-them",
        "GET index children only on a mismatch",
        [pod("a"), pod("b", digest=NEW)],
        Verdict.NEEDS_CHILDREN,
        Reason.CHILDREN_NEEDED,
        children={},
    ),
    Case(
        "children-unknown-skips",
        "unknown never means changed (children)",
        [pod("a"), pod("b", digest=NEW)],
        Verdict.SKIPPED,
        Reason.CHILDREN_UNKNOWN,
        children={NEW: Unknown("timeout")},
    ),
    # --- pods that are not compared ---------------------------------------------------------
    Case(
        "old-template-pod-not-compared",
        "only pods with the template's image string",
        [pod("a", image=f"{HOST}/team/app:v1"), pod("b", digest=NEW)],
        Verdict.CURRENT,
        Reason.UP_TO_DATE,
    ),
    Case(
        "only-old-template-pods",
        "only pods with the template's image string",
        [pod("a", image=f"{HOST}/team/app:v1"), pod("b", image=f"{HOST}/team/app:v1")],
        Verdict.SKIPPED,
        Reason.NO_COMPARABLE_POD,
    ),
    Case(
        "failed-pod-ignored",
        "Succeeded/Failed pods ignored",
        [pod("a", digest=NEW), pod("b", digest=NEW), pod("evicted", phase="Failed", ready=False)],
        Verdict.CURRENT,
        Reason.UP_TO_DATE,
    ),
    Case(
        "succeeded-pod-ignored-and-not-deleted",
        "Succeeded/Failed pods ignored",
        [pod("a", digest=NEW), pod("b", digest=NEW), pod("done", phase="Succeeded", ready=False)],
        Verdict.CURRENT,
        Reason.UP_TO_DATE,
    ),
    Case(
        "no-image-id-skipped",
        "pod with no resolved imageID skipped",
        [pod("a", digest=""), pod("b", digest=None)],
        Verdict.SKIPPED,
        Reason.NO_COMPARABLE_POD,
    ),
    Case(
        "docker-scheme-config-id-never-deleted",
        "docker:// bare image ID is unknown (a config or an index digest, by Docker's store)",
        [pod("a", digest=f"docker://{OTHER}"), pod("b", digest=NEW)],
        Verdict.CURRENT,
        Reason.UP_TO_DATE,
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_rule(case: Case) -> None:
    check_rule(case)


def test_deletion_names_pod_image_and_both_digests() -> None:
    decision = run(CASES[[c.id for c in CASES].index("stale-deleted-when-settled")])
    (action,) = decision.actions
    assert (action.namespace, action.name, action.uid) == ("ns", "b", "uid-b")
    assert (action.image, action.from_digest, action.to_digest) == (IMAGE, OLD, NEW)
    assert (action.workload, action.container) == ("app", "app")
    assert decision.containers[0].pod == "b"


def test_mismatch_requests_children_of_the_target_only() -> None:
    decision = run(CASES[[c.id for c in CASES].index("mismatch-without-children-asks-for-them")])
    assert decision.needs_children == frozenset({ChildrenRequest(REF, NEW)})
    assert decision.actions == ()


def test_no_children_request_without_a_mismatch() -> None:
    decision = decide_app([pod("a", digest=NEW), pod("b", digest=NEW)], children={})
    assert decision.needs_children == frozenset()
    assert decision.containers[0].verdict is Verdict.CURRENT


def test_decide_again_with_children_then_deletes() -> None:
    """The shell's two-pass flow: mismatch -> fetch children -> decide again."""
    pods = [pod("a", digest=OTHER), pod("b", digest=CHILD)]
    first = decide_app(pods, children={})
    assert first.actions == () and first.needs_children
    second = decide_app(pods, children={NEW: frozenset({CHILD})})
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
