"""List answers read one item at a time: each object is parsed, handed on, and dropped.

``lists.list_page`` parses a whole page into Python objects before the first item is
converted: 500 pods are about 15 MB of dicts and strings for a moment, allocated among the
small objects the cache keeps from them, so once freed they leave the interpreter's memory
pools half empty and the process's RSS high (issue 28: the cache cost about twice in RSS
what it holds). ``StreamedList`` walks the answer's text instead: the top-level keys one by
one, and inside ``items`` each element with the standard decoder's ``raw_decode`` at its
offset, so only one object's dicts live at a time. What is kept is the same as
``lists.list_page``'s: the items that are objects, without their ``managedFields``, the
``metadata.continue`` token and the ``metadata.resourceVersion``.

Pure. A body that is not a list answer raises ``ValueError`` with the same words as
``lists``; a syntax error may come after some items were already handed on, so a caller
keeps what it was given only once the whole answer was read (the informer does: a failed
page discards its list; a pass fails).
"""

from __future__ import annotations

import json
import re
from collections.abc import Generator, Iterator
from typing import Any, Final

_SPACE: Final = re.compile(r"[ \t\n\r]*")


def _without_managed_fields(obj: dict[str, Any]) -> dict[str, Any]:
    obj.pop("managedFields", None)
    return obj


_DECODER: Final = json.JSONDecoder(object_hook=_without_managed_fields)


class _SyntaxError(Exception):
    """The text is not JSON (reported as such, whatever stage found it)."""


class StreamedList:
    """One list answer, read as ``items()`` is iterated (module docstring)."""

    def __init__(self, body: bytes | str) -> None:
        self._text = body.decode("utf-8", errors="replace") if isinstance(body, bytes) else body
        self.continue_token = ""  # known once ``items()`` is exhausted
        self.resource_version = ""

    def items(self) -> Iterator[dict[str, Any]]:
        """Each item that is a JSON object, without ``managedFields``, in order."""
        try:
            yield from self._walk()
        except (_SyntaxError, json.JSONDecodeError, IndexError) as exc:
            detail = exc if str(exc) else "unexpected end"
            raise ValueError(f"the API answered with a body that is not JSON ({detail})") from None

    def _walk(self) -> Generator[dict[str, Any], None, None]:
        text = self._text
        pos = _skip(text, 0)
        if text[pos : pos + 1] != "{":
            _DECODER.decode(text)  # not JSON at all raises here, as ``lists`` says
            raise ValueError("the answer is not a list")
        pos = _skip(text, pos + 1)
        if text[pos] == "}":
            self._end(text, pos + 1)
            return
        while True:
            key, pos = _DECODER.raw_decode(text, pos)
            if not isinstance(key, str):
                raise _SyntaxError(f"a key that is not a string at {pos}")
            pos = _skip(text, self._expect(text, _skip(text, pos), ":"))
            if key == "items" and text[pos] == "[":
                pos = yield from self._items(text, _skip(text, pos + 1))
            else:
                value, pos = _DECODER.raw_decode(text, pos)
                self._top(key, value)
            pos = _skip(text, pos)
            if text[pos] == ",":
                pos = _skip(text, pos + 1)
                continue
            self._end(text, self._expect(text, pos, "}"))
            return

    def _items(self, text: str, pos: int) -> Generator[dict[str, Any], None, int]:
        """The elements of ``items`` from ``pos`` (after its ``[``); returns the position
        after its ``]``."""
        if text[pos] == "]":
            return pos + 1
        while True:
            item, pos = _DECODER.raw_decode(text, pos)
            if isinstance(item, dict):
                yield item
            del item  # only one object's dicts at a time
            pos = _skip(text, pos)
            if text[pos] == "]":
                return pos + 1
            pos = _skip(text, self._expect(text, pos, ","))

    def _top(self, key: str, value: object) -> None:
        if key == "items" and value is not None:
            raise ValueError("the answer's items are not a list")
        if key == "metadata" and isinstance(value, dict):
            self.continue_token = str(value.get("continue") or "")
            self.resource_version = str(value.get("resourceVersion") or "")

    @staticmethod
    def _expect(text: str, pos: int, char: str) -> int:
        if text[pos] != char:
            raise _SyntaxError(f"expected {char!r} at {pos}")
        return pos + 1

    @staticmethod
    def _end(text: str, pos: int) -> None:
        if _skip(text, pos) != len(text):
            raise _SyntaxError(f"extra data at {pos}")


def _skip(text: str, pos: int) -> int:
    match = _SPACE.match(text, pos)
    return match.end() if match else pos


__all__ = ["StreamedList"]
