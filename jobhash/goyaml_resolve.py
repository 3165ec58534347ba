"""YAML 1.1 scalar resolution as go-yaml v2 does it (``resolve.go``), with Go's ``strconv``.

A plain scalar becomes a bool (``y``, ``yes``, ``on`` … also as map keys), null, an int
(``0x``, ``0o``, ``0b``, a leading ``0`` for octal, ``_`` between digits), a float (``.inf``,
``.nan``, ``1e3``) or stays a string. An explicit tag must agree with what the text resolves
to. Used by :mod:`jobhash.goyaml_decode` and :mod:`jobhash.goyaml_fast`.
"""

from __future__ import annotations

import math
import re

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
