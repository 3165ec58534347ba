"""Helm v4.3.1 ``pkg/strvals`` ``parser``: the ``--set`` syntax.

``a.b=1``, ``a[0]=x``, ``a={x,y}``, ``\\`` escapes and ``,`` between pairs, for ``--set``
(typed values), ``--set-string`` (strings), ``--set-file`` (paths whose content becomes a
string) and ``--set-json`` (JSON values). The shared pieces are in :mod:`jobhash.strvals`.
"""

from __future__ import annotations

from jobhash.gojson import GoValue
from jobhash.gotemplate import GO_SPACE
from jobhash.strvals import (
    _INT_RE,
    _KEY_STOP,
    _LIST_ITEM_STOP,
    MAX_NESTED_NAME_LEVEL,
    Reader,
    _go_quote,
    _NotListError,
    _Runes,
    _set,
    _set_index,
    _StrvalsError,
    _want_list,
    _want_map,
    decode_json_prefix,
)


class _StrvalsParser:
    """strvals ``parser``: typed (``--set``), forced strings (``--set-string``), file contents
    (``--set-file``: ``reader`` reads the path) or JSON values (``--set-json``).

    Methods return True where the Go code returns ``io.EOF`` (which ends parsing silently) and
    raise :class:`_StrvalsError` for every other error.
    """

    def __init__(
        self, text: str, data: dict[str, GoValue], *, reader: Reader, json_values: bool = False
    ) -> None:
        self.sc = _Runes(text)
        self.data = data
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

    def parse(self) -> None:
        while not self.key(self.data, 0):
            pass

    def key(self, data: dict[str, GoValue], level: int) -> bool:
        key, last, eof = self.sc.until(_KEY_STOP)
        if eof:
            if not key:
                return True
            raise _StrvalsError(f"key {_go_quote(key)} has no value")
        if last == "[":
            index = self.key_index()
            if index is None:
                return True  # "error parsing index: EOF" wraps io.EOF: Helm stops quietly
            items: list[GoValue] = _want_list(data[key]) if key in data else []
            items, eof = self.list_item(items, index, level)
            _set(data, key, items)
            return eof
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

    def key_index(self) -> int | None:
        text, _, eof = self.sc.until(frozenset("]"))
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
        rest, last, eof = self.sc.until(_LIST_ITEM_STOP)
        if rest:
            raise _StrvalsError(f"unexpected data at end of array index: {_go_quote(rest)}")
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
        # last == "."
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
