"""A node's platform against an index's variants, and the pod it makes current (issue 18's seam;
the rows of indexes that share some platforms are in ``test_decide_content.py``).
"""

from __future__ import annotations

import pytest

from autoroll.core.decide import PodState
from autoroll.core.model import Digest, ImageContent
from tests.support.decide_cases import AMD_CFG, ARM_CFG, ARM_OLD_CFG, run
from tests.unit.test_decide_content import case

VARIANTS = ImageContent(
    frozenset({AMD_CFG, ARM_CFG, ARM_OLD_CFG}),
    (("linux/amd64", AMD_CFG), ("linux/arm64/v8", ARM_CFG), ("linux/arm/v7", ARM_OLD_CFG)),
)


@pytest.mark.parametrize(
    ("content", "platform", "expected"),
    [
        # A node's labels say os/arch only; an index may name a variant.
        (VARIANTS, "linux/arm64", ARM_CFG),
        (VARIANTS, "linux/arm64/v8", ARM_CFG),  # exact
        (VARIANTS, "linux/arm", ARM_OLD_CFG),  # one variant of arm: its config
        (VARIANTS, "linux/amd64", AMD_CFG),
        (VARIANTS, "linux/s390x", None),
        (VARIANTS, "linux", None),
        # two variants of one os/arch with different images: which one runs is the CPU's call
        (
            ImageContent(
                frozenset({ARM_CFG, ARM_OLD_CFG}),
                (("linux/arm/v6", ARM_CFG), ("linux/arm/v7", ARM_OLD_CFG)),
            ),
            "linux/arm",
            None,
        ),
        # two variants with one image: no doubt
        (
            ImageContent(
                frozenset({ARM_CFG}), (("linux/arm/v6", ARM_CFG), ("linux/arm/v7", ARM_CFG))
            ),
            "linux/arm",
            ARM_CFG,
        ),
    ],
)
def test_a_nodes_os_arch_matches_an_indexs_variants_only_without_doubt(
    content: ImageContent, platform: str, expected: Digest | None
) -> None:
    assert content.config_for(platform) == expected


def test_a_pod_current_by_its_nodes_platform_says_so() -> None:
    decision = run(case("index-sharing-some-platforms-on-an-unchanged-platform-is-current"))
    [verdict] = decision.containers
    states = {f.pod: f.state for f in verdict.pods}
    assert states["a"] is PodState.SAME_PLATFORM
    assert "a: only other platforms changed" in verdict.detail
    [note] = [f.note for f in verdict.pods if f.pod == "a"]
    assert "its node's platform linux/amd64 has the same image" in note
