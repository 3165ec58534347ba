"""Each container's verdict, whole: every container of a pod spec is compared whatever its role
(docs/adr/015) and says which role it has, and one with no target to compare with keeps its
name and image and says why, so the plan and the log name the right container."""

from __future__ import annotations

from typing import Any

import pytest

from autoroll.core.decide import ContainerVerdict, Reason, Verdict
from autoroll.core.model import ContainerRole, ContainerView, PodView, Unknown
from autoroll.core.selection import Selection, select_container
from tests.support import decide_cases as cases
from tests.support.decide_scene import decide_app


def test_each_verdict_carries_its_containers_role() -> None:
    workload = cases.deployment(
        ContainerView("app", cases.IMAGE),
        ContainerView("proxy", cases.SIDE_IMAGE, role=ContainerRole.SIDECAR),
        ContainerView("migrate", cases.SIDE_IMAGE, role=ContainerRole.INIT),
    )
    extra = [("proxy", cases.SIDE_IMAGE, cases.NEW), ("migrate", cases.SIDE_IMAGE, cases.NEW)]
    pods = [cases.pod(name, digest=cases.NEW, extra=extra) for name in "ab"]
    decision = decide_app(
        pods, workload=workload, resolved={cases.REF: cases.NEW, cases.SIDE_REF: cases.NEW}
    )
    assert [(v.container, v.role) for v in decision.containers] == [
        ("app", ContainerRole.CONTAINER),
        ("proxy", ContainerRole.SIDECAR),
        ("migrate", ContainerRole.INIT),
    ]


def test_a_container_with_no_target_is_skipped_with_its_name_image_and_why() -> None:
    """Not autoroll's image, a tag this pass does not look at, a registry that did not
    answer: each verdict keeps the container's name and image and says why, whole."""
    hub, side = "nginx:latest", cases.SIDE_IMAGE
    workload = cases.deployment(
        ContainerView("app", cases.IMAGE),
        ContainerView("hub", hub),
        ContainerView("side", side),
    )
    unknown = Unknown("timeout", "no answer in 10s")
    decision = decide_app(
        [cases.pod("a", digest=cases.NEW)],
        workload=workload,
        resolved={cases.REF: unknown},  # and nothing of the side tag: out of this pass
    )
    assert list(decision.containers) == [
        ContainerVerdict(
            "app",
            cases.IMAGE,
            Verdict.SKIPPED,
            Reason.REGISTRY_UNKNOWN,
            "unknown (timeout: no answer in 10s)",
            cases.REF,
            unknown,
        ),
        ContainerVerdict(
            "hub",
            hub,
            Verdict.SKIPPED,
            Reason.OTHER_HOST,
            f"host docker.io is not a configured registry (configured: {cases.HOST})",
        ),
        ContainerVerdict(
            "side",
            side,
            Verdict.SKIPPED,
            Reason.NOT_IN_SCOPE,
            "this pass looks at other tags than team/sidecar:stable",
            cases.SIDE_REF,
        ),
    ]


def test_if_not_present_rolls_only_with_pinning_and_the_detail_says_which_policies_do() -> None:
    cached = ContainerView("app", cases.IMAGE, "IfNotPresent")
    plain = select_container(cached, registries={cases.HOST})
    assert (plain.ref, plain.reason, plain.detail) == (
        None,
        Reason.PULL_POLICY_NOT_ALWAYS,
        "imagePullPolicy is IfNotPresent; set it to Always to have this container rolled",
    )
    assert select_container(cached, registries={cases.HOST}, pinning=True).ref == cases.REF
    never = select_container(
        ContainerView("app", cases.IMAGE, "Never"), registries={cases.HOST}, pinning=True
    )
    assert never.detail == (
        "imagePullPolicy is Never; set it to Always or IfNotPresent to have this container rolled"
    )


PINNED = f"{cases.IMAGE}@sha256:{'1' * 64}"
SELECTIONS = [
    (
        ContainerView("a", "UPPER/Case:1"),
        {cases.HOST},
        Reason.INVALID_IMAGE,
        "image reference 'UPPER/Case:1': repository component 'Case' must be lowercase"
        " letters, digits and single separators (. _ __ -)",
    ),
    (
        ContainerView("a", cases.IMAGE),
        set(),
        Reason.OTHER_HOST,
        f"host {cases.HOST} is not a configured registry (configured: none)",
    ),
    (
        ContainerView("a", cases.IMAGE),
        {"zot.example", "harbor.example"},
        Reason.OTHER_HOST,
        f"host {cases.HOST} is not a configured registry (configured: harbor.example, zot.example)",
    ),
    (ContainerView("a", PINNED), {cases.HOST}, Reason.DIGEST_PINNED, "image is pinned by digest"),
    (
        ContainerView("a", cases.IMAGE, ""),
        {cases.HOST},
        Reason.PULL_POLICY_NOT_ALWAYS,
        "imagePullPolicy is unset; set it to Always to have this container rolled",
    ),
]


@pytest.mark.parametrize(("container", "registries", "reason", "detail"), SELECTIONS)
def test_a_container_left_out_is_told_why_whole(
    container: ContainerView, registries: set[str], reason: Reason, detail: str
) -> None:
    assert select_container(container, registries=registries) == Selection(
        container, None, reason, detail
    )


STALE_BESIDE_NEW = [cases.pod("a"), cases.pod("b", digest=cases.NEW)]
READS = [
    (
        "the target index's children could not be read: skipped, never deleted",
        STALE_BESIDE_NEW,
        {"children": {cases.NEW: Unknown("timeout")}},
        (Verdict.SKIPPED, Reason.CHILDREN_UNKNOWN, "unknown (timeout)"),
    ),
    (
        "another digest than the target index: its children are read first",
        STALE_BESIDE_NEW,
        {"children": {}},
        (Verdict.NEEDS_CHILDREN, Reason.CHILDREN_NEEDED, f"fetch children of {cases.NEW}"),
    ),
    (
        "a foreign reference: both sides' image configs are read first",
        [cases.pod("a", digest=cases.MIRROR_ID), cases.pod("b", digest=cases.NEW)],
        {"contents": {}},
        (
            Verdict.NEEDS_CONTENT,
            Reason.CONTENT_NEEDED,
            "resolve 2 manifest(s) to their image configs",
        ),
    ),
    (
        "a bare config listed first does not end the asking: the target and the manifest after it",
        [
            cases.pod("a", digest=str(cases.config(0))),
            cases.pod("b", digest=cases.MIRROR_ID),
            cases.pod("c", digest=cases.NEW),
        ],
        {"contents": {}, "workload": cases.deployment(replicas=3)},
        (
            Verdict.NEEDS_CONTENT,
            Reason.CONTENT_NEEDED,
            "resolve 2 manifest(s) to their image configs",
        ),
    ),
]


@pytest.mark.parametrize(("case", "pods", "scene", "expected"), READS, ids=[r[0] for r in READS])
def test_a_verdict_that_waits_on_a_read_says_which(
    case: str, pods: list[PodView], scene: dict[str, Any], expected: tuple[Verdict, Reason, str]
) -> None:
    [verdict] = decide_app(pods, **scene).containers
    assert (verdict.verdict, verdict.reason, verdict.detail) == expected, case
