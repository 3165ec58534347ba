"""Go's ``encoding/json`` Marshal and ``fmt`` number formatting, byte for byte.

Helm's ``toJson``/``mustToJson`` are ``json.Marshal`` (Go 1.26, the v1 encoder that Helm
v4.3.1 is built with), and the chart hashes that output, so "almost canonical" JSON is not
good enough: ``json.dumps(sort_keys=True)`` differs on ``<>&``, U+2028/U+2029, ``\\b``/``\\f``,
``1.0`` vs ``1`` and ``1e-07`` vs ``1e-7``, and every difference renames a Job.

Values use Python types with the Go types Helm produces:

============  =====================  ===========================================
Python        Go                     where it comes from
============  =====================  ===========================================
``None``      ``nil``                ``null`` in YAML, ``--set k=null``
``bool``      ``bool``
``int``       ``int64``              ``--set k=3`` (values files never give ints)
``float``     ``float64``            every number in a values file
``str``       ``string``
``list``      ``[]interface{}``
``dict``      ``map[string]interface{}``
============  =====================  ===========================================

Errors::

    GoJSONError            json.Marshal would fail (NaN, ±Inf, an int64 overflow, a type Go
                           cannot hold); Helm's toJson would silently return "".
"""

from __future__ import annotations

import copy
import json
import math
import struct
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeAlias, TypeVar

GoValue: TypeAlias = bool | int | float | str | list["GoValue"] | dict[str, "GoValue"] | None

Values = dict[str, GoValue]
"""A map of values: ``.Values``, a values file, what a ``--set`` flag sets."""

INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1


_T = TypeVar("_T")


def _clone(value: Any) -> Any:
    """A deep copy of a value tree: ``copy.deepcopy`` without its memo, several times faster.

    Values are trees (the YAML decoder, strvals and every JSON round trip build fresh
    containers), so there is no shared sub-value whose sharing a copy would have to keep.
    """
    kind = type(value)
    if kind is dict:
        return {key: _clone(item) for key, item in value.items()}
    if kind is list:
        return [_clone(item) for item in value]
    if kind is str or kind is float or kind is bool or kind is int or value is None:
        return value
    return copy.deepcopy(value)


if TYPE_CHECKING:

    def clone(value: _T) -> _T:
        """A deep copy of a value tree (see ``_clone``), typed as its argument."""

else:
    clone = _clone


class GoJSONError(ValueError):
    """A value Go's json.Marshal refuses; Helm's toJson would return an empty string."""


def _escape_table() -> dict[int, str]:  # pragma: no mutate block (runs at import)
    table: dict[int, str] = {}
    for code in range(0x20):
        table[code] = f"\\u{code:04x}"
    # Go 1.22+ writes the short forms for these five control characters.
    table.update({0x08: "\\b", 0x0C: "\\f", 0x0A: "\\n", 0x0D: "\\r", 0x09: "\\t"})
    table[ord('"')] = '\\"'
    table[ord("\\")] = "\\\\"
    # HTML-safe escaping (json.Marshal always sets escapeHTML).
    table[ord("<")] = "\\u003c"
    table[ord(">")] = "\\u003e"
    table[ord("&")] = "\\u0026"
    # JSONP-unsafe line terminators, escaped unconditionally.
    table[0x2028] = "\\u2028"
    table[0x2029] = "\\u2029"
    return table


_ESCAPES = _escape_table()


def quote_string(text: str) -> str:
    """Mirror ``encoding/json.appendString`` with escapeHTML=true (a quoted JSON string).

    DEL (0x7f) and every other printable rune pass through unescaped, as in Go.
    """
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as err:
            # A lone surrogate cannot come from valid UTF-8 input; Go would see raw bytes.
            raise GoJSONError(f"string {text!r} is not valid Unicode (lone surrogate)") from err
    return '"' + text.translate(_ESCAPES) + '"'


def shortest_digits(value: float) -> tuple[str, int]:
    """Shortest round-trip decimal digits of a finite non-zero float64 and its point position.

    Returns ``(digits, dp)`` with ``value == 0.<digits> * 10**dp`` (sign dropped), like the
    ``decimalSlice`` Go's ``strconv`` builds; Python's ``repr`` and Go's Ryu both pick the
    shortest string that round-trips, closest to the exact value.
    """
    text = repr(abs(value))
    mantissa, _, exp_text = text.partition("e")
    exponent = int(exp_text) if exp_text else 0
    whole, _, frac = mantissa.partition(".")
    if frac == "0":
        frac = ""
    digits = whole + frac
    dp = len(whole) + exponent
    stripped = digits.lstrip("0")
    dp -= len(digits) - len(stripped)
    digits = stripped.rstrip("0")
    return digits, dp


