"""Hypothesis strategies and constants shared by the decision core's property tests
(``tests/unit/test_decide*_properties.py``): two images on one host, their digests and
configs, creation stamps in whole seconds.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from datetime import UTC, datetime, timedelta

from hypothesis import strategies as st

from autoroll.core.images import TagRef
from autoroll.core.model import Digest, ImageContent, Unknown

HOST = "forgejo.example"


IMAGES = {"app": f"{HOST}/team/app:latest", "side": f"{HOST}/team/side:v1"}


REFS = {"app": TagRef(HOST, "team/app", "latest"), "side": TagRef(HOST, "team/side", "v1")}


DIGESTS = [Digest("sha256:" + c * 64) for c in "0123"]


CONFIGS = [Digest("sha256:" + c * 64) for c in "abcd"]


PLATFORMS = ("linux/amd64", "linux/arm64")


T0 = datetime(2026, 1, 1, tzinfo=UTC)


class EachItsOwn(Mapping[Digest, ImageContent | Unknown]):
    """Every manifest stands for its own config: different digests are different content."""

    def __getitem__(self, digest: Digest) -> ImageContent | Unknown:
        return ImageContent(frozenset({digest}))

    def __iter__(self) -> Iterator[Digest]:
        return iter(())

    def __len__(self) -> int:
        return 0


def mostly(likely: object, *rare: object) -> st.SearchStrategy[object]:
    """``likely`` four times out of five: keeps generated scenarios near a deletion."""
    return st.sampled_from([likely] * 4 * max(1, len(rare)) + list(rare))


digests = st.sampled_from(DIGESTS)


# Whole seconds, as creationTimestamp has them, close together so that pods are often
# stamped in the very second a digest is first seen (the sighting time has a fraction).
stamps = st.integers(min_value=0, max_value=8).map(lambda s: T0 + timedelta(seconds=s))
