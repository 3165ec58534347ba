"""Read a values file the way Helm v4.3.1 does, down to the Go types of the result.

The Helm path being mirrored::

    loader.LoadValues            split the file on "---" lines (k8s YAMLReader), merge documents
      sigs.k8s.io/yaml.Unmarshal per document:
        go.yaml.in/yaml/v2       YAML 1.1 scalar resolution (resolve.go), anchors, "<<" merges
        convertToJSONableObject  non-string keys -> strings (ints decimal, floats as float32 %g)
        json.Marshal + Unmarshal every number becomes a float64; NaN/Inf are errors

Events come from PyYAML's libyaml parser (goyaml v2 is a Go port of libyaml); everything after
the events (composition, tag resolution, decoding, key conversion) is written here to follow
the Go code, not PyYAML's constructors, which resolve YAML 1.1 differently.

Where libyaml and go-yaml v2 disagree: go-yaml has no ``\\/`` escape (an error here too) but
reads ``\\'`` in a double-quoted string (refused here). Also refused with
:class:`~jobhash.errors.UnmirrorableError`: ``!!binary`` and explicit ``!!timestamp`` tags,
UTF-16 files, and keys that only differ before stringification (``1`` and ``"1"``), for which
Helm's result depends on Go's random map order. tests/integration/test_values_parity.py checks
all of this against Helm's own ``toJson .Values``.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from typing import Any

import yaml

from jobhash.errors import UnmirrorableError, ValuesError
from jobhash.gojson import GoValue, format_g32

_CParser: Any
try:
    from yaml._yaml import CParser as _CParser
except ImportError:  # pragma: no cover - PyYAML built without libyaml
    _CParser = None


class _PureParser(yaml.reader.Reader, yaml.scanner.Scanner, yaml.parser.Parser):
    """PyYAML's pure-Python event parser, used only when libyaml is missing."""

    def __init__(self, stream: str) -> None:
        yaml.reader.Reader.__init__(self, stream)
        yaml.scanner.Scanner.__init__(self)
        yaml.parser.Parser.__init__(self)


def _make_parser(data: str) -> Any:
    if _CParser is None:  # pragma: no cover - PyYAML built without libyaml
        return _PureParser(data)
    return _CParser(data)


_TAG_PREFIX = "tag:yaml.org,2002:"
STR_TAG = _TAG_PREFIX + "str"
BOOL_TAG = _TAG_PREFIX + "bool"
INT_TAG = _TAG_PREFIX + "int"
FLOAT_TAG = _TAG_PREFIX + "float"
NULL_TAG = _TAG_PREFIX + "null"
TIMESTAMP_TAG = _TAG_PREFIX + "timestamp"
BINARY_TAG = _TAG_PREFIX + "binary"
MERGE_TAG = _TAG_PREFIX + "merge"
_RESOLVABLE = {"", STR_TAG, BOOL_TAG, INT_TAG, FLOAT_TAG, NULL_TAG, TIMESTAMP_TAG}

_RESOLVE_MAP: dict[str, tuple[str, object]] = {}
for _values, _tag, _words in (
    (True, BOOL_TAG, ("y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON")),
    (False, BOOL_TAG, ("n", "N", "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF")),
    (None, NULL_TAG, ("", "~", "null", "Null", "NULL")),
    (math.nan, FLOAT_TAG, (".nan", ".NaN", ".NAN")),
    (math.inf, FLOAT_TAG, (".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF")),
    (-math.inf, FLOAT_TAG, ("-.inf", "-.Inf", "-.INF")),
    ("<<", MERGE_TAG, ("<<",)),
):
    for _word in _words:
        _RESOLVE_MAP[_word] = (_tag, _values)

_YAML_STYLE_FLOAT = re.compile(r"[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?")
# strconv.ParseFloat on the raw text of a scalar starting with ".": decimal only, and an
# underscore only between two digits (strconv's underscoreOK).
_DOT_FLOAT = re.compile(r"\.[0-9]+(?:_[0-9]+)*(?:[eE][-+]?[0-9]+(?:_[0-9]+)*)?")

