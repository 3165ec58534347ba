"""JSON from outside, parsed within a size cap and a nesting-depth cap (pure).

``json.loads`` recurses once per nested array or object, so a body nested a few thousand
levels deep raises ``RecursionError`` — not a ``ValueError`` — and escapes every handler
written for bad JSON: one registry manifest or one webhook body could end a whole pass.
``loads`` refuses such a body before the parser sees it: the size first, then the depth,
counted without recursion over the brackets that stand outside strings. Both refusals are
``ValueError`` subclasses, so a caller that already turns bad JSON into its own layer's
typed error (``bad-manifest``, ``token-failed``, "names nothing") needs nothing more.

Keep the caps far above what a real document holds: an OCI index is five levels deep, a
Forgejo package event about six, a token answer one.
"""

from __future__ import annotations

import json
import re
from typing import Any, Final

#: Nesting the callers allow by default: ten times the deepest real document they read.
MAX_DEPTH: Final = 64

#: A JSON string literal (escapes included); what it holds is never structure.
_STRING: Final = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
#: Every byte but the four brackets, deleted before the brackets are counted.
_NOT_BRACKETS: Final = bytes(b for b in range(256) if b not in b"[]{}")


class BoundedJsonError(ValueError):
    """A body refused before parsing; ``reason`` is a short label for logs and metrics."""

    reason = "bad-json"


class TooLargeError(BoundedJsonError):
    reason = "too-large"

    def __init__(self, size: int, cap: int) -> None:
        super().__init__(f"{size} bytes is over the cap of {cap} bytes")
        self.size = size
        self.cap = cap


class TooDeepError(BoundedJsonError):
    reason = "too-deep"

    def __init__(self, cap: int) -> None:
        super().__init__(f"nested more than {cap} arrays or objects deep (the cap)")
        self.cap = cap


def nesting_depth(data: bytes, *, stop_above: int | None = None) -> int:
    """How deep arrays and objects nest in ``data`` (brackets inside strings do not count).

    Iterative, so any depth is measured without recursion; with ``stop_above`` it returns
    as soon as the depth passes it. Unbalanced input is measured as far as it goes: the
    parser reports it afterwards.
    """
    brackets = _STRING.sub(b"", data).translate(None, _NOT_BRACKETS)
    depth = deepest = 0
    for byte in brackets:
        if byte in b"[{":
            depth += 1
            if depth > deepest:
                deepest = depth
                if stop_above is not None and deepest > stop_above:
                    return deepest
        else:
            depth = max(0, depth - 1)
    return deepest


def loads(data: bytes | str, *, max_bytes: int, max_depth: int = MAX_DEPTH) -> Any:
    """``json.loads(data)``, refusing a body over ``max_bytes`` or nested over ``max_depth``.

    Raises ``TooLargeError``, ``TooDeepError`` or ``json.JSONDecodeError``: all ValueErrors.
    """
    raw = data.encode("utf-8") if isinstance(data, str) else data
    if len(raw) > max_bytes:
        raise TooLargeError(len(raw), max_bytes)
    if nesting_depth(raw, stop_above=max_depth) > max_depth:
        raise TooDeepError(max_depth)
    try:
        return json.loads(raw)
    except RecursionError as exc:  # cannot happen under the cap; a ValueError if it does
        raise TooDeepError(max_depth) from exc


__all__ = [
    "MAX_DEPTH",
    "BoundedJsonError",
    "TooDeepError",
    "TooLargeError",
    "loads",
    "nesting_depth",
]
