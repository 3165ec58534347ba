"""Helm v4.3.1 ``pkg/strvals`` (``parser.go``): what every ``--set*`` parser shares.

The rune reader (``\\`` takes the next rune literally), ``typedVal`` (how a ``--set`` value is
typed: ``3`` is an int64, ``1.5`` a string, ``true``/``false``/``null`` typed in any case), the
list and map helpers with Helm's error messages, the keys, maps and indices both parsers read
alike (``_KeyParser``), and the ``encoding/json`` decoding of ``--set-json`` values (numbers
float64, an empty value null). The parsers themselves are :mod:`jobhash.strvals_parser`
(``--set``, ``--set-string``, ``--set-file``, ``--set-json``) and :mod:`jobhash.strvals_literal`
(``--set-literal``); :mod:`jobhash.valueflags` applies a flag.
"""

from __future__ import annotations

import json
import math
import re
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any, Final

from jobhash.gojson import GoValue
from jobhash.gotemplate import go_kind
from jobhash.goyaml import deeper_than
from jobhash.goyaml_compose import MAX_VALUE_DEPTH

MAX_INDEX = 65536
MAX_NESTED_NAME_LEVEL = 30


class _StrvalsError(Exception):
    """A strvals parse error; the message is Helm's."""


class _NotListError(Exception):
    pass


_KEY_STOP = frozenset("=[,.")
_LIST_ITEM_STOP = frozenset("[.=")
_INT_RE = re.compile(r"[+-]?[0-9]+")


class _Runes:
    """The rune reader strvals parses from (a bytes.Buffer read with ReadRune)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def read(self) -> str | None:
        if self.pos >= len(self.text):
            return None
        char = self.text[self.pos]
        self.pos += 1
        return char

    def unread(self) -> None:
        self.pos -= 1

    def until(self, stop: frozenset[str]) -> tuple[str, str | None, bool]:
        """``runesUntil``: (text, stop rune, hit EOF); ``\\`` takes the next rune literally."""
        out: list[str] = []
        while True:
            char = self.read()
            if char is None:
                return "".join(out), None, True
            if char in stop:
                return "".join(out), char, False
            if char == "\\":
                escaped = self.read()
                if escaped is None:
                    return "".join(out), None, True
                out.append(escaped)
            else:
                out.append(char)


def _go_equal_fold(text: str, word: str) -> bool:
    """``strings.EqualFold`` for an ASCII ``word``: simple Unicode case folding per rune."""
    if len(text) != len(word):
        return False
    for char, want in zip(text, word, strict=True):
        folded = char.casefold()
        if char != want and (len(folded) != 1 or folded != want):
            return False
    return True


def typed_value(text: str, *, as_string: bool) -> GoValue:
    """strvals ``typedVal``: how one ``--set`` value is typed."""
    if as_string:
        return text
    if _go_equal_fold(text, "true"):
        return True
    if _go_equal_fold(text, "false"):
        return False
    if _go_equal_fold(text, "null"):
        return None
    if text == "0":
        return 0
    if text and text[0] != "0" and _INT_RE.fullmatch(text):
        number = int(text)
        if -(2**63) <= number < 2**63:
            return number
    return text


#: Go's ``%T`` of a value where it is not Sprig's ``kindOf`` (``go_kind``) of it.
_GO_TYPE_OF_KIND: Final = {
    "invalid": "nil",
    "slice": "[]interface {}",
    "map": "map[string]interface {}",
}


def _go_kind(value: object) -> str:
    """The Go type an interface conversion's panic names (``%T``): ``int64``, ``nil``, ..."""
    kind = go_kind(value)
    return _GO_TYPE_OF_KIND.get(kind, kind)


def _want_list(value: object) -> list[GoValue]:
    if not isinstance(value, list):
        raise _StrvalsError(
            "unable to parse key: interface conversion: interface {} is "
            f"{_go_kind(value)}, not []interface {{}}"
        )
    return value


def _want_map(value: object) -> dict[str, GoValue]:
    if not isinstance(value, dict):
        raise _StrvalsError(
            "unable to parse key: interface conversion: interface {} is "
            f"{_go_kind(value)}, not map[string]interface {{}}"
        )
    return value


def _set(data: dict[str, GoValue], key: str, value: GoValue) -> None:
    if key:
        data[key] = value


def _set_index(items: list[GoValue], index: int, value: GoValue) -> list[GoValue]:
    if index < 0:
        raise _StrvalsError(f"negative {index} index not allowed")
    if index > MAX_INDEX:
        raise _StrvalsError(
            f"index of {index} is greater than maximum supported index of {MAX_INDEX}"
        )
    if len(items) <= index:
        items = items + [None] * (index + 1 - len(items))
    items[index] = value
    return items


Reader = Callable[[str], GoValue]
"""strvals ``RunesValueReader``: turns one value's text into the value (typing, or a file)."""