_INT64_MIN = -(2**63)
_INT64_MAX = 2**63 - 1
_UINT64_MAX = 2**64 - 1

#: Deepest nesting of maps and lists jobhash follows, aliases expanded (a real values file
#: is about ten deep). Every later step (decode, merge, copy, hash) recurses once per level,
#: so a value nested ~500 deep behind an alias would end in Python's RecursionError; Helm
#: would render it, jobhash refuses it with this cap instead (``UnmirrorableError``).
MAX_VALUE_DEPTH = 100

# go-yaml v2's billion-laughs guard (decode.go allowedAliasRatio).
_ALIAS_LOW = 400_000
_ALIAS_HIGH = 4_000_000


def _hint(text: str) -> str:
    if not text:
        return "N"
    first = text[0]
    if first in "+-":
        return "S"
    if first.isascii() and first.isdigit():
        return "D"
    if first in "yYnNtTfFoO~":
        return "M"
    if first == ".":
        return "."
    return ""


def _digits_value(text: str, base: int) -> int | None:
    """The magnitude of ``text`` in ``base`` with Go's digit rules, or None if malformed."""
    if not text:
        return None
    allowed = "0123456789abcdef"[:base]
    if any(ch.lower() not in allowed for ch in text):
        return None
    return int(text, base)


def _split_base(text: str) -> tuple[str, int]:
    """strconv base-0 prefix handling: 0x/0o/0b (any case), a lone leading 0 means octal."""
    if text.startswith("0"):
        if len(text) >= 3 and text[1] in "bB":
            return text[2:], 2
        if len(text) >= 3 and text[1] in "oO":
            return text[2:], 8
        if len(text) >= 3 and text[1] in "xX":
            return text[2:], 16
        return text[1:] or "0", 8
    return text, 10


def go_parse_int(text: str, base: int = 0) -> int | None:
    """``strconv.ParseInt(text, base, 64)``; None on a syntax or range error."""
    if not text:
        return None
    sign = 1
    body = text
    if body[0] in "+-":
        sign = -1 if body[0] == "-" else 1
        body = body[1:]
    if not body:
        return None
    if base == 0:
        body, base = _split_base(body)
    magnitude = _digits_value(body, base)
    if magnitude is None:
        return None
    value = sign * magnitude
    if not _INT64_MIN <= value <= _INT64_MAX:
        return None
    return value


def go_parse_uint(text: str, base: int = 0) -> int | None:
    """``strconv.ParseUint(text, base, 64)``; no sign allowed. None on error."""
    if not text or text[0] in "+-":
        return None
    body = text
    if base == 0:
        body, base = _split_base(body)
    magnitude = _digits_value(body, base)
    if magnitude is None or magnitude > _UINT64_MAX:
        return None
    return magnitude


def _parse_float(text: str) -> float | None:
    """``strconv.ParseFloat`` for text already known to be a decimal literal; None on overflow."""
    value = float(text.replace("_", ""))
    if math.isinf(value):
        return None  # ErrRange: go-yaml then treats the scalar as a string
    return value


class _ResolveError(Exception):
    pass


class _Int(int):
    """An integer from YAML that fits Go's ``int`` (kept apart from a bool for keys)."""


class _Uint(int):
    """An integer from YAML above int64: go-yaml returns a ``uint64``, which no key may be."""


def resolve(tag: str, text: str) -> tuple[str, object]:
    """Mirror go-yaml v2 ``resolve(tag, in)``: the resolved tag and a Python value.

    Ints come back as :class:`_Int`; timestamps stay strings (the caller decodes into
    ``interface{}``, where go-yaml v2 keeps the original text).
    """
    if tag not in _RESOLVABLE:
        return tag, text
    rtag, out = _resolve_untyped(tag, text)
    if tag in ("", rtag, STR_TAG):
        return rtag, out
    if tag == FLOAT_TAG and rtag == INT_TAG:
        return FLOAT_TAG, float(out)  # type: ignore[arg-type]
    short_r = "!!" + rtag.removeprefix(_TAG_PREFIX)
    short_t = "!!" + tag.removeprefix(_TAG_PREFIX)
    raise _ResolveError(f"cannot decode {short_r} `{text}` as a {short_t}")


