"""A registry port answered from tables, for passes where the registry is scenery rather than
the subject (``autoroll plan``, the scripted cluster shapes): each tag's digest (``not-found``
when absent), each digest's children (none unless told) and content (each manifest its own
config unless told). It keeps no cache, so nothing is known before it is fetched.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from autoroll.core.decide import ChildrenRequest, ContentRequest
from autoroll.core.images import TagRef
from autoroll.core.model import Digest, ImageContent, Unknown


class AnsweringRegistry:
    """``answers`` by tag; ``children`` and ``content`` by digest, for a test to fill in."""

    def __init__(
        self,
        answers: Mapping[TagRef, Digest | Unknown],
        content: Mapping[Digest, ImageContent | Unknown] | None = None,
    ) -> None:
        self.answers = dict(answers)
        self.children: dict[Digest, frozenset[Digest] | Unknown] = {}
        self.content: dict[Digest, ImageContent | Unknown] = dict(content or {})

    def resolve(self, refs: Iterable[TagRef]) -> Mapping[TagRef, Digest | Unknown]:
        return {r: self.answers.get(r, Unknown("not-found")) for r in refs}

    def known_children(self) -> Mapping[Digest, frozenset[Digest]]:
        return {}

    def fetch_children(
        self, wanted: Iterable[ChildrenRequest]
    ) -> Mapping[Digest, frozenset[Digest] | Unknown]:
        return {w.digest: self.children.get(w.digest, frozenset()) for w in wanted}

    def known_content(self) -> Mapping[Digest, ImageContent]:
        return {}

    def fetch_content(
        self, wanted: Iterable[ContentRequest]
    ) -> Mapping[Digest, ImageContent | Unknown]:
        return {
            w.digest: self.content.get(w.digest, ImageContent(frozenset({w.digest})))
            for w in wanted
        }