def _format_f(digits: str, dp: int) -> str:
    if dp <= 0:
        return "0." + "0" * (-dp) + digits
    if dp >= len(digits):
        return digits + "0" * (dp - len(digits))
    return digits[:dp] + "." + digits[dp:]


def _format_e(digits: str, dp: int) -> str:
    head = digits[0]
    if len(digits) > 1:
        head += "." + digits[1:]
    exp = dp - 1
    sign = "-" if exp < 0 else "+"
    return f"{head}e{sign}{abs(exp):02d}"


def format_float(value: float) -> str:
    """Mirror ``encoding/json``'s float64 encoder (ES6 number formatting).

    'f' format with shortest digits, except 'e' when ``|v| < 1e-6`` or ``|v| >= 1e21``; a
    one-digit negative exponent loses its leading zero (``1e-07`` → ``1e-7``), a positive one
    keeps it (``1e+21``). Negative zero is ``-0``. NaN and ±Inf are errors.
    """
    if math.isnan(value) or math.isinf(value):
        raise GoJSONError(f"json: unsupported value: {format_g(value)}")
    sign = "-" if math.copysign(1.0, value) < 0 else ""
    if value == 0:
        return sign + "0"
    digits, dp = shortest_digits(value)
    magnitude = abs(value)
    if magnitude < 1e-6 or magnitude >= 1e21:
        text = _format_e(digits, dp)
        if text[-4:-1] == "e-0":
            text = text[:-2] + text[-1]
        return sign + text
    return sign + _format_f(digits, dp)


def format_g(value: float) -> str:
    """Mirror ``strconv.FormatFloat(v, 'g', -1, 64)``, which is also ``fmt``'s ``%v``.

    Shortest digits; 'e' form (two-digit exponent minimum) when the exponent is < -4 or >= 6
    when written as d.ddd, which is why Helm prints ``1e+06`` for ``1000000`` from a values file.
    """
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    sign = "-" if math.copysign(1.0, value) < 0 else ""
    if value == 0:
        return sign + "0"
    digits, dp = shortest_digits(value)
    exp = dp - 1
    if exp < -4 or exp >= 6:
        return sign + _format_e(digits, dp)
    return sign + _format_f(digits, dp)


def _to_float32(value: float) -> float:
    try:
        return float(struct.unpack("<f", struct.pack("<f", value))[0])
    except OverflowError:
        return math.copysign(math.inf, value)


def format_g32(value: float) -> str:
    """Mirror ``strconv.FormatFloat(v, 'g', -1, 32)``: shortest digits of ``float32(v)``.

    sigs.k8s.io/yaml uses it to turn a float map key into a string (``3.14159265358979: x``
    becomes the key ``"3.1415927"``).
    """
    single = _to_float32(value)
    if math.isnan(single) or math.isinf(single):
        return format_g(single)
    sign = "-" if math.copysign(1.0, single) < 0 else ""
    if single == 0:
        return sign + "0"
    for precision in range(1, 10):
        candidate = f"{abs(single):.{precision - 1}e}"
        if _to_float32(float(candidate)) == abs(single):
            break
    mantissa, _, exp_text = candidate.partition("e")
    digits = mantissa.replace(".", "").rstrip("0")
    dp = int(exp_text) + 1
    exp = dp - 1
    if exp < -4 or exp >= 6:
        return sign + _format_e(digits, dp)
    return sign + _format_f(digits, dp)


def format_int(value: int) -> str:
    """Mirror the int64 encoder; Helm only ever holds int64 here (strvals, ``len``, ``int``)."""
    if not INT64_MIN <= value <= INT64_MAX:
        raise GoJSONError(f"integer {value} does not fit in Go's int64")
    return str(value)