def _resolve_untyped(tag: str, text: str) -> tuple[str, object]:
    hint = _hint(text)
    if not hint or tag == STR_TAG:
        return STR_TAG, text
    if text in _RESOLVE_MAP:
        return _RESOLVE_MAP[text]
    if hint == "." and _DOT_FLOAT.fullmatch(text):
        value = _parse_float(text)
        if value is not None:
            return FLOAT_TAG, value
    if hint in "DS":
        # A timestamp (tag "" or !!timestamp) starts with YYYY- and never parses as a number,
        # so for untagged scalars the outcome is the original string either way.
        if tag == TIMESTAMP_TAG:
            raise _UnsupportedError("an explicit !!timestamp tag")
        plain = text.replace("_", "")
        as_int = go_parse_int(plain)
        if as_int is not None:
            return INT_TAG, _Int(as_int)
        as_uint = go_parse_uint(plain)
        if as_uint is not None:
            return INT_TAG, _Uint(as_uint)
        if _YAML_STYLE_FLOAT.fullmatch(plain):
            value = _parse_float(plain)
            if value is not None:
                return FLOAT_TAG, value
        if plain.startswith("0b"):
            as_int = go_parse_int(plain[2:], 2)
            if as_int is not None:
                return INT_TAG, _Int(as_int)
            as_uint = go_parse_uint(plain[2:], 2)
            if as_uint is not None:
                return INT_TAG, _Uint(as_uint)
        elif plain.startswith("-0b"):
            as_int = go_parse_int("-" + plain[3:], 2)
            if as_int is not None:
                return INT_TAG, _Int(as_int)
    return STR_TAG, text


class _UnsupportedError(Exception):
    pass


# ---------------------------------------------------------------------------------------------
# Composition: events -> nodes, as go-yaml v2's parser.go builds them.


@dataclass(eq=False)
class _Node:
    kind: str  # "scalar" | "mapping" | "sequence" | "alias"
    line: int
    tag: str = ""
    value: str = ""
    implicit: bool = False
    children: list[_Node] = field(default_factory=list)
    alias: _Node | None = None


def _decode_text(data: bytes, source: str) -> str:
    """The document as text: UTF-8 only (go-yaml also reads UTF-16, which Helm's "---"
    splitter cannot handle anyway), a leading byte-order mark dropped."""
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise UnmirrorableError(
            "UTF-16 values files are not supported by jobhash",
            source=source,
            fix="save the file as UTF-8",
        )
    try:
        return data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as err:
        raise ValuesError(
            f"invalid UTF-8 at byte {err.start}",
            source=source,
            fix="save the file as UTF-8 (helm rejects it too)",
        ) from err


def _check_escapes(raw: str, line: int, source: str) -> None:
    """go-yaml v2 knows no ``\\/`` escape (libyaml 0.2.5 does): Helm fails on it, so do we."""
    index = 0
    while index < len(raw):
        if raw[index] == "\\":
            if raw[index + 1 : index + 2] == "/":
                raise ValuesError(
                    f"line {line}: found unknown escape character (\\/ in a double-quoted "
                    "string; Helm's YAML parser does not know it)",
                    source=source,
                    fix="write / without the backslash",
                )
            index += 2
            continue
        index += 1


def _event_node(event: Any, text: str, source: str, line: int, anchors: dict[str, _Node]) -> _Node:
    """The node go-yaml's parser.go builds for a node-starting event."""
    if isinstance(event, yaml.AliasEvent):
        target = anchors.get(event.anchor or "")
        if target is None:
            raise ValuesError(
                f"line {line}: unknown anchor '{event.anchor}' referenced",
                source=source,
                fix="define the anchor (&name) before using the alias (*name)",
            )
        return _Node("alias", line, value=event.anchor or "", alias=target)
    if isinstance(event, yaml.ScalarEvent):
        if event.style == '"':
            start: Any = event.start_mark
            end: Any = event.end_mark
            _check_escapes(text[start.index : end.index], line, source)
        return _Node(
            "scalar",
            line,
            tag=event.tag or "",
            value=event.value,
            implicit=bool(event.implicit[0]),
        )
    kind = "sequence" if isinstance(event, yaml.SequenceStartEvent) else "mapping"
    return _Node(kind, line, tag=event.tag or "")


