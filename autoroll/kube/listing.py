"""One collection of API objects listed whole, page by page (an informer's list).

``Collection`` says what to list and watch (the path, the two operations, the selectors);
``list_whole`` asks for it ``LIST_PAGE`` objects a request and converts each object as its
page is parsed (``streamed_lists``), at most ``LISTS_AT_ONCE`` pages at once across the
process. The informer (``autoroll.kube.informer``) lists with it, then watches.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final, TypeVar

from autoroll.kube.errors import ClusterApiError, Operation
from autoroll.kube.streamed_lists import StreamedList
from autoroll.kube.transport import REQUEST_TIMEOUT, LazyRest

#: Objects asked for per list request: bounds the memory a list of thousands takes.
LIST_PAGE: Final = 500
#: Pages asked for and parsed at once, across every informer of the process. At start (and
#: after an API server restart) every informer lists together, one per enabled kind and one
#: per namespace holding enrolled workloads; a parsed page of 500 pods is about 15 MB of
#: Python objects for a moment, so twenty at once made the start the process's peak
#: (issue 28). Two keep a list request in flight while the other page is converted.
LISTS_AT_ONCE: Final = 2
_LISTING = threading.BoundedSemaphore(LISTS_AT_ONCE)

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Collection:
    """What to list and watch: the path, the two operations, and the selectors."""

    path: str
    target: str  # for messages: "(all namespaces)", "in namespace shop"
    list_operation: Operation
    watch_operation: Operation
    label_selector: str | None = None
    field_selector: str | None = None

    def query(self) -> list[tuple[str, str]]:
        query = []
        if self.label_selector:
            query.append(("labelSelector", self.label_selector))
        if self.field_selector:
            query.append(("fieldSelector", self.field_selector))
        return query


def with_selector(collection: Collection, label_selector: str | None) -> Collection:
    """``collection`` with another label selector (an informer's restart)."""
    return Collection(
        collection.path,
        collection.target,
        collection.list_operation,
        collection.watch_operation,
        label_selector,
        collection.field_selector,
    )


def list_whole(
    rest: LazyRest,
    collection: Collection,
    convert: Callable[[dict[str, Any]], T | None],
    *,
    between_pages: Callable[[], None],
) -> tuple[dict[str, T], str]:
    """The whole collection, page by page, converted (an object ``convert`` leaves out is
    not kept); returns the items by UID and the resourceVersion. ``between_pages`` may raise
    to end the list early (the informer's restart)."""
    items: dict[str, T] = {}
    token, version = "", ""
    while True:
        query = [*collection.query(), ("limit", str(LIST_PAGE))]
        if token:
            query.append(("continue", token))
        with _LISTING:  # the answer and its parse are gone before the next page
            version, token = _page(
                rest, collection, convert, query=query, items=items, version=version
            )
        if not token:
            break
        between_pages()
    return items, version


def _page(
    rest: LazyRest,
    collection: Collection,
    convert: Callable[[dict[str, Any]], T | None],
    *,
    query: list[tuple[str, str]],
    items: dict[str, T],
    version: str,
) -> tuple[str, str]:
    """One page into ``items``; returns the resourceVersion and the continue token."""
    answer = rest().send(
        collection.list_operation,
        collection.target,
        "GET",
        collection.path,
        query=query,
        timeout=REQUEST_TIMEOUT,
    )
    # One object at a time, converted as it is parsed (``streamed_lists``).
    page = StreamedList(answer.body)
    del answer
    parsed = page.items()
    while True:
        try:
            raw = next(parsed, None)
        except ValueError as exc:
            raise ClusterApiError(
                f"{collection.list_operation.action} {collection.target}: {exc}", status=0
            ) from None
        if raw is None:
            return page.resource_version or version, page.continue_token
        _keep(convert, items, raw)


def _keep(
    convert: Callable[[dict[str, Any]], T | None], items: dict[str, T], raw: dict[str, Any]
) -> None:
    uid = str((raw.get("metadata") or {}).get("uid") or "")
    converted = convert(raw) if uid else None
    if converted is not None:
        items[uid] = converted


__all__ = ["LISTS_AT_ONCE", "LIST_PAGE", "Collection", "list_whole", "with_selector"]
