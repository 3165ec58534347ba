"""Helm v4.3.1 ``pkg/strvals`` ``literal_parser.go``: the ``--set-literal`` syntax.

Keys as for ``--set``; the value is everything after the first ``=``, verbatim, with no
escapes, commas or lists (one pair per flag).
"""

from __future__ import annotations

from jobhash.gojson import GoValue
from jobhash.strvals import _go_quote, _KeyParser, _set, _set_index, _StrvalsError


class _LiteralParser(_KeyParser):
    """strvals ``literalParser`` (``--set-literal``): keys as for ``--set`` but without ``\\``
    escapes or ``,``; the value is the rest of the argument, verbatim (one pair per flag)."""

    def until(self, stop: frozenset[str]) -> tuple[str, str | None, bool]:
        """``runesUntilLiteral``: like ``runesUntil`` without escapes."""
        start = self.sc.pos
        while True:
            char = self.sc.read()
            if char is None:
                return self.sc.text[start:], None, True
            if char in stop:
                return self.sc.text[start : self.sc.pos - 1], char, False

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
            return self.key_map(data, key, level)
        # last == "["
        return self.key_list(data, key, level)

    def list_item(self, items: list[GoValue], index: int, level: int) -> tuple[list[GoValue], bool]:
        last, eof = self.item_stop(index)
        if eof:
            return items, True
        if last == "=":
            return _set_index(items, index, self.rest()), False
        if last == ".":
            return self.item_map(items, index, level)
        # last == "["
        return self.item_list(items, index, level)


_LITERAL_KEY_STOP = frozenset("=[.")