def _compose(text: str, source: str, line_offset: int) -> _Node | None:
    """Compose the first document of ``text``; later documents are never read (go-yaml v2)."""
    parser = _make_parser(text)
    anchors: dict[str, _Node] = {}
    heights: dict[int, int] = {}  # id(node) -> levels of maps and lists, aliases expanded
    stack: list[_Node] = []
    root: _Node | None = None
    try:
        while True:
            event = parser.get_event()
            if isinstance(event, yaml.StreamEndEvent | yaml.DocumentEndEvent):
                break
            if isinstance(event, yaml.DocumentStartEvent):
                _check_version(event, source, line_offset)
                continue
            if isinstance(event, yaml.StreamStartEvent):
                continue
            if isinstance(event, yaml.SequenceEndEvent | yaml.MappingEndEvent):
                done = stack.pop()
                _note_height(done, heights, source)
                if not stack:
                    root = done
                continue
            line = event.start_mark.line + 1 + line_offset
            node = _event_node(event, text, source, line, anchors)
            anchor = getattr(event, "anchor", None)
            if anchor is not None and node.kind != "alias":
                anchors[anchor] = node  # a later anchor of the same name wins, as in libyaml
            if stack:
                stack[-1].children.append(node)
            if node.kind in ("mapping", "sequence"):
                stack.append(node)
            elif not stack:
                root = node
    except yaml.MarkedYAMLError as err:
        raise _syntax_error(err, text, source, line_offset) from err
    except yaml.YAMLError as err:
        raise ValuesError(
            f"YAML error: {err}", source=source, fix="save the file as valid UTF-8 YAML"
        ) from err
    return root


def _note_height(node: _Node, heights: dict[int, int], source: str) -> None:
    """Record how many levels ``node`` holds once it is complete, an alias counting as its
    anchor's (without recursion: each child is complete before its parent); refuse a node
    deeper than ``MAX_VALUE_DEPTH`` before anything recurses into it."""
    deepest = 0
    for child in node.children:
        target = child.alias if child.kind == "alias" and child.alias is not None else child
        deepest = max(deepest, heights.get(id(target), 0))
    height = deepest + 1
    heights[id(node)] = height
    if height > MAX_VALUE_DEPTH:
        raise UnmirrorableError(
            f"line {node.line}: maps and lists nested more than {MAX_VALUE_DEPTH} levels deep"
            f" (aliases expanded); jobhash follows at most {MAX_VALUE_DEPTH}",
            source=source,
        )


def _check_version(event: Any, source: str, line_offset: int) -> None:
    if event.version not in (None, (1, 1)):
        raise ValuesError(
            f"line {event.start_mark.line + 1 + line_offset}: found incompatible YAML "
            "document (Helm reads YAML 1.1 only)",
            source=source,
            fix="remove the %YAML directive",
        )


def _syntax_error(
    err: yaml.MarkedYAMLError, text: str, source: str, line_offset: int
) -> ValuesError:
    mark: Any = err.problem_mark or err.context_mark
    where = f"line {mark.line + 1 + line_offset}: " if mark is not None else ""
    if mark is not None and "\\'" in text[mark.index : mark.index + 2]:
        # go-yaml v2 reads \' in a double-quoted string as ', libyaml refuses it.
        return UnmirrorableError(
            f"{where}the escape \\' in a double-quoted string is not supported by jobhash",
            source=source,
            fix="write ' without the backslash",
        )
    return ValuesError(
        f"{where}YAML syntax error: {err.problem or err.context}",
        source=source,
        fix="fix the YAML syntax (helm would fail to parse this file too)",
    )


# ---------------------------------------------------------------------------------------------
# Decoding: nodes -> Go values (go-yaml v2 decode.go into interface{}).


