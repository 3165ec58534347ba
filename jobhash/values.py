"""Helm's value loading: chart defaults, ``-f`` files, every ``--set*`` flag, schema.

Mirrors Helm v4.3.1:

* ``pkg/cli/values.Options.MergeValues``: ``-f`` files in order (``loader.MergeMaps``: maps
  merge, anything else replaces), then every ``--set-json``, every ``--set``, every
  ``--set-string``, every ``--set-file``, every ``--set-literal``, each flag's occurrences in
  order (so all ``--set`` come before all ``--set-string``, wherever they stand on the command
  line);
* ``pkg/strvals`` for the ``--set`` syntax and typing (``3`` is an int64, ``1.5`` a string,
  ``true``/``false``/``null`` typed in any case, ``a.b=1``, ``a[0]=x``, ``a={x,y}``, ``\\``
  escapes, ``,`` between pairs); ``--set-json`` values are JSON (numbers float64, an empty
  value null, or a whole ``{...}`` object merged like a values file); ``--set-file`` values
  are paths whose content becomes a string; ``--set-literal`` (``literal_parser.go``) takes
  everything after the first ``=`` verbatim, with no escapes, commas or lists;
* ``pkg/chart/common/util.CoalesceValues``: user values over the chart's ``values.yaml``;
  ``null`` deletes a chart default;
* ``ValidateAgainstSchema``: the coalesced values against ``values.schema.json`` (draft 7,
  Go RE2 regular expressions, so ``$`` never matches before a trailing newline).
"""

from __future__ import annotations

import functools
import json
import math
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from jobhash import schemacheck
from jobhash.errors import UnmirrorableError, UsageError, ValuesError
from jobhash.gojson import GoValue, clone
from jobhash.goyaml import MAX_VALUE_DEPTH, deeper_than, load_values, merge_maps
from jobhash.spec import GO_SPACE

if TYPE_CHECKING:
    import jsonschema.exceptions

MAX_INDEX = 65536
MAX_NESTED_NAME_LEVEL = 30

Values = dict[str, GoValue]


# ---------------------------------------------------------------------------------------------
# strvals (--set / --set-string)


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


def _go_kind(value: object) -> str:
    if value is None:
        return "nil"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int64"
    if isinstance(value, float):
        return "float64"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "[]interface {}"
    return "map[string]interface {}"


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


def _go_quote(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


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


FLAGS = ("--set-json", "--set", "--set-string", "--set-file", "--set-literal")
"""Every value flag, in the order ``MergeValues`` applies them (after all ``-f`` files)."""

_SYNTAX_FIX = (
    "use key=value pairs separated by commas: a.b=1,list[0]=x,c={x,y}; escape a literal , . [ = "
    "with a backslash"
)
_FIXES = {
    "--set": _SYNTAX_FIX,
    "--set-string": _SYNTAX_FIX,
    "--set-file": "use key=path pairs separated by commas: a.b=config.txt; escape a literal "
    ", . [ = with a backslash",
    "--set-json": 'use key=<JSON> pairs separated by commas (a.b=[1,2],c={"d":true},e="text") '
    'or one JSON object ({"a":{"b":1}}); quote strings as JSON does',
    "--set-literal": "use one key=value per flag; everything after the first = is the value",
}


def parse_flag(
    flag: str, expression: str, dest: dict[str, GoValue], *, read_file: Reader | None = None
) -> dict[str, GoValue]:
    """Apply one occurrence of ``flag`` to ``dest`` as ``MergeValues`` does; returns the values
    (a new map for a ``--set-json`` object, which is merged like a values file, else ``dest``).

    ``read_file`` gives a ``--set-file`` path's content (see :func:`read_set_file`).
    """
    if any(0xD800 <= ord(char) <= 0xDFFF for char in expression):
        raise UsageError(f"{flag} {expression!r}: the argument is not valid UTF-8")
    try:
        if flag == "--set-json":
            trimmed = expression.strip(GO_SPACE)
            if trimmed.startswith("{"):
                return merge_maps(dest, decode_json_object(trimmed))
            _StrvalsParser(expression, dest, reader=_typed, json_values=True).parse()
        elif flag == "--set-literal":
            _LiteralParser(expression, dest).parse()
        elif flag == "--set-file":
            _StrvalsParser(expression, dest, reader=read_file or read_set_file).parse()
        else:
            reader = _as_string if flag == "--set-string" else _typed
            _StrvalsParser(expression, dest, reader=reader).parse()
    except _StrvalsError as err:
        raise ValuesError(
            f"failed parsing {flag} data: {err}", source=f"{flag} {expression}", fix=_FIXES[flag]
        ) from err
    return dest


def _typed(text: str) -> GoValue:
    return typed_value(text, as_string=False)


def _as_string(text: str) -> GoValue:
    return text


def parse_set(expression: str, dest: dict[str, GoValue], *, as_string: bool = False) -> None:
    """``strvals.ParseInto`` (or ``ParseIntoString``): apply one ``--set`` to ``dest``."""
    parse_flag("--set-string" if as_string else "--set", expression, dest)


_GETTER_SCHEMES = ("http", "https", "oci")  # Helm v4's built-in getters (plugins add more)
_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*):")
_BAD_ESCAPE = re.compile(r"%(?![0-9A-Fa-f]{2})")


