"""CloudEvents over HTTP: structured, batched and binary content modes (pure).

The CloudEvents HTTP protocol binding (cloudevents/spec ``cloudevents/bindings/
http-protocol-binding.md``) carries an event in one of three modes:

- *structured*: ``Content-Type: application/cloudevents+json``, the whole event as the
  JSON body (``specversion``, ``type``, ``source``, ``id``, and ``data``, or ``data_base64``);
- *batched*: ``Content-Type: application/cloudevents-batch+json``, a JSON array of such
  events;
- *binary*: the attributes as ``ce-`` headers (``ce-specversion``, ``ce-type``, ...) and the
  data as the body, described by ``Content-Type``.

Only ``specversion`` 1.0 is read. The event types autoroll reads, by their data:

- ``harbor.artifact.pushed``: Harbor's CloudEvents payload format; the data is Harbor's
  ``event_data``;
- ``Microsoft.ContainerRegistry.ImagePushed``: Azure Container Registry through Event Grid;
  the data is one distribution notification event;
- ``se.aethnet.autoroll.image.pushed``: your own sender; the data is autoroll's generic
  ``{"image": ...}`` or ``{"images": [...]}``.

Every other type is answered and ignored, so a subscription that also delivers deletes,
pulls or scans costs nothing. The data must be JSON (``application/json`` or a ``+json``
type, or no ``datacontenttype``, which the spec reads as JSON in structured mode).
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable, Mapping
from typing import Any, Final

from autoroll.core.receivers import (
    BodyError,
    Reading,
    combine,
    ignored,
    load,
    text,
    unreadable,
)
from autoroll.core.receivers.distribution import event_push
from autoroll.core.receivers.generic import image_pushes
from autoroll.core.receivers.harbor import event_data_pushes

STRUCTURED: Final = "application/cloudevents+json"
BATCHED: Final = "application/cloudevents-batch+json"
SPEC_VERSION: Final = "1.0"
#: The event types read, each with the reader of its data (module docstring).
READERS: Final[Mapping[str, Callable[[Mapping[str, Any]], Reading]]] = {
    "harbor.artifact.pushed": event_data_pushes,
    "Microsoft.ContainerRegistry.ImagePushed": event_push,
    "se.aethnet.autoroll.image.pushed": image_pushes,
}
#: Events read from one batch at most.
MAX_BATCH: Final = 64


def _media_type(content_type: str) -> str:
    return content_type.partition(";")[0].strip().lower()


def _is_json(media_type: str) -> bool:
    return media_type in ("", "application/json", "text/json") or media_type.endswith("+json")


def _by_type(kind: str | None, version: str | None, data: Any) -> Reading:
    """The reading of one event's ``data`` by its ``type``."""
    if version != SPEC_VERSION:
        return unreadable(f"specversion {version!r} is not {SPEC_VERSION!r}")
    if kind is None:
        return unreadable("the event has no type")
    reader = READERS.get(kind)
    if reader is None:
        return ignored(f"an event of type {kind} is not one autoroll reads")
    if not isinstance(data, dict):
        return unreadable(f"the data of a {kind} event is not a JSON object")
    return reader(data)


def structured(event: Mapping[str, Any]) -> Reading:
    """One event in structured form (a JSON object with its attributes and data)."""
    if not _is_json(_media_type(text(event.get("datacontenttype")) or "")):
        return unreadable(f"datacontenttype {event.get('datacontenttype')!r} is not JSON")
    data = event.get("data")
    encoded = event.get("data_base64")
    if isinstance(encoded, str):
        try:
            data = load(base64.b64decode(encoded, validate=True))
        except (binascii.Error, BodyError) as exc:
            return unreadable(f"data_base64 is not base64 of JSON: {exc}")
    return _by_type(text(event.get("type")), text(event.get("specversion")), data)


def read_cloudevents(body: bytes, headers: Mapping[str, str]) -> Reading:
    """A delivery in any of the three modes (module docstring)."""
    media_type = _media_type(headers.get("content-type", ""))
    binary_version = headers.get("ce-specversion")
    if media_type not in (STRUCTURED, BATCHED) and binary_version is None:
        return unreadable(
            f"Content-Type {media_type or '(none)'} with no ce-specversion header: neither"
            f" structured ({STRUCTURED}), batched ({BATCHED}) nor binary mode"
        )
    try:
        document = load(body)
    except BodyError as exc:
        return unreadable(str(exc))
    if media_type == STRUCTURED:
        if not isinstance(document, dict):
            return unreadable("a structured event is not a JSON object")
        return structured(document)
    if media_type == BATCHED:
        if not isinstance(document, list) or len(document) > MAX_BATCH:
            return unreadable(f"a batch is not a JSON array of at most {MAX_BATCH} events")
        return combine(
            structured(e) if isinstance(e, dict) else unreadable("a batched event is not an object")
            for e in document
        )
    if not _is_json(media_type):
        return unreadable(f"binary-mode data of Content-Type {media_type} is not JSON")
    return _by_type(headers.get("ce-type") or None, binary_version, document)


__all__ = ["BATCHED", "MAX_BATCH", "READERS", "SPEC_VERSION", "STRUCTURED", "read_cloudevents"]