class _NaNKey:
    """A NaN map key: in Go every NaN key is a distinct map entry."""


_KeyT = tuple[str, Any]


@dataclass
class _YMap:
    """A go-yaml ``map[interface{}]interface{}``: keys remember their Go type."""

    items: dict[_KeyT, Any] = field(default_factory=dict)


class _Decoder:
    def __init__(self, source: str) -> None:
        self.source = source
        self.decode_count = 0
        self.alias_count = 0
        self.alias_depth = 0
        self.active_aliases: set[int] = set()

    def fail(self, node: _Node, message: str, fix: str) -> ValuesError:
        return ValuesError(f"line {node.line}: {message}", source=self.source, fix=fix)

    def unmarshal(self, node: _Node, into: _YMap | None = None) -> Any:
        self.decode_count += 1
        if self.alias_depth > 0:
            self.alias_count += 1
        if (
            self.alias_count > 100
            and self.decode_count > 1000
            and self.alias_count / self.decode_count > _allowed_alias_ratio(self.decode_count)
        ):
            raise self.fail(node, "document contains excessive aliasing", "use fewer aliases")
        if node.kind == "alias":
            return self.alias(node, into)
        if node.kind == "scalar":
            return self.scalar(node)
        if node.kind == "mapping":
            return self.mapping(node, into)
        return self.sequence(node)

    def alias(self, node: _Node, into: _YMap | None) -> Any:
        if id(node) in self.active_aliases:
            raise self.fail(
                node, f"anchor '{node.value}' value contains itself", "remove the cycle"
            )
        assert node.alias is not None
        self.active_aliases.add(id(node))
        self.alias_depth += 1
        try:
            return self.unmarshal(node.alias, into)
        finally:
            self.alias_depth -= 1
            self.active_aliases.discard(id(node))

    def scalar(self, node: _Node) -> Any:
        if node.tag == "" and not node.implicit:
            return node.value
        if node.tag == BINARY_TAG:
            raise UnmirrorableError(
                f"line {node.line}: a !!binary value is not supported by jobhash",
                source=self.source,
                fix="write the decoded text as a plain string",
            )
        try:
            tag, value = resolve(node.tag, node.value)
        except _ResolveError as err:
            raise self.fail(node, str(err), "remove the explicit tag or fix the value") from err
        except _UnsupportedError as err:
            raise UnmirrorableError(
                f"line {node.line}: {err} is not supported by jobhash",
                source=self.source,
                fix="drop the tag; an untagged date stays a string in Helm",
            ) from err
        if tag == MERGE_TAG:
            return "<<"
        return value

    def sequence(self, node: _Node) -> list[Any]:
        return [self.unmarshal(child) for child in node.children]

    def mapping(self, node: _Node, into: _YMap | None) -> _YMap:
        out = into if into is not None else _YMap()
        children = node.children
        for index in range(0, len(children), 2):
            key_node, value_node = children[index], children[index + 1]
            if _is_merge(key_node):
                self.merge(value_node, out)
                continue
            key = self.unmarshal(key_node)
            if isinstance(key, list | _YMap):
                raise self.fail(key_node, "invalid map key (a map or list)", "use a string key")
            value = self.unmarshal(value_node)
            gokey = _go_key(key)
            out.items.pop(gokey, None)  # Go updates float keys (0.0 vs -0.0) on overwrite
            out.items[gokey] = value
        return out

    def merge(self, node: _Node, out: _YMap) -> None:
        def want_map() -> ValuesError:
            return self.fail(
                node,
                "map merge requires map or sequence of maps as the value",
                "give '<<' a map, an alias of a map, or a list of those",
            )

        if node.kind == "mapping":
            self.unmarshal(node, out)
        elif node.kind == "alias":
            if node.alias is not None and node.alias.kind != "mapping":
                raise want_map()
            self.unmarshal(node, out)
        elif node.kind == "sequence":
            for child in reversed(node.children):
                if child.kind == "alias":
                    if child.alias is not None and child.alias.kind != "mapping":
                        raise want_map()
                elif child.kind != "mapping":
                    raise want_map()
                self.unmarshal(child, out)
        else:
            raise want_map()