def helm_path_problem(path: str) -> str | None:
    """Why Helm's ``readFile`` would not read ``path`` as a local file, or None.

    Helm parses the path as a URL first (``net/url.Parse``) and fails on what that refuses:
    control characters, a leading ``:``, a colon in the first segment of a relative path, a
    ``%`` not followed by two hex digits (outside the query); a scheme with a getter (http,
    https, oci) is downloaded instead. ``-`` is stdin. Not mirrored: the host checks of a
    ``//host/...`` path (such a path is refused by neither side here).
    """
    if path.strip(GO_SPACE) == "-":
        return "- means standard input to Helm; jobhash does not read it, so write it to a file"
    if any(ord(char) < 0x20 or ord(char) == 0x7F for char in path):
        return "Helm refuses it: net/url: invalid control character in URL"
    url, _, fragment = path.partition("#")
    if url.startswith(":"):
        return "Helm refuses it: missing protocol scheme"
    scheme = _SCHEME.match(url)
    rest = url[scheme.end() :] if scheme else url
    if scheme and scheme.group(1).lower() in _GETTER_SCHEMES:
        return (
            f"Helm downloads {scheme.group(1).lower()}:// paths; jobhash reads only local files, "
            "so download it and pass the local path"
        )
    rest = rest.split("?", 1)[0]
    if scheme and not rest.startswith("/"):
        return None  # an opaque URL: Helm reads the file of that name
    if not scheme and not rest.startswith("/") and ":" in rest.split("/", 1)[0]:
        return "Helm refuses it: first path segment in URL cannot contain colon"
    if _BAD_ESCAPE.search(rest) or _BAD_ESCAPE.search(fragment):
        return "Helm refuses it: invalid URL escape (a % must start %XX)"
    return None


def read_set_file(path: str) -> GoValue:
    """Helm's ``--set-file`` reader: the file's bytes as a string (relative to the working dir)."""
    problem = helm_path_problem(path)
    if problem:
        raise UsageError(f"--set-file: cannot read {path!r}: {problem}")
    try:
        data = Path(path).read_bytes()
    except OSError as err:
        raise UsageError(
            f"--set-file: cannot read {path!r} ({err.strerror}); check the path after the ="
        ) from err
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise UnmirrorableError(
            f"--set-file {path}: the file is not valid UTF-8 (byte {err.start}); Helm would "
            "pass the raw bytes on, which jobhash cannot reproduce",
            fix="store text files as UTF-8 (or base64-encode binary content)",
        ) from err


# ---------------------------------------------------------------------------------------------
# Sources and merging


@dataclass(frozen=True)
class ValueSources:
    """Everything the user passes, in Helm's terms (each flag's occurrences in order)."""

    files: Sequence[Path] = ()
    sets: Sequence[str] = ()
    set_strings: Sequence[str] = ()
    set_jsons: Sequence[str] = ()
    set_files: Sequence[str] = ()
    set_literals: Sequence[str] = ()

    def flags(self) -> list[tuple[str, str]]:
        """``(flag, expression)`` pairs in the order Helm applies them (:data:`FLAGS`)."""
        by_flag = {
            "--set-json": self.set_jsons,
            "--set": self.sets,
            "--set-string": self.set_strings,
            "--set-file": self.set_files,
            "--set-literal": self.set_literals,
        }
        return [(flag, expression) for flag in FLAGS for expression in by_flag[flag]]


@dataclass
class _Origin:
    """Which source set each top-level value, for error messages."""

    layers: list[tuple[str, Values]] = field(default_factory=list)

    def source_of(self, path: Sequence[str | int]) -> str:
        for name, values in reversed(self.layers):
            if _has_path(values, path):
                return name
        return "chart values.yaml"


def key_path(dotted: str) -> list[str | int]:
    """``a.b[0].c`` -> ``["a", "b", 0, "c"]`` (the form error messages use)."""
    parts: list[str | int] = []
    for piece in dotted.split("."):
        name, *indexes = piece.split("[")
        if name:
            parts.append(name)
        parts.extend(int(index.rstrip("]")) for index in indexes if index.rstrip("]").isdigit())
    return parts