def marshal(value: GoValue) -> str:
    """Mirror ``json.Marshal`` as Helm's ``toJson``/``mustToJson`` call it.

    Map keys are sorted by their UTF-8 bytes; there is no whitespace anywhere.

    Fast path: Python's C encoder writes the same bytes as Go once the floats whose ``repr``
    differs from Go's are turned into ints, and ``<>&``/U+2028/U+2029 (which only occur inside
    strings) are escaped afterwards. Anything unusual (an int outside int64, a float Python
    would write in exponent form, -0, a non-string key, a lone surrogate, an unknown type)
    goes through the exact pure-Python encoder, which also raises the errors.
    """
    kind = type(value)
    if kind is not dict and kind is not list:
        # A lone number (scalarString calls this per env value): what the C encoder would do.
        if isinstance(value, float) and kind is float and 1e-4 <= abs(value) < 1e16:
            return str(int(value)) if value.is_integer() else repr(value)
        return _slow_marshal(value)
    try:
        text = _c_encode(_for_c_encoder(value))
    except _SlowPathError:
        return _slow_marshal(value)
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            return _slow_marshal(value)  # raises GoJSONError for the lone surrogate
        for char, escaped in _LINE_ESCAPES:
            if char in text:
                text = text.replace(char, escaped)
    for char, escaped in _HTML_ESCAPES:
        if char in text:
            text = text.replace(char, escaped)
    return text


_HTML_ESCAPES = (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"))
_LINE_ESCAPES = (("\u2028", "\\u2028"), ("\u2029", "\\u2029"))
_ENCODER = json.JSONEncoder(
    ensure_ascii=False,
    separators=(",", ":"),
    sort_keys=True,  # code point order is UTF-8 byte order once lone surrogates are excluded
    allow_nan=False,
    check_circular=False,
)


def _make_c_encode() -> Callable[[Any], str]:  # pragma: no mutate block (runs at import)
    """``_ENCODER.encode`` without rebuilding the C encoder on every call (what
    ``JSONEncoder.iterencode`` does); the public method where ``_json`` is missing."""
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None:  # pragma: no cover - CPython always has _json
        return _ENCODER.encode
    try:
        chunks = make(
            None,
            _ENCODER.default,
            json.encoder.encode_basestring,
            None,
            _ENCODER.key_separator,
            _ENCODER.item_separator,
            True,
            False,
            False,
        )
    except TypeError:  # pragma: no cover - a CPython with another signature
        return _ENCODER.encode

    def encode(value: Any) -> str:
        return "".join(chunks(value, 0))

    return (
        encode
        if encode({"b": [1, 0.5, "<"], "a": None})
        == _ENCODER.encode({"b": [1, 0.5, "<"], "a": None})
        else _ENCODER.encode
    )


_c_encode = _make_c_encode()


class _SlowPathError(Exception):
    """The value needs the pure-Python encoder."""


def _for_c_encoder(value: Any) -> Any:
    """A copy of ``value`` that Python's C JSON encoder writes exactly as Go would."""
    kind = type(value)
    if kind is str or kind is bool or value is None:
        return value
    if kind is dict:
        out = {}
        for key, item in value.items():
            if type(key) is not str:
                raise _SlowPathError
            out[key] = _for_c_encoder(item)
        return out
    if kind is list:
        return [_for_c_encoder(item) for item in value]
    if kind is float:
        # repr() writes fixed notation with Go's shortest digits for 1e-4 <= |v| < 1e16, where
        # an integral float (exact below 2**53 * 2) prints as int() does, minus the ".0".
        if 1e-4 <= abs(value) < 1e16:
            return int(value) if value.is_integer() else value
        if value == 0 and math.copysign(1.0, value) > 0:
            return 0
        raise _SlowPathError
    if kind is int and INT64_MIN <= value <= INT64_MAX:
        return value
    raise _SlowPathError


def _slow_marshal(value: GoValue) -> str:
    parts: list[str] = []
    _encode(value, parts)
    return "".join(parts)


def _encode(value: GoValue, out: list[str]) -> None:
    # Ordered by frequency; str first (most values are strings).
    if isinstance(value, str):
        out.append(quote_string(value))
    elif isinstance(value, dict):
        for key in value:
            if not isinstance(key, str):
                raise GoJSONError(f"map key {key!r} is not a string")
        out.append("{")
        # Code point order is UTF-8 byte order (quote_string rejects lone surrogates).
        for index, key in enumerate(sorted(value)):
            if index:
                out.append(",")
            out.append(quote_string(key))
            out.append(":")
            _encode(value[key], out)
        out.append("}")
    elif isinstance(value, list):
        out.append("[")
        for index, item in enumerate(value):
            if index:
                out.append(",")
            _encode(item, out)
        out.append("]")
    elif value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif isinstance(value, int):
        out.append(format_int(value))
    elif isinstance(value, float):
        out.append(format_float(value))
    else:
        raise GoJSONError(f"json: unsupported type: {type(value).__name__}")