def _allowed_alias_ratio(count: int) -> float:
    if count <= _ALIAS_LOW:
        return 0.99
    if count >= _ALIAS_HIGH:
        return 0.10
    return 0.99 - 0.89 * ((count - _ALIAS_LOW) / (_ALIAS_HIGH - _ALIAS_LOW))


def _is_merge(node: _Node) -> bool:
    return node.kind == "scalar" and node.value == "<<" and (node.implicit or node.tag == MERGE_TAG)


def _go_key(key: Any) -> _KeyT:
    if key is None:
        return ("null", None)
    if isinstance(key, bool):
        return ("bool", key)
    if isinstance(key, _Uint):
        return ("uint64", int(key))
    if isinstance(key, _Int):
        return ("int", int(key))
    if isinstance(key, float):
        if math.isnan(key):
            return ("float", _NaNKey())
        return ("float", key)
    return ("str", key)


def _key_string(key: _KeyT, source: str, path: str) -> str:
    """sigs.k8s.io/yaml convertToJSONableObject: a YAML map key as a JSON object key."""
    kind, value = key
    if kind == "str":
        return str(value)
    if kind == "int":
        return str(value)
    if kind == "bool":
        return "true" if value else "false"
    if kind == "float":
        if isinstance(value, _NaNKey):
            return ".nan"
        text = format_g32(value)
        return {"+Inf": ".inf", "-Inf": "-.inf", "NaN": ".nan"}.get(text, text)
    go_type = "<nil>" if kind == "null" else kind
    raise ValuesError(
        f"unsupported map key of type: {go_type} (key {value!r})",
        source=source,
        path=path,
        fix="quote the key so it is a string",
    )


def _to_json_values(value: Any, source: str, path: str) -> GoValue:
    """YAML value -> JSON -> ``interface{}``: string keys, every number a float64."""
    if isinstance(value, _YMap):
        out: dict[str, GoValue] = {}
        for key, item in value.items.items():
            name = _key_string(key, source, path)
            child = f"{path}.{name}" if path else name
            if name in out:
                raise UnmirrorableError(
                    f"two keys both become {name!r} once Helm turns keys into strings; "
                    "which one wins depends on Go's random map order",
                    source=source,
                    path=child,
                    fix="keep only one of them (quote keys so they are plain strings)",
                )
            out[name] = _to_json_values(item, source, child)
        return out
    if isinstance(value, list):
        return [_to_json_values(item, source, f"{path}[{i}]") for i, item in enumerate(value)]
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int):
        return float(value)  # json.Marshal writes the int; json.Unmarshal reads a float64
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            raise ValuesError(
                "json: unsupported value: NaN/Inf (.nan and .inf cannot be Helm values)",
                source=source,
                path=path,
                fix="use a finite number or quote it as a string",
            )
        return value
    raise AssertionError(f"unexpected decoded YAML value {value!r}")  # pragma: no cover


class _NotFastError(Exception):
    """The document needs the full composer and decoder."""


_NO_KEY = object()
_FAST_KIND_START = {yaml.MappingStartEvent: dict, yaml.SequenceStartEvent: list}


def _fast_scalar(event: Any) -> GoValue:
    """A scalar's final value, for the plain cases :func:`_fast_unmarshal` handles."""
    if event.anchor is not None or event.tag is not None:
        raise _NotFastError
    text: str = event.value
    if not event.implicit[0]:
        return text  # quoted or block scalar: a string as written
    if text and text[0] not in _RESOLVE_FIRST:
        return text  # _hint() is "": no YAML 1.1 type can start with this character
    tag, value = _resolve_untyped("", text)
    if tag == INT_TAG:
        return float(value)  # type: ignore[arg-type]
    if tag == FLOAT_TAG:
        if math.isnan(value) or math.isinf(value):  # type: ignore[arg-type]
            raise _NotFastError  # an error, worded by the full path
        return value  # type: ignore[return-value]
    if tag == MERGE_TAG:
        return "<<"
    return value  # type: ignore[return-value]


