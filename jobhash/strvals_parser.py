"""Helm v4.3.1 ``pkg/strvals`` ``parser``: the ``--set`` syntax.

``a.b=1``, ``a[0]=x``, ``a={x,y}``, ``\\`` escapes and ``,`` between pairs, for ``--set``
(typed values), ``--set-string`` (strings), ``--set-file`` (paths whose content becomes a
string) and ``--set-json`` (JSON values). The shared pieces are in :mod:`jobhash.strvals`.
"""

from __future__ import annotations

from jobhash.gojson import GoValue
from jobhash.gotemplate import GO_SPACE
from jobhash.strvals import (
    _KEY_STOP,
    Reader,
    _go_quote,
    _KeyParser,
    _NotListError,
    _set,
    _set_index,
    _StrvalsError,
    decode_json_prefix,
)


class _StrvalsParser(_KeyParser):
    """strvals ``parser``: typed (``--set``), forced strings (``--set-string``), file contents
    (``--set-file``: ``reader`` reads the path) or JSON values (``--set-json``).

    Methods return True where the Go code returns ``io.EOF`` (which ends parsing silently) and
    raise :class:`_StrvalsError` for every other error.
    """

    def __init__(
        self, text: str, data: dict[str, GoValue], *, reader: Reader, json_values: bool = False
    ) -> None:
        super().__init__(text, data)
        self.reader = reader
        self.json_values = json_values

    def empty_val(self) -> bool:
        """``emptyVal``: skip spaces; True at EOF or a ``,`` (both consumed), else False."""
        while True:
            char = self.sc.read()
            if char is None or char == ",":
                return True
            if char not in GO_SPACE:
                self.sc.unread()
                return False

    def json_val(self) -> GoValue:
        """A ``json.Decoder.Decode`` of the rest, consuming only the value, then ``emptyVal``."""
        value, end = decode_json_prefix(self.sc.text, self.sc.pos)
        self.sc.pos = end
        self.empty_val()
        return value

    def until(self, stop: frozenset[str]) -> tuple[str, str | None, bool]:
        """``runesUntil`` (``\\`` takes the next rune literally)."""
        return self.sc.until(stop)

    def key(self, data: dict[str, GoValue], level: int) -> bool:
        key, last, eof = self.until(_KEY_STOP)
        if eof:
            if not key:
                return True
            raise _StrvalsError(f"key {_go_quote(key)} has no value")
        if last == "[":
            return self.key_list(data, key, level)
        if last == "=":
            if self.json_values:
                _set(data, key, None if self.empty_val() else self.json_val())
                return False
            try:
                values = self.val_list()
            except EOFError:
                _set(data, key, "")
                return True
            except _NotListError:
                text, _ = self.val()
                _set(data, key, self.reader(text))
                return False
            _set(data, key, values)
            return False
        if last == ",":
            raise _StrvalsError(f"key {_go_quote(key)} has no value (cannot end with ,)")
        # last == "."
        return self.key_map(data, key, level)

    def list_item(self, items: list[GoValue], index: int, level: int) -> tuple[list[GoValue], bool]:
        last, eof = self.item_stop(index)
        if eof:
            return items, True
        if last == "=":
            if self.json_values:
                if self.empty_val():
                    return _set_index(items, index, None), False
                return _set_index(items, index, self.json_val()), False
            try:
                values = self.val_list()
            except EOFError:
                return _set_index(items, index, ""), False
            except _NotListError:
                text, _ = self.val()
                return _set_index(items, index, self.reader(text)), False
            return _set_index(items, index, values), False
        if last == "[":
            return self.item_list(items, index, level)
        # last == "."
        return self.item_map(items, index, level)

    def val(self) -> tuple[str, bool]:
        text, _, eof = self.sc.until(frozenset(","))
        return text, eof

    def val_list(self) -> list[GoValue]:
        first = self.sc.read()
        if first is None:
            raise EOFError
        if first != "{":
            self.sc.unread()
            raise _NotListError
        values: list[GoValue] = []
        while True:
            text, last, eof = self.sc.until(frozenset(",}"))
            if eof:
                raise _StrvalsError("list must terminate with '}'")
            values.append(self.reader(text))
            if last == "}":
                following = self.sc.read()
                if following is not None and following != ",":
                    self.sc.unread()
                return values
