"""What a digest stands for, read from one registry: an index's children, an image's configs.

- ``fetch_children(wanted)``: ``GET`` an index by digest, only when a pod's digest did not
  match; the child digests are cached by index digest (content-addressed, so immutable).
- ``fetch_content(wanted)``: the image configs a manifest or index stands for, only when a
  pod's digest is neither the target nor one of its children: ``GET`` the digest from the
  repository the request names (a pod's imageID may name another repository than the
  enrolled one: containerd reports the alphabetically first reference of the config), and
  for an index each runnable child from the same repository (attestations are skipped).
  Distinct digests a few at once (``Limits.lookup_concurrency``).

Every body must hash to the digest it was asked by (``RegistryOrigin.get_manifest``). Both
caches are bounded (``Limits.children_cache_size``, ``Limits.content_cache_size``), least
recently used first out, and locked: ``fetch_content``'s worker threads file their answers
at once. A failure is remembered until the next pass (``new_pass``), so a digest that failed
is not asked again in the same pass however many workloads want it. Every call shares the
pass's budget, given as its ``Deadline``, whose clock runs only inside the call.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from functools import partial
from typing import TypeVar

from autoroll.core.images import TagRef
from autoroll.core.model import Digest, ImageContent, Unknown
from autoroll.registry.errors import BadResponseError, RegistryError
from autoroll.registry.limits import (
    ChildrenWanted,
    ContentWanted,
    Deadline,
    Limits,
    RegistryObserver,
    each_at_once,
)
from autoroll.registry.manifests import config_digest, index_entries, is_index
from autoroll.registry.origin import RegistryOrigin

_T = TypeVar("_T")


class ContentFetcher:
    """GETs by digest for one registry, cached by digest (module docstring)."""

    def __init__(
        self, *, origin: RegistryOrigin, limits: Limits, observer: RegistryObserver
    ) -> None:
        self._origin = origin
        self._limits = limits
        self._observer = observer
        self._children: OrderedDict[Digest, frozenset[Digest]] = OrderedDict()
        self._failed_children: dict[Digest, Unknown] = {}
        self._content: OrderedDict[Digest, ImageContent] = OrderedDict()
        self._failed_content: dict[tuple[str, Digest], Unknown] = {}
        self._cache_lock = threading.Lock()

    def new_pass(self) -> None:
        """A pass starts: what failed in the last one may be asked again."""
        self._failed_children.clear()
        self._failed_content.clear()

    def known_children(self) -> Mapping[Digest, frozenset[Digest]]:
        """Every index expansion cached so far (pass it to ``decide`` as a start)."""
        return dict(self._children)

    def fetch_children(
        self, wanted: Iterable[ChildrenWanted], deadline: Deadline
    ) -> dict[Digest, frozenset[Digest] | Unknown]:
        """Child digests of each wanted index (empty for a plain manifest); cached by digest.
        A failed index is not asked again until the next pass, however many Deployments
        want it."""
        with deadline.running():
            return self._children_of(wanted, deadline)

    def _children_of(
        self, wanted: Iterable[ChildrenWanted], deadline: Deadline
    ) -> dict[Digest, frozenset[Digest] | Unknown]:
        answers: dict[Digest, frozenset[Digest] | Unknown] = {}
        for item in sorted(wanted, key=lambda w: (w.digest, w.ref)):
            if item.digest in answers:
                continue
            cached = self._cached_children(item.digest)
            if cached is not None:
                answers[item.digest] = cached
                continue
            failed = self._failed_children.get(item.digest)
            if failed is not None:
                answers[item.digest] = failed
                continue
            answer = self._lookup(partial(self._get_children, item.ref, item.digest, deadline))
            if isinstance(answer, frozenset):
                self._remember(item.digest, answer)
            else:
                self._failed_children[item.digest] = answer
            answers[item.digest] = answer
        return answers

    def known_content(self) -> Mapping[Digest, ImageContent]:
        """Every manifest's and index's configs resolved so far (pass it to ``decide``)."""
        return dict(self._content)

    def fetch_content(
        self, wanted: Iterable[ContentWanted], deadline: Deadline
    ) -> dict[Digest, ImageContent | Unknown]:
        """The image configs each wanted manifest or index stands for; cached by digest.

        Content is the digest's, in whichever repository: a digest that failed in one
        repository may still come from another, but is not asked again from the same one
        until the next pass.
        """
        by_digest: dict[Digest, list[ContentWanted]] = {}
        for item in sorted(wanted, key=lambda w: (w.digest, w.host, w.repository)):
            by_digest.setdefault(item.digest, []).append(item)
        # Distinct digests a few at once, as ``lookup`` does: the end of a pass asks for
        # every new target's configs, after a base-image push one per tag.
        with deadline.running():
            answers = each_at_once(
                lambda items: self._content_from(items, deadline),
                list(by_digest.values()),
                self._limits,
            )
        return dict(zip(by_digest, answers, strict=True))

    def _content_from(
        self, items: list[ContentWanted], deadline: Deadline
    ) -> ImageContent | Unknown:
        """One digest's configs from the first of ``items``' repositories that has them."""
        answer: ImageContent | Unknown = Unknown("not-asked")
        for item in items:
            failed = self._failed_content.get((item.repository, item.digest))
            if failed is not None:
                answer = failed
                continue
            answer = self._lookup(
                partial(self._content_of, item.host, item.repository, item.digest, deadline)
            )
            if isinstance(answer, ImageContent):
                return answer
            self._failed_content[(item.repository, item.digest)] = answer
        return answer

    def _lookup(self, call: Callable[[], _T]) -> _T | Unknown:
        """Run one lookup; every failure becomes Unknown(reason) and is reported once."""
        try:
            return call()
        except RegistryError as exc:
            self._observer.lookup_failed(exc.reason)
            return exc.to_unknown()

    def _get_children(self, ref: TagRef, digest: Digest, deadline: Deadline) -> frozenset[Digest]:
        self._origin.check_host(ref.host, str(ref))
        document, url = self._origin.get_manifest(ref.repository, digest, deadline)
        if not is_index(document):
            return frozenset()
        return frozenset(entry.digest for entry in index_entries(document, url))

    def _content_of(
        self, host: str, repository: str, digest: Digest, deadline: Deadline, *, depth: int = 0
    ) -> ImageContent:
        """The configs ``digest`` stands for: its config, or its runnable children's."""
        self._origin.check_host(host, f"{host}/{repository}@{digest}")
        cached = self._cached_content(digest)
        if cached is not None:
            return cached
        document, url = self._origin.get_manifest(repository, digest, deadline)
        if not is_index(document):
            content = ImageContent(frozenset({config_digest(document, url)}))
        elif depth > 0:
            # Runtimes resolve one level for a platform; deeper nesting is not worth guessing.
            raise BadResponseError("bad-manifest", f"{url}: an index inside an index")
        else:
            entries = index_entries(document, url)
            self._remember(digest, frozenset(entry.digest for entry in entries))
            configs: set[Digest] = set()
            platforms: set[tuple[str, Digest]] = set()
            for entry in entries:
                if entry.is_attestation:
                    continue
                child = self._content_of(host, repository, entry.digest, deadline, depth=1)
                configs |= child.configs
                if entry.platform is not None:
                    platforms.update((entry.platform, config) for config in child.configs)
            if not configs:
                raise BadResponseError("bad-manifest", f"{url}: an index without a runnable image")
            content = ImageContent(frozenset(configs), tuple(sorted(platforms)))
        self._remember_content(digest, content)
        return content

    # Locked: ``fetch_content``'s worker threads file their answers at once.

    def _cached_children(self, digest: Digest) -> frozenset[Digest] | None:
        with self._cache_lock:
            cached = self._children.get(digest)
            if cached is not None:
                self._children.move_to_end(digest)
            return cached

    def _cached_content(self, digest: Digest) -> ImageContent | None:
        with self._cache_lock:
            cached = self._content.get(digest)
            if cached is not None:
                self._content.move_to_end(digest)
            return cached

    def _remember(self, digest: Digest, children: frozenset[Digest]) -> None:
        with self._cache_lock:
            self._children[digest] = children
            self._children.move_to_end(digest)
            while len(self._children) > self._limits.children_cache_size:
                self._children.popitem(last=False)

    def _remember_content(self, digest: Digest, content: ImageContent) -> None:
        with self._cache_lock:
            self._content[digest] = content
            self._content.move_to_end(digest)
            while len(self._content) > self._limits.content_cache_size:
                self._content.popitem(last=False)


__all__ = ["ContentFetcher"]