_RESOLVE_FIRST = frozenset("+-0123456789yYnNtTfFoO~.")


def _fast_unmarshal(text: str) -> dict[str, GoValue] | None:
    """The common case of :func:`unmarshal_document` in one pass over the parser's events.

    Builds the final values directly (no node tree, no typed-key map, no JSON pass) for a
    document whose root is a map and that has no anchors, aliases, tags, directives, ``<<``
    merges, keys that are not plain strings, duplicate keys, ``\\/`` escapes or NaN/Inf.
    Anything else (and every error) returns None, and the full composer and decoder, which
    mirror go-yaml in all of those cases, handle the document and word the errors.
    """
    if "\\/" in text:
        return None
    parser = _make_parser(text)
    get_event = parser.get_event
    stack: list[Any] = []
    pending: list[Any] = []  # per open map: the key waiting for its value, or _NO_KEY
    root: Any = None
    scalar_event = yaml.ScalarEvent
    try:
        while True:
            event = get_event()
            kind = type(event)
            if kind is scalar_event:
                value: Any = _fast_scalar(event)
            elif kind in _FAST_KIND_START:
                if event.anchor is not None or event.tag is not None:
                    return None
                value = _FAST_KIND_START[kind]()
            elif kind is yaml.MappingEndEvent or kind is yaml.SequenceEndEvent:
                done = stack.pop()
                if isinstance(done, dict):
                    pending.pop()
                if not stack:
                    root = done
                continue
            elif kind is yaml.StreamStartEvent:
                continue
            elif kind is yaml.DocumentStartEvent:
                if event.version is not None or event.tags:
                    return None
                continue
            elif kind is yaml.DocumentEndEvent or kind is yaml.StreamEndEvent:
                break
            else:
                return None  # an alias
            if stack:
                parent = stack[-1]
                if type(parent) is list:
                    parent.append(value)
                elif pending[-1] is _NO_KEY:
                    if type(value) is not str or kind is not scalar_event or value in parent:
                        return None  # a non-string or duplicate key
                    if value == "<<" and event.implicit[0]:
                        return None  # a merge key
                    pending[-1] = value
                else:
                    parent[pending[-1]] = value
                    pending[-1] = _NO_KEY
            if kind is not scalar_event:
                stack.append(value)
                if kind is yaml.MappingStartEvent:
                    pending.append(_NO_KEY)
            elif not stack:
                root = value
    except (_NotFastError, yaml.YAMLError):
        return None
    return root if type(root) is dict else None


# Anything but printable ASCII and newlines (so also every escape's backslash).
_NOT_PLAIN_JSON = re.compile(r'[^\x20-\x5b\x5d-\x7e\n]|"[^"\n]{1000}')


def _no_constants(name: str) -> None:
    raise ValueError(name)  # NaN/Infinity: a string in YAML, not a number


def _json_unmarshal(text: str) -> dict[str, GoValue] | None:
    """A values file exactly as ``json.dumps`` writes it, read with the C JSON parser.

    For that text go-yaml provably reads the same values: it is a flow map of double-quoted
    keys and strings with no escapes (printable ASCII, no backslash, no string near the
    1024-character simple-key limit), numbers in Python's canonical spelling (which
    go-yaml resolves to the same float64, every integer becoming a float as in Helm), and
    ``true``/``false``/``null``. Being exactly ``json.dumps(value)`` (compact or indented)
    also rules out duplicate keys and any other spelling. Anything else returns None.
    """
    body = text.rstrip("\n")
    if not body.startswith("{") or _NOT_PLAIN_JSON.search(body):
        return None
    indent = None
    if "\n" in body:
        indent = 4 if body.startswith('{\n    "') else 2
    try:
        value = json.loads(body, parse_constant=_no_constants)
        if type(value) is not dict or json.dumps(value, indent=indent) != body:
            return None
        return _floats(value)  # type: ignore[no-any-return]
    except (ValueError, RecursionError, OverflowError):
        return None