def _has_path(values: GoValue, path: Sequence[str | int]) -> bool:
    """Did this source set ``path`` (or a scalar/list where the path continues)?"""
    node = values
    for part in path:
        if isinstance(node, dict):
            if not isinstance(part, str) or part not in node:
                return False
            node = node[part]
        elif isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node):
            node = node[part]
        else:
            return True
    return True


def _read_file(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as err:
        raise UsageError(
            f"{path}: cannot read values file ({err.strerror}); check the -f path"
        ) from err


def user_values(
    sources: ValueSources, *, read_file: Reader | None = None
) -> tuple[Values, _Origin]:
    """``Options.MergeValues``: files, then each ``--set*`` flag in Helm's order (:data:`FLAGS`)."""
    base: Values = {}
    origin = _Origin()
    for path in sources.files:
        current = load_values(_read_file(path), str(path))
        origin.layers.append((str(path), current))
        base = merge_maps(base, current)
    for flag, expression in sources.flags():
        base = parse_flag(flag, expression, base, read_file=read_file)
        origin.layers.append((f"{flag} {expression}", _probe(flag, expression)))
    return base, origin


def _probe(flag: str, expression: str) -> Values:
    """What one flag sets on its own (for error messages only; {} if it needs context)."""
    probe: Values = {}
    try:
        return parse_flag(flag, expression, probe, read_file=lambda _path: "")
    except ValuesError:
        return {}


def _clean_nil(values: dict[str, GoValue]) -> None:
    for key in [key for key, value in values.items() if value is None]:
        del values[key]
    for value in values.values():
        if isinstance(value, dict):
            _clean_nil(value)


def _coalesce_tables(dst: dict[str, GoValue], src: dict[str, GoValue]) -> None:
    """``coalesceTablesFullKey`` with merge=false: dst (the user's) wins; null deletes."""
    src_non_nil = {key for key, value in src.items() if value is not None}
    for key, value in dst.items():
        if value is None:
            src[key] = None
    for key, value in src.items():
        if key in dst and dst[key] is None and key in src_non_nil:
            del dst[key]
        elif key not in dst:
            dst[key] = value
        elif isinstance(value, dict):
            current = dst[key]
            if isinstance(current, dict):
                _coalesce_tables(current, value)
            # else: Helm warns "cannot overwrite table with non table" and keeps the user's


def coalesce(chart_values: Values, user: Values) -> Values:
    """``CoalesceValues`` for a chart without dependencies (``coalesceValues``)."""
    result = clone(user)
    defaults = clone(chart_values)
    for key, default in defaults.items():
        if key in result:
            value = result[key]
            if value is None:
                del result[key]
            elif isinstance(value, dict) and isinstance(default, dict):
                _clean_nil(default)
                _coalesce_tables(value, default)
        elif default is not None:
            if isinstance(default, dict):
                _clean_nil(default)
            result[key] = default
    return result


# ---------------------------------------------------------------------------------------------
# Schema validation


@functools.lru_cache(maxsize=256)
def _go_pattern(pattern: str) -> re.Pattern[str]:
    """A JSON-schema pattern compiled with RE2's anchors: ``$`` is the very end of the text."""
    translated: list[str] = []
    index = 0
    in_class = False
    while index < len(pattern):
        char = pattern[index]
        if char == "\\":
            translated.append(pattern[index : index + 2])
            index += 2
            continue
        if char == "[":
            in_class = True
        elif char == "]":
            in_class = False
        elif char == "$" and not in_class:
            char = r"\Z"
        translated.append(char)
        index += 1
    return re.compile("".join(translated))


@functools.cache
def _validator_class() -> Any:
    """Draft 7 with RE2 ``pattern``; jsonschema is imported only when a message is needed
    (its import alone costs more than checking 500 jobs with :mod:`jobhash.schemacheck`)."""
    import jsonschema  # noqa: PLC0415 - deliberately lazy, see above
    import jsonschema.exceptions  # noqa: PLC0415
    import jsonschema.validators  # noqa: PLC0415

    def pattern(
        validator: Any, pattern: str, instance: object, schema: Mapping[str, Any]
    ) -> Iterator[jsonschema.exceptions.ValidationError]:
        if isinstance(instance, str) and not _go_pattern(pattern).search(instance):
            yield jsonschema.exceptions.ValidationError(f"{instance!r} does not match {pattern!r}")

    return jsonschema.validators.extend(  # type: ignore[no-untyped-call]
        jsonschema.Draft7Validator, validators={"pattern": pattern}
    )


_compiled: dict[int, tuple[Mapping[str, Any], schemacheck.Check | None]] = {}


def _fast_check(schema: Mapping[str, Any]) -> schemacheck.Check | None:
    """The compiled yes/no check of ``schema`` (compiled once per schema object)."""
    cached = _compiled.get(id(schema))
    if cached is None or cached[0] is not schema:
        cached = (schema, schemacheck.compile_schema(schema, _go_pattern))
        _compiled[id(schema)] = cached
    return cached[1]


def _dotted(path: Sequence[str | int]) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _describe(error: jsonschema.exceptions.ValidationError) -> str:
    if error.validator in ("anyOf", "oneOf") and error.context:
        # The const branch of dnsLabelKey carries the human message; prefer it.
        for sub in error.context:
            if sub.validator == "const":
                return f"{error.instance!r} is not allowed: {sub.validator_value}"
        deepest = max(error.context, key=lambda sub: len(sub.absolute_path))
        return deepest.message
    return error.message


def schema_errors(values: Values, schema: Mapping[str, Any]) -> list[tuple[list[str | int], str]]:
    """Every problem ``helm install`` would report, as (key path, message), sorted by path."""
    check = _fast_check(schema)
    if check is not None and check(values):
        return []  # the same verdict jsonschema gives, without building its validator
    validator = _validator_class()(schema)
    found: list[tuple[list[str | int], str]] = []
    for error in validator.iter_errors(values):
        found.append((list(error.absolute_path), _describe(error)))
    found.sort(key=lambda item: (_dotted(item[0]), item[1]))
    return found


# ---------------------------------------------------------------------------------------------
# The chart


@dataclass(frozen=True)
class Chart:
    """What jobhash reads from a chart directory."""

    directory: Path
    name: str
    values: Values
    schema: Mapping[str, Any] | None


def load_chart(directory: Path) -> Chart:
    """Read Chart.yaml (name), values.yaml (defaults) and values.schema.json (if present)."""
    chart_yaml = directory / "Chart.yaml"
    if not chart_yaml.is_file():
        raise UsageError(
            f"{directory}: not a chart directory (no Chart.yaml); pass --chart charts/autoroll"
        )
    metadata = load_values(chart_yaml.read_bytes(), str(chart_yaml))
    name = metadata.get("name")
    if not isinstance(name, str) or not name:
        raise UsageError(f"{chart_yaml}: name is missing; this is not the autoroll chart")
    values_file = directory / "values.yaml"
    values = (
        load_values(values_file.read_bytes(), str(values_file)) if values_file.is_file() else {}
    )
    schema_file = directory / "values.schema.json"
    schema: Mapping[str, Any] | None = None
    if schema_file.is_file():
        try:
            schema = json.loads(schema_file.read_text(encoding="utf-8"))
        except (ValueError, UnicodeDecodeError) as err:
            raise UsageError(f"{schema_file}: not valid JSON ({err})") from err
    return Chart(directory=directory, name=name, values=values, schema=schema)


@dataclass(frozen=True)
class LoadedValues:
    """The values a template sees as ``.Values``, plus where each came from."""

    values: Values
    origin: _Origin


def load(chart: Chart, sources: ValueSources) -> LoadedValues:
    """Helm's whole value pipeline; raises :class:`ValuesError` listing every schema problem."""
    user, origin = user_values(sources)
    values = coalesce(chart.values, user)
    if chart.schema is not None:
        problems = schema_errors(values, chart.schema)
        if problems:
            lines = [
                f"- {origin.source_of(path)}: {_dotted(path) or '(top level)'}: {message}"
                for path, message in problems
            ]
            fix = (
                "change each listed key to the form documented for it in the chart's "
                "values.yaml (helm install/template would refuse these values)"
            )
            controller = values.get("controller")
            if any(path and path[0] in ("forgejo", "image") for path, _ in problems) and not (
                isinstance(controller, dict) and controller.get("enabled") is False
            ):
                fix += "; values that only configure jobGroups can set controller.enabled=false"
            raise ValuesError(
                "values don't meet the chart's values.schema.json:\n" + "\n".join(lines),
                fix=fix,
            )
    return LoadedValues(values=values, origin=origin)


def find_chart(explicit: Path | None) -> Path:
    """The chart directory: ``--chart``, else the chart shipped in the package (a wheel),
    else ``charts/autoroll`` of the source checkout this package runs from (editable install).
    """
    if explicit is not None:
        if not (explicit / "Chart.yaml").is_file():
            raise UsageError(f"--chart {explicit}: no Chart.yaml there; pass the chart directory")
        return explicit
    here = Path(__file__).resolve().parent
    for candidate in (here / "_chart", here.parent / "charts" / "autoroll"):
        if (candidate / "Chart.yaml").is_file():
            return candidate
    raise UsageError("cannot find the autoroll chart; pass --chart DIR")
