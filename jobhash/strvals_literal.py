"""Helm v4.3.1 ``pkg/strvals`` ``literal_parser.go``: the ``--set-literal`` syntax.

Keys as for ``--set``; the value is everything after the first ``=``, verbatim, with no
escapes, commas or lists (one pair per flag).
"""

from __future__ import annotations

from jobhash.gojson import GoValue
from jobhash.strvals import (
    _INT_RE,
    _LIST_ITEM_STOP,
    MAX_NESTED_NAME_LEVEL,
    _go_quote,
    _Runes,
    _set,
    _set_index,
    _StrvalsError,
    _want_list,
    _want_map,
)


class _LiteralParser:
    """strvals ``literalParser`` (``--set-literal``): keys as for ``--set`` but without ``\\``
    escapes or ``,``; the value is the rest of the argument, verbatim (one pair per flag)."""

    def __init__(self, text: str, data: dict[str, GoValue]) -> None:
        self.sc = _Runes(text)
        self.data = data

    def until(self, stop: frozenset[str]) -> tuple[str, str | None, bool]:
        """``runesUntilLiteral``: like ``runesUntil`` without escapes."""
        start = self.sc.pos
        while True:
            char = self.sc.read()
            if char is None:
                return self.sc.text[start:], None, True
            if char in stop:
                return self.sc.text[start : self.sc.pos - 1], char, False

    def parse(self) -> None:
        while not self.key(self.data, 0):
            pass

    def rest(self) -> str:
        text = self.sc.text[self.sc.pos :]
        self.sc.pos = len(self.sc.text)
        return text

    def key(self, data: dict[str, GoValue], level: int) -> bool:
        key, last, eof = self.until(_LITERAL_KEY_STOP)
        if eof:
            if not key:
                return True
            raise _StrvalsError(f"key {_go_quote(key)} has no value")
        if last == "=":
            _set(data, key, self.rest())
            return False
        if last == ".":
            level += 1
            if level > MAX_NESTED_NAME_LEVEL:
                raise _StrvalsError(
                    "value name nested level is greater than maximum supported nested level of "
                    f"{MAX_NESTED_NAME_LEVEL}"
                )
            inner: dict[str, GoValue] = _want_map(data[key]) if key in data else {}
            eof = self.key(inner, level)
            if not eof and not inner:
                raise _StrvalsError(f"key map {_go_quote(key)} has no value")
            if inner:
                _set(data, key, inner)
            return eof
        # last == "["
        index = self.key_index()
        if index is None:
            return True
        items: list[GoValue] = _want_list(data[key]) if key in data else []
        items, eof = self.list_item(items, index, level)
        _set(data, key, items)
        return eof

    def key_index(self) -> int | None:
        text, _, eof = self.until(frozenset("]"))
        if eof:
            return None
        if not _INT_RE.fullmatch(text) or not -(2**63) <= int(text) < 2**63:
            raise _StrvalsError(
                f'error parsing index: strconv.Atoi: parsing "{text}": invalid syntax'
            )
        return int(text)

    def list_item(self, items: list[GoValue], index: int, level: int) -> tuple[list[GoValue], bool]:
        if index < 0:
            raise _StrvalsError(f"negative {index} index not allowed")
        rest, last, eof = self.until(_LIST_ITEM_STOP)
        if rest:
            raise _StrvalsError(f"unexpected data at end of array index: {_go_quote(rest)}")
        if eof:
            return items, True
        if last == "=":
            return _set_index(items, index, self.rest()), False
        if last == ".":
            inner: dict[str, GoValue] = {}
            if len(items) > index:
                existing = items[index]
                if isinstance(existing, dict):
                    inner = existing
                else:
                    items[index] = inner  # indices out of order: Go starts an empty map in place
            if self.key(inner, level):
                return items, True
            return _set_index(items, index, inner), False
        # last == "["
        next_index = self.key_index()
        if next_index is None:
            return items, True
        current: list[GoValue] = []
        if len(items) > index and items[index] is not None:
            current = _want_list(items[index])
        nested, eof = self.list_item(current, next_index, level)
        if eof:
            return items, True
        return _set_index(items, index, nested), False


_LITERAL_KEY_STOP = frozenset("=[.")