def deeper_than(value: Any, cap: int) -> bool:
    """Do maps and lists nest more than ``cap`` levels in ``value``? (Without recursion.)"""
    if type(value) not in (dict, list):
        return cap < 0  # a scalar holds no level
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > cap:
            return True
        children = item.values() if type(item) is dict else item
        stack.extend((c, depth + 1) for c in children if type(c) in (dict, list))
    return False


def _floats(value: Any) -> Any:
    """JSON ints become float64 (json.Marshal then Unmarshal into interface{})."""
    kind = type(value)
    if kind is dict:
        for key, item in value.items():
            if type(item) in _CONTAINER_OR_INT:
                value[key] = _floats(item)
        return value
    if kind is list:
        return [_floats(item) for item in value]
    if kind is int:
        return float(value)
    return value


_CONTAINER_OR_INT = frozenset({dict, list, int})


def unmarshal_document(data: bytes, source: str, line_offset: int = 0) -> dict[str, GoValue]:
    """``sigs.k8s.io/yaml.Unmarshal(data, &map[string]any{})`` for one YAML document."""
    text = _decode_text(data, source)
    fast = _json_unmarshal(text)
    if fast is None:
        fast = _fast_unmarshal(text)
    if fast is not None and not deeper_than(fast, MAX_VALUE_DEPTH):
        return fast
    # Also a value too deep: the full path refuses it, naming the line and the cap.
    return _full_unmarshal(text, source, line_offset)


def _full_unmarshal(text: str, source: str, line_offset: int) -> dict[str, GoValue]:
    """Every case: compose a node tree, decode it as go-yaml does, then the JSON trip."""
    root = _compose(text, source, line_offset)
    if root is None:
        return {}
    decoded = _Decoder(source).unmarshal(root)
    value = _to_json_values(decoded, source, "")
    if value is None:
        return {}
    if not isinstance(value, dict):
        kind = "list" if isinstance(value, list) else type(value).__name__
        raise ValuesError(
            f"the document is a {kind}, not a map of values",
            source=source,
            fix="a values file must be a YAML map (key: value) at the top level",
        )
    return value


def split_documents(data: bytes, source: str) -> list[tuple[bytes, int]]:
    """k8s.io/apimachinery YAMLReader: split on lines that start with ``---``.

    Returns (document bytes, line offset) pairs; empty documents are dropped. A separator
    followed by anything but a comment is an error, as in Helm (``--- {a: 1}`` fails).
    """
    if data and not data.endswith(b"\n"):
        data += b"\n"
    docs: list[tuple[bytes, int]] = []
    buffer: list[bytes] = []
    start = 0
    # LineReader: lines end at "\n"; bufio.ReadLine drops a "\r" right before it.
    lines = [line.removesuffix(b"\r") + b"\n" for line in data.split(b"\n")[:-1]]
    for number, line in enumerate(lines):
        if line.startswith(b"---"):
            rest = line[3:].strip()
            if rest and not rest.startswith(b"#"):
                raise ValuesError(
                    f"line {number + 1}: invalid Yaml document separator: "
                    f"{rest.decode('utf-8', 'replace')}",
                    source=source,
                    fix="put the document content on the line after '---'",
                )
            if buffer:
                docs.append((b"".join(buffer), start))
            buffer = []
            start = number + 1
            continue
        if not buffer:
            start = number
        buffer.append(line)
    if buffer:
        docs.append((b"".join(buffer), start))
    return docs


def merge_maps(base: dict[str, GoValue], over: dict[str, GoValue]) -> dict[str, GoValue]:
    """Helm ``loader.MergeMaps``: maps merge recursively, anything else in ``over`` replaces."""
    out = dict(base)
    for key, value in over.items():
        current = out.get(key)
        if isinstance(value, dict) and isinstance(current, dict):
            out[key] = merge_maps(current, value)
        else:
            out[key] = value
    return out


def load_values(data: bytes, source: str) -> dict[str, GoValue]:
    """Helm ``loader.LoadValues``: every document of a values file, merged in order."""
    values: dict[str, GoValue] = {}
    for document, offset in split_documents(data, source):
        values = merge_maps(values, unmarshal_document(document, source, offset))
    return values
