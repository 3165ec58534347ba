"""Which enrolled workloads a pass looks at: every one, or those using some image tags.

A full pass (the poll timer, the first pass, a webhook whose body names nothing readable)
looks at every enrolled workload. A targeted pass looks only at the workloads whose
template uses one of the scope's ``host/repository:tag`` images on a configured registry: a
signed package event names one (``autoroll.core.webhook_body``), a workload in the middle of a
roll names its own (``autoroll.controller.pacer``).

Targeted passes must keep the loop guard exact, so a scope is always widened to *every*
enrolled workload using a tag it names, never to a part of them: the sighting a pass makes
for a tag then remembers the pods of every workload that uses it (docs/adr/017).

Scopes merge when nudges coalesce (``autoroll.controller.worker.Nudge``): a full scope absorbs any
other, and a union of more than ``MAX_TAGS`` tags becomes full, so what waits for the
worker stays small however many webhooks arrive.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final

from autoroll.core.images import CanonicalTag, TagRef

#: More distinct tags than this waiting at once: one full pass is cheaper to reason about
#: than a long list, and costs what the poll costs.
MAX_TAGS: Final = 64


@dataclass(frozen=True, slots=True, order=True)
class ImageTag(CanonicalTag):
    """A tag of a repository on one registry host, as a webhook event names it. Build it
    with ``ImageTag.named`` (or ``of``), which normalises (``images.CanonicalTag``)."""

    def names(self, ref: TagRef) -> bool:
        """Is ``ref`` this host/repository:tag?"""
        return ImageTag.of(ref) == self


@dataclass(frozen=True, slots=True)
class Scope:
    """All enrolled workloads (``tags`` is None), or those using one of ``tags``."""

    tags: frozenset[ImageTag] | None = None

    @classmethod
    def full(cls) -> Scope:
        return FULL

    @classmethod
    def of(cls, tags: Iterable[ImageTag]) -> Scope:
        """A targeted scope (empty: it looks at nothing); more than ``MAX_TAGS`` is full."""
        found = frozenset(tags)
        if len(found) > MAX_TAGS:
            return FULL
        return cls(found)

    @property
    def is_full(self) -> bool:
        return self.tags is None

    @property
    def repositories(self) -> frozenset[str]:
        """The repositories named, on whichever host (empty for a full scope, which names
        none): what a cache indexed by repository narrows to, a superset of the work."""
        return frozenset(t.repository for t in self.tags or ())

    def covers(self, ref: TagRef) -> bool:
        """Does a pass of this scope look at a container using ``ref``?"""
        if self.tags is None:
            return True
        return ImageTag.of(ref) in self.tags

    def merge(self, other: Scope) -> Scope:
        """The scope that does the work of both (a full one absorbs the other)."""
        if self.tags is None or other.tags is None:
            return FULL
        return Scope.of(self.tags | other.tags)

    def __str__(self) -> str:
        if self.tags is None:
            return "full"
        return ", ".join(str(t) for t in sorted(self.tags))


FULL: Final = Scope()

__all__ = ["FULL", "MAX_TAGS", "ImageTag", "Scope"]