def _go_quote(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


class _KeyParser(ABC):
    """What strvals ``parser`` and ``literalParser`` do alike: ``key.`` nests a map, ``key[i]``
    a list, ``[i].`` and ``[i][j]`` the same inside a list. Each parser says how it reads up
    to a stop rune (``until``) and what a key's and a list item's ``=`` takes."""

    def __init__(self, text: str, data: dict[str, GoValue]) -> None:
        self.sc = _Runes(text)
        self.data = data

    @abstractmethod
    def until(self, stop: frozenset[str]) -> tuple[str, str | None, bool]:
        """(text, stop rune, hit EOF), as ``runesUntil`` or ``runesUntilLiteral``."""

    @abstractmethod
    def key(self, data: dict[str, GoValue], level: int) -> bool:
        """``key``: one key and what follows it into ``data``; True at EOF."""

    @abstractmethod
    def list_item(self, items: list[GoValue], index: int, level: int) -> tuple[list[GoValue], bool]:
        """``listItem``: what follows ``[index]`` into ``items``; the list, and True at EOF."""

    def parse(self) -> None:
        while not self.key(self.data, 0):
            pass

    def key_map(self, data: dict[str, GoValue], key: str, level: int) -> bool:
        """``key.``: the map under ``key``, one nesting level down."""
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

    def key_list(self, data: dict[str, GoValue], key: str, level: int) -> bool:
        """``key[``: the list under ``key``, from its index on."""
        index = self.key_index()
        if index is None:
            return True  # "error parsing index: EOF" wraps io.EOF: Helm stops quietly
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

    def item_stop(self, index: int) -> tuple[str | None, bool]:
        """``listItem``'s start: the rune after ``[index]`` (``=``, ``.`` or ``[``), or EOF."""
        if index < 0:
            raise _StrvalsError(f"negative {index} index not allowed")
        rest, last, eof = self.until(_LIST_ITEM_STOP)
        if rest:
            raise _StrvalsError(f"unexpected data at end of array index: {_go_quote(rest)}")
        return last, eof

    def item_map(self, items: list[GoValue], index: int, level: int) -> tuple[list[GoValue], bool]:
        """``[index].``: the map at ``index``."""
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

    def item_list(self, items: list[GoValue], index: int, level: int) -> tuple[list[GoValue], bool]:
        """``[index][``: the list at ``index``, from its own index on."""
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


def _reject_constant(name: str) -> GoValue:
    raise ValueError(f"invalid character {name[0]!r} looking for beginning of value")


_JSON = json.JSONDecoder(parse_int=float, parse_constant=_reject_constant)


def _go_json_value(value: Any) -> GoValue:
    """What ``encoding/json`` gives where Python's decoder differs: a lone surrogate escape is
    U+FFFD, and a number beyond float64 is an error (Python would give inf)."""
    if isinstance(value, str):
        return _SURROGATE.sub("\ufffd", value)
    if isinstance(value, float):
        if math.isinf(value):
            raise ValueError("a number does not fit a float64")
        return value
    if isinstance(value, list):
        return [_go_json_value(item) for item in value]
    if isinstance(value, dict):
        return {_SURROGATE.sub("\ufffd", key): _go_json_value(item) for key, item in value.items()}
    return value  # type: ignore[no-any-return]


_SURROGATE = re.compile("[\ud800-\udfff]")


#: A JSON value of a flag nested past the cap every later step can follow (goyaml).
_TOO_DEEP = (
    f"a JSON value nested more than {MAX_VALUE_DEPTH} levels deep;"
    f" jobhash follows at most {MAX_VALUE_DEPTH}"
)


def decode_json_prefix(text: str, start: int) -> tuple[GoValue, int]:
    """``json.Decoder.Decode`` on ``text[start:]``: one JSON value (numbers are float64) and the
    index just after it; whatever follows is left for the caller, as ``InputOffset`` does."""
    index = start
    while index < len(text) and text[index] in " \t\n\r":
        index += 1
    try:
        value, end = _JSON.raw_decode(text, index)
        if deeper_than(value, MAX_VALUE_DEPTH):
            raise _StrvalsError(_TOO_DEEP)
        value = _go_json_value(value)
    except RecursionError as err:  # deeper than Python's own JSON parser follows
        raise _StrvalsError(_TOO_DEEP) from err
    except ValueError as err:
        raise _StrvalsError(str(err)) from err
    if isinstance(value, float) and end < len(text):
        # Python stops before a "." or "e" that does not continue the number; Go's scanner
        # has already committed to it and fails ("1.", "1e", "1.5e+").
        number, following = text[index:end].lower(), text[end].lower()
        if "e" not in number and (following == "e" or (following == "." and "." not in number)):
            after = text[end + 1 : end + 2]
            raise _StrvalsError(
                f"invalid character {after!r} in numeric literal"
                if after
                else "unexpected end of JSON input"
            )
    return value, end


def decode_json_object(text: str) -> dict[str, GoValue]:
    """``json.Unmarshal`` into ``map[string]any``: exactly one JSON object, nothing after it."""
    try:
        value = _go_json_value(_JSON.decode(text))
    except ValueError as err:
        raise _StrvalsError(str(err)) from err
    if not isinstance(value, dict):
        raise _StrvalsError("json: cannot unmarshal into Go value of type map[string]interface {}")
    return value
