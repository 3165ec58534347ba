"""The decision table's rows for pods the pinning webhook admitted (docs/adr/028)."""

from __future__ import annotations

import pytest

from autoroll.core.decide import Reason, Verdict
from autoroll.core.model import ContainerView
from tests.support.decide_cases import (
    FOREIGN,
    FOREIGN_SAME,
    HOST,
    IMAGE,
    MIRROR_ID,
    NEW,
    OLD,
    OTHER,
    OWN_CONTENT,
    Case,
    check_rule,
    deployment,
    pinned,
    pod,
)

CASES = [
    # --- pinned pods (docs/adr/028) ----------------------------------------------------------
    Case(
        "pinned-to-the-target-is-current-whatever-the-runtime-names",
        "a pod pinned to the target digest is current",
        [
            pod("a", digest=MIRROR_ID, image=pinned(NEW)),
            pod("b", digest=None, image=pinned(NEW)),  # not started yet: the pin says it
        ],
        Verdict.CURRENT,
        Reason.UP_TO_DATE,
        contents={},  # nothing to fetch: the pin is the target
    ),
    Case(
        "pinned-to-the-old-approval-is-stale-and-rolls",
        "when approval moves, pods pinned to the old digest are stale and roll as today",
        [pod("a", digest=NEW, image=pinned(NEW)), pod("b", image=pinned(OLD))],
        Verdict.STALE,
        Reason.STALE_POD,
        deletes="b",
    ),
    Case(
        "pinned-to-neither-is-compared-by-content",
        "a pod pinned to neither digest is handled like any other running digest",
        [pod("a", digest=NEW, image=pinned(NEW)), pod("b", digest=OTHER, image=pinned(OTHER))],
        Verdict.NEEDS_CONTENT,
        Reason.CONTENT_NEEDED,
        contents={NEW: OWN_CONTENT[NEW]},
    ),
    Case(
        "pinned-to-neither-with-other-content-rolls",
        "a pod pinned to neither digest is handled like any other running digest",
        [pod("a", digest=NEW, image=pinned(NEW)), pod("b", digest=OTHER, image=pinned(OTHER))],
        Verdict.STALE,
        Reason.STALE_POD,
        deletes="b",
    ),
    Case(
        "pinned-to-neither-with-the-target-s-content-is-current",
        "a pod pinned to neither digest is handled like any other running digest",
        [pod("a", digest=NEW, image=pinned(NEW)), pod("b", image=pinned(FOREIGN))],
        Verdict.CURRENT,
        Reason.UP_TO_DATE,
        contents=FOREIGN_SAME,
    ),
    Case(
        "another-tag-pinned-is-an-older-template",
        "only the template's own image with @digest counts as pinned",
        [pod("a", image=f"{HOST}/team/app:v1@{OLD}"), pod("b", digest=NEW)],
        Verdict.CURRENT,
        Reason.UP_TO_DATE,
    ),
    Case(
        "if-not-present-rolls-with-pinning",
        "with pinning, IfNotPresent is rolled: the replacement is pinned to its digest",
        [pod("a", digest=NEW, image=pinned(NEW)), pod("b")],
        Verdict.STALE,
        Reason.STALE_POD,
        deletes="b",
        deployment=deployment(ContainerView("app", IMAGE, "IfNotPresent")),
        pinning=True,
    ),
    Case(
        "never-is-never-rolled-even-with-pinning",
        "with pinning, Never is still not rolled (the kubelet would not pull the pin)",
        [pod("a"), pod("b")],
        Verdict.SKIPPED,
        Reason.PULL_POLICY_NOT_ALWAYS,
        deployment=deployment(ContainerView("app", IMAGE, "Never")),
        pinning=True,
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_rule(case: Case) -> None:
    check_rule(case)
