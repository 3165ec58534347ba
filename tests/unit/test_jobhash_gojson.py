"""jobhash.gojson writes exactly what Go 1.26's json.Marshal (Helm's toJson) writes.

Expected strings were produced by Go itself (json.Marshal, fmt.Sprint, strconv.FormatFloat).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jobhash.gojson import (
    GoJSONError,
    GoValue,
    _slow_marshal,
    clone,
    format_float,
    format_g,
    format_g32,
    format_int,
    marshal,
    quote_string,
)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (0.0, "0"),
        (-0.0, "-0"),
        (1.0, "1"),
        (100.0, "100"),
        (1.5, "1.5"),
        (0.1, "0.1"),
        (1e20, "100000000000000000000"),
        (9.999999999999999e20, "999999999999999900000"),
        (1e21, "1e+21"),
        (1.2345678901234569e23, "1.2345678901234569e+23"),
        (1e-6, "0.000001"),
        (1e-7, "1e-7"),
        (-1.9109026322109024e-09, "-1.9109026322109024e-9"),
        (1.5e-10, "1.5e-10"),
        (5e-324, "5e-324"),
        (1.7976931348623157e308, "1.7976931348623157e+308"),
        (18446744073709551615.0, "18446744073709552000"),
        (9223372036854775807.0, "9223372036854776000"),
    ],
)
def test_float_formatting_matches_go_json(value: float, expected: str) -> None:
    assert format_float(value) == expected


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
def test_non_finite_floats_are_errors_like_go(value: float) -> None:
    with pytest.raises(GoJSONError, match="unsupported value"):
        format_float(value)


@pytest.mark.parametrize(
    ("value", "go"), [(math.nan, "NaN"), (math.inf, "+Inf"), (-math.inf, "-Inf")]
)
def test_a_non_finite_float_is_named_as_go_names_it(value: float, go: str) -> None:
    """``strconv.FormatFloat(v, 'g', -1, 64)``, in Go's json error word for word."""
    assert format_g(value) == go
    with pytest.raises(GoJSONError) as caught:
        format_float(value)
    assert str(caught.value) == f"json: unsupported value: {go}"


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (1000000.0, "1e+06"),
        (123456.0, "123456"),
        (1234567.0, "1.234567e+06"),
        (0.0001, "0.0001"),
        (0.00001, "1e-05"),
        (-0.0, "-0"),
        (1e21, "1e+21"),
        (8080.0, "8080"),
        (math.inf, "+Inf"),
    ],
)
def test_format_g_matches_fmt_v(value: float, expected: str) -> None:
    assert format_g(value) == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (3.14159265358979, "3.1415927"),
        (1.5, "1.5"),
        (1e6, "1e+06"),
        (0.1, "0.1"),
        (1e39, "+Inf"),
        (7.866340851152702e-07, "7.866341e-07"),
        # Negative keys (Go 1.26's strconv.FormatFloat(float64(float32(v)), 'g', -1, 32)):
        # the sign survived mutation testing untested.
        (-3.14159265358979, "-3.1415927"),
        (-0.0, "-0"),
        (-1e6, "-1e+06"),
        (-2.5e-05, "-2.5e-05"),
        (-1e39, "-Inf"),
        # Either side of %g's switch to an exponent (exp < -4 or exp >= 6), and one.
        (0.0001, "0.0001"),
        (0.00001, "1e-05"),
        (123456.0, "123456"),
        (1234567.0, "1.234567e+06"),
        (1.0, "1"),
    ],
)
def test_format_g32_matches_go_float32_shortest(value: float, expected: str) -> None:
    assert format_g32(value) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("<>&", '"\\u003c\\u003e\\u0026"'),
        ("\u2028\u2029", '"\\u2028\\u2029"'),
        ("\b\f\n\r\t", '"\\b\\f\\n\\r\\t"'),
        ("\x00\x01\x1f", '"\\u0000\\u0001\\u001f"'),
        ("\x7f", '"\x7f"'),
        ('"\\', '"\\"\\\\"'),
        ("é😀/", '"é😀/"'),
    ],
)
def test_string_escaping_matches_go(text: str, expected: str) -> None:
    assert quote_string(text) == expected


