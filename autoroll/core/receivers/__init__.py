"""The registries' webhook bodies, read into ``Pushed`` values: one module per source family.

Each reader is pure — the body's bytes and the request headers (names lowercased) in, a
``Reading`` out — and runs only after the request authenticated
(``autoroll.core.receivers.auth``; the routes are in ``autoroll.edge.receivers``, the decision in
docs/adr/025-webhook-receivers.md):

- ``distribution``: the distribution registry's notification envelope, also what GitLab's
  container registry sends, and the data of Azure Container Registry's CloudEvent;
- ``harbor``: Harbor's ``PUSH_ARTIFACT`` webhook (its default payload, and the data of its
  CloudEvents payload);
- ``github``: GitHub's ``package`` event for a container on ghcr.io;
- ``hubs``: Docker Hub's and Quay's push webhooks (sources that cannot sign);
- ``generic``: autoroll's own small format, ``{"image": ...}`` or ``{"images": [...]}``;
- ``cloudevents``: CloudEvents in structured, batched and binary mode, by event type.

A reading is ``PUSHED`` (it names tag pushes, turned into a scope by ``autoroll.core.pushed``),
``IGNORED`` (it is an event that moves no tag: a pull, a delete, a push by digest, a ping) or
``UNREADABLE`` (not the documented shape: not JSON, past the caps of ``boundedjson``, a field
of the wrong type). Neither of the last two starts a pass: a registry sends many events that
are not pushes (the distribution registry one per pull), and a pass per event would be a pass
per pull.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Final

from autoroll.core import boundedjson
from autoroll.core.pushed import Pushed

#: Largest webhook body read, in bytes: the same cap as Forgejo's (``webhook_body``). A
#: distribution envelope holds a few events of about 1 KiB each.
MAX_BODY_BYTES: Final = 1024 * 1024


class ReadingKind(StrEnum):
    PUSHED = "pushed"  # names tag pushes: a targeted pass
    IGNORED = "ignored"  # a readable event that moves no tag: no pass
    UNREADABLE = "unreadable"  # not the documented shape: no pass


@dataclass(frozen=True, slots=True)
class Reading:
    """What one delivery says; ``detail`` says why it names nothing (for the answer)."""

    kind: ReadingKind
    pushes: tuple[Pushed, ...] = ()
    detail: str = ""


def pushed(pushes: Iterable[Pushed], *, otherwise: str) -> Reading:
    """A reading of ``pushes``, or an ignored one saying ``otherwise`` when none moves a tag."""
    tagged = tuple(p for p in pushes if p.tag)
    if not tagged:
        return ignored(otherwise)
    return Reading(ReadingKind.PUSHED, tagged)


def ignored(detail: str) -> Reading:
    return Reading(ReadingKind.IGNORED, detail=detail)


def unreadable(detail: str) -> Reading:
    return Reading(ReadingKind.UNREADABLE, detail=detail)


def combine(readings: Iterable[Reading]) -> Reading:
    """Several readings of one delivery (a batch of events) as one: the pushes of all, or
    the first reason none pushed (an unreadable part is reported before an ignored one)."""
    parts = list(readings)
    pushes = tuple(p for r in parts for p in r.pushes)
    if pushes:
        return Reading(ReadingKind.PUSHED, pushes)
    for kind in (ReadingKind.UNREADABLE, ReadingKind.IGNORED):
        for part in parts:
            if part.kind is kind:
                return part
    return ignored("an empty batch")


class BodyError(ValueError):
    """A body that is not JSON, or past the caps; the message says which."""


def load(body: bytes) -> Any:
    """The JSON document in ``body``, within the caps of ``boundedjson``; ``BodyError`` if not."""
    try:
        return boundedjson.loads(body, max_bytes=MAX_BODY_BYTES)
    except boundedjson.BoundedJsonError as exc:
        raise BodyError(f"the body is refused: {exc}") from exc
    except ValueError as exc:
        raise BodyError("the body is not JSON") from exc


BodyReader = Callable[[bytes, Mapping[str, str]], Reading]
"""A source's reader: the body's bytes and the request headers (names lowercased) in."""


def reads_json(read: Callable[[Any], Reading]) -> BodyReader:
    """A ``BodyReader`` that hands ``read`` the body's JSON document (``load``); a body that is
    not JSON, or past the caps, is unreadable, saying why. For the sources whose headers
    say nothing a reader needs."""

    @functools.wraps(read)
    def reader(body: bytes, headers: Mapping[str, str]) -> Reading:
        try:
            document = load(body)
        except BodyError as exc:
            return unreadable(str(exc))
        return read(document)

    return reader


def text(value: object) -> str | None:
    """``value`` when it is a non-empty string, else None (a field of the wrong type)."""
    return value if isinstance(value, str) and value else None


def mapping(value: object) -> dict[str, Any]:
    """``value`` when it is a JSON object, else an empty one."""
    return value if isinstance(value, dict) else {}


__all__ = [
    "MAX_BODY_BYTES",
    "BodyError",
    "BodyReader",
    "Reading",
    "ReadingKind",
    "combine",
    "ignored",
    "load",
    "mapping",
    "pushed",
    "reads_json",
    "text",
    "unreadable",
]