def test_lone_surrogate_is_rejected() -> None:
    with pytest.raises(GoJSONError, match="surrogate"):
        quote_string("\ud800")


def test_map_keys_sort_by_utf8_bytes_and_no_whitespace() -> None:
    value: GoValue = {"b": 1, "a": [True, None, 1.0], "\uff5e": "x", "\U0001f600": "y", "Z": {}}
    assert marshal(value) == '{"Z":{},"a":[true,null,1],"b":1,"\uff5e":"x","\U0001f600":"y"}'


def test_int_and_float_stay_distinct() -> None:
    assert marshal([9223372036854775807, 9223372036854775807.0]) == (
        "[9223372036854775807,9223372036854776000]"
    )


def test_int_outside_int64_is_rejected() -> None:
    with pytest.raises(GoJSONError, match="int64"):
        marshal(2**63)


@pytest.mark.parametrize("value", [-(2**63), 2**63 - 1])
def test_the_ends_of_int64_fit(value: int) -> None:
    assert format_int(value) == str(value) == marshal(value)


@pytest.mark.parametrize("value", [-(2**63) - 1, 2**63])
def test_one_past_either_end_of_int64_is_refused(value: int) -> None:
    with pytest.raises(GoJSONError) as caught:
        format_int(value)
    assert str(caught.value) == f"integer {value} does not fit in Go's int64"


def test_a_value_no_go_type_holds_is_refused_by_its_type() -> None:
    with pytest.raises(GoJSONError) as caught:
        marshal([{1, 2}])  # type: ignore[list-item]
    assert str(caught.value) == "json: unsupported type: set"


def test_non_string_key_is_rejected() -> None:
    with pytest.raises(GoJSONError, match="not a string"):
        marshal({1: "x"})  # type: ignore[dict-item]


# marshal takes a fast path through Python's C encoder; the pure-Python encoder above (checked
# against Go) is the reference it must equal byte for byte, errors included.

_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**64), max_value=2**64),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0.0, -0.0, 1e-4, 9.99e-5, 1e-7, 1e15, 9999999999999998.0, 1e16, 1e21, 0.5]),
    st.text(alphabet=st.characters(codec=None, exclude_categories=()), max_size=12),
    st.sampled_from(["<a>&b", "\u2028\u2029", "\x00\x08\x0c\x7f\x1f", "\ud800", "é\U0001f600"]),
)
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(
            st.text(max_size=6) | st.sampled_from(["<", "\u2028", "\ud83d"]), inner, max_size=4
        )
    ),
    max_leaves=20,
)


def _outcome(encode: Callable[[GoValue], str], value: GoValue) -> str:
    try:
        return encode(value)
    except GoJSONError as err:
        return f"error: {err}"


@settings(max_examples=1500, deadline=None)
@given(value=_VALUES)
def test_fast_marshal_equals_the_reference_encoder(value: GoValue) -> None:
    assert _outcome(marshal, value) == _outcome(_slow_marshal, value)


@pytest.mark.parametrize(
    "value",
    [{1: "x"}, (1, 2), {"a": float("nan")}, [2**63], {"k": "\udc00"}, [-0.0], [1e-5], [1e17]],
)
def test_fast_marshal_hands_unusual_values_to_the_reference(value: Any) -> None:
    assert _outcome(marshal, value) == _outcome(_slow_marshal, value)


def test_clone_is_an_independent_deep_copy() -> None:
    original: GoValue = {"a": [1, {"b": "x"}], "c": {"d": [None, True, 1.5]}}
    copied = clone(original)
    assert copied == original
    assert isinstance(copied, dict) and isinstance(original, dict)
    inner = copied["a"]
    assert isinstance(inner, list) and isinstance(inner[1], dict)
    inner[1]["b"] = "changed"
    inner.append(2)
    assert original == {"a": [1, {"b": "x"}], "c": {"d": [None, True, 1.5]}}
