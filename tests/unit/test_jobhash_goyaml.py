"""jobhash.goyaml reads values files exactly as Helm v4.3.1 does.

Expected values were taken from `helm template` printing `mustToJson .Values`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jobhash.errors import UnmirrorableError, ValuesError
from jobhash.gojson import GoJSONError, GoValue, marshal
from jobhash.goyaml import _full_unmarshal, load_values, split_documents
from jobhash.goyaml_fast import _fast_unmarshal, _json_unmarshal
from jobhash.goyaml_resolve import go_parse_int, go_parse_uint, resolve


def load(text: str) -> dict[str, GoValue]:
    return load_values(text.encode(), "values.yaml")


def one(scalar: str) -> GoValue:
    return load(f"v: {scalar}\n")["v"]


@pytest.mark.parametrize(
    ("scalar", "expected"),
    [
        # YAML 1.1 booleans, only in the three spellings go-yaml knows.
        ("y", True),
        ("Y", True),
        ("yes", True),
        ("YES", True),
        ("on", True),
        ("ON", True),
        ("True", True),
        ("n", False),
        ("No", False),
        ("off", False),
        ("OFF", False),
        ("FALSE", False),
        ("tRue", "tRue"),
        ("yEs", "yEs"),
        ("oN", "oN"),
        # nulls
        ("~", None),
        ("null", None),
        ("NULL", None),
        ("nULL", "nULL"),
        ("", None),
        # integers in every base strconv.ParseInt(s, 0, 64) accepts; all become float64
        ("0o17", 15.0),
        ("0O17", 15.0),
        ("017", 15.0),
        ("0x1F", 31.0),
        ("0b101", 5.0),
        ("-0b101", -5.0),
        ("0b-101", -5.0),
        ("+0x10", 16.0),
        ("1_000", 1000.0),
        ("0x_1F", 31.0),
        ("-0", 0.0),
        ("08", 8.0),  # not octal, so it falls through to a float
        ("09.5", 9.5),
        # floats
        ("1e3", 1000.0),
        ("1E3", 1000.0),
        (".5", 0.5),
        ("-.5", -0.5),
        ("1.", 1.0),
        (".5_0", 0.5),
        ("1e-400", 0.0),
        ("1e21", 1e21),
        ("1e-7", 1e-7),
        ("18446744073709551615", 18446744073709551615.0),
        ("123456789012345678901234", 1.2345678901234569e23),
        # strings that look like something else
        ("1e400", "1e400"),  # ParseFloat overflows -> string
        ("._5", "._5"),
        ("0x", "0x"),
        ("0x1p3", "0x1p3"),
        (".iNf", ".iNf"),
        ("2001-12-14", "2001-12-14"),
        ("2001-12-14t21:59:43.10-05:00", "2001-12-14t21:59:43.10-05:00"),
        ("1:20", "1:20"),
        ("_1", "_1"),
        # quoting and non-specific tags always give strings
        ('"yes"', "yes"),
        ("'0x1F'", "0x1F"),
        ("! 123", "123"),
        ("!!str 1.5", "1.5"),
        ("!custom 5", "5"),
        ('!!int "12"', 12.0),
        ("!!float 3", 3.0),
    ],
)
def test_scalar_resolution_matches_helm(scalar: str, expected: GoValue) -> None:
    value = one(scalar)
    assert value == expected
    assert type(value) is type(expected)


def test_negative_zero_float_survives() -> None:
    value = one("-0.0")
    assert isinstance(value, float)
    assert math.copysign(1.0, value) == -1.0
    assert marshal(value) == "-0"


@pytest.mark.parametrize("scalar", [".inf", "-.inf", ".nan", "+.INF"])
def test_non_finite_values_fail_like_helm(scalar: str) -> None:
    with pytest.raises(ValuesError, match="unsupported value"):
        one(scalar)


def test_non_string_keys_become_strings_like_sigs_yaml() -> None:
    text = "b: {1: a, 1.5: b, true: c, 1e6: d, 3.14159265358979: e, .inf: f, 0x10: g, -0.0: h}\n"
    assert marshal(load(text)) == (
        '{"b":{"-0":"h",".inf":"f","1":"a","1.5":"b","16":"g","1e+06":"d",'
        '"3.1415927":"e","true":"c"}}'
    )


def test_uint64_and_null_keys_are_errors_like_helm() -> None:
    with pytest.raises(ValuesError, match="uint64"):
        load("12345678901234567890: x\n")
    with pytest.raises(ValuesError, match="<nil>"):
        load("~: x\n")


def test_keys_that_collide_after_stringification_are_refused() -> None:
    with pytest.raises(UnmirrorableError, match="random map order"):
        load('1: a\n"1": b\n')


def test_merge_keys_follow_go_yaml_v2_order() -> None:
    text = (
        "a: &x {p: 1, q: 2}\n"
        "before:\n  q: 3\n  <<: *x\n"  # v2: the merge runs later and overwrites q
        "after:\n  <<: *x\n  q: 3\n"
        "list:\n  <<: [*x, {p: 9, r: 1}]\n"  # earlier maps win
        'quoted: {"<<": 1}\n'
    )
    assert load(text) == {
        "a": {"p": 1.0, "q": 2.0},
        "before": {"p": 1.0, "q": 2.0},
        "after": {"p": 1.0, "q": 3.0},
        "list": {"p": 1.0, "q": 2.0, "r": 1.0},
        "quoted": {"<<": 1.0},
    }


def test_aliases_are_independent_copies() -> None:
    values = load("a: &x {p: [1]}\nb: *x\n")
    assert values["a"] == values["b"]
    assert values["a"] is not values["b"]


def test_recursive_and_unknown_aliases_fail() -> None:
    with pytest.raises(ValuesError, match="contains itself"):
        load("a: &a [*a]\n")
    with pytest.raises(ValuesError, match="unknown anchor"):
        load("a: *nope\n")


def test_documents_merge_in_order() -> None:
    assert load("a: 1\n---\nb: 2\na: {x: 1}\n--- # comment\nb: null\n") == {
        "a": {"x": 1.0},
        "b": None,
    }


def test_separator_followed_by_content_fails_like_helm() -> None:
    with pytest.raises(ValuesError, match="document separator"):
        load("a: 1\n--- {b: 2}\n")


def test_split_documents_keeps_line_numbers_and_drops_cr() -> None:
    docs = split_documents(b"a: 1\r\n---\r\nb: 2", "f")
    assert docs == [(b"a: 1\n", 0), (b"b: 2\n", 2)]


def test_line_number_of_a_syntax_error_counts_from_file_start() -> None:
    with pytest.raises(ValuesError, match="line 4"):
        load("a: 1\n---\nb: 2\nc: d: e\n")


def test_top_level_must_be_a_map() -> None:
    with pytest.raises(ValuesError, match="not a map"):
        load("- 1\n")
    assert load("") == {}
    assert load("# nothing\n") == {}


def test_escapes_go_yaml_does_not_share_with_libyaml() -> None:
    with pytest.raises(ValuesError, match="unknown escape"):
        load('a: "x\\/y"\n')
    with pytest.raises(UnmirrorableError):
        load('a: "x\\\'y"\n')
    assert load('a: "\\x01\\t\\u2028\\e\\N\\_"\n') == {"a": "\x01\t\u2028\x1b\x85\xa0"}


def test_unsupported_tags_are_refused() -> None:
    with pytest.raises(UnmirrorableError, match="binary"):
        load("a: !!binary aGVsbG8=\n")
    with pytest.raises(UnmirrorableError, match="timestamp"):
        load("a: !!timestamp 2001-12-14\n")


def test_explicit_tag_mismatch_fails() -> None:
    with pytest.raises(ValuesError, match=r"cannot decode !!float `1\.5` as a !!int"):
        load("a: !!int 1.5\n")


def test_invalid_utf8_fails() -> None:
    with pytest.raises(ValuesError, match="UTF-8"):
        load_values(b"a: \xff\n", "f")


def test_resolve_and_strconv_helpers() -> None:
    assert resolve("", "0o17") == ("tag:yaml.org,2002:int", 15)
    assert go_parse_int("9223372036854775808") is None
    assert go_parse_uint("9223372036854775808") == 2**63
    assert go_parse_uint("+5") is None
    assert go_parse_int("08") is None


# load_values takes a one-pass fast path for plain documents; the full composer and decoder
# (checked against Helm above and in tests/integration/test_values_parity.py) is the
# reference it must equal whenever it does not hand the document over.

_TOKENS = [
    "a", "y", "No", "on", "~", "null", "", "0o17", "0x1F", "017", "1e3", "-0", "0", "-0.0", "1_000",
    "9223372036854775808", "18446744073709551616", ".5", "+.inf", ".nan", "2001-12-14", "<<",
    "'q'", '"d\\tq"', '"s\\/"', "!!str 3", "!!binary aGk=", "&x 1", "*x", "'<<'", "[1, y]",
    "{a: 1}", "|\n  block", "3.0", "1e400", "0b101", "-0b11", "true", "é",
]  # fmt: skip


@st.composite
def documents(draw: st.DrawFn, depth: int = 0) -> str:
    lines: list[str] = []
    for index in range(draw(st.integers(1, 4))):
        key = draw(st.sampled_from(["k", "k", "v", "1", "on", "'q'", "<<", "&a k", "~", "2.5"]))
        key = f"{key}{index}" if draw(st.booleans()) else key
        if depth < 2 and draw(st.integers(0, 3)) == 0:
            child = draw(documents(depth + 1)).replace("\n", "\n  ")
            lines.append(f"{key}:\n  {child.rstrip()}")
        elif draw(st.integers(0, 4)) == 0:
            items = draw(st.lists(st.sampled_from(_TOKENS[:20]), max_size=3))
            lines.append(f"{key}:" + "".join(f"\n- {item}" for item in items))
        else:
            lines.append(f"{key}: {draw(st.sampled_from(_TOKENS))}")
    return "\n".join(lines) + "\n"


def _outcome(unmarshal: Callable[[], GoValue]) -> str:
    try:
        return repr(unmarshal())  # repr keeps 1 and 1.0 apart
    except (ValuesError, GoJSONError) as err:
        return f"{type(err).__name__}: {err}"


@settings(max_examples=800, deadline=None)
@given(text=documents())
def test_fast_path_equals_the_full_decoder(text: str) -> None:
    fast = _fast_unmarshal(text)
    if fast is not None:
        assert _outcome(lambda: fast) == _outcome(lambda: _full_unmarshal(text, "v.yaml", 0))


def test_fast_path_takes_plain_documents_and_hands_over_the_rest() -> None:
    assert _fast_unmarshal("a: 1\nb: [y, '2', {c: ~}]\n") == {
        "a": 1.0,
        "b": [True, "2", {"c": None}],
    }
    handed_over = [
        "a: &x 1\nb: *x\n",
        "a: !!str 1\n",
        "1: a\n",
        "a: 1\na: 2\n",
        "<<: {a: 1}\n",
        "a: .nan\n",
        'a: "\\/"\n',
        "%YAML 1.1\n---\na: 1\n",
        "- a\n",
        "a: [\n",
    ]
    for text in handed_over:
        assert _fast_unmarshal(text) is None, text


# A values file exactly as json.dumps writes it is read with the C JSON parser; the full
# decoder is again the reference.

_JSON_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(alphabet=st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=8),
    st.sampled_from(["<<", "y", "on", "0o17", "1e3", "~", "null", "#x", "a: b", "- x", "é"]),
)
_JSON_VALUES = st.recursive(
    _JSON_SCALARS,
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(
            st.sampled_from(["a", "<<", "y", "1", "b c", "&x", "*x"]), inner, max_size=3
        )
    ),
    max_leaves=12,
)


@settings(max_examples=600, deadline=None)
@given(
    value=st.dictionaries(st.text(max_size=4), _JSON_VALUES, max_size=4),
    indent=st.sampled_from([None, 2, 4, 3]),
    ascii_only=st.booleans(),
)
def test_json_path_equals_the_full_decoder(
    value: dict[str, GoValue], indent: int | None, ascii_only: bool
) -> None:
    text = json.dumps(value, indent=indent, ensure_ascii=ascii_only) + "\n"
    fast = _json_unmarshal(text)
    if fast is not None:
        assert repr(fast) == _outcome(lambda: _full_unmarshal(text, "v.json", 0))


def test_json_path_takes_json_dumps_output_only() -> None:
    assert _json_unmarshal('{"a": 1, "b": [true, null, "x", 0.5, -0.0]}\n') == {
        "a": 1.0,
        "b": [True, None, "x", 0.5, -0.0],
    }
    assert _json_unmarshal(json.dumps({"a": {"b": 1}}, indent=2)) == {"a": {"b": 1.0}}
    handed_over = [
        '{"a":1}',
        '{"a": 1, "a": 2}',
        '{"a": -0}',
        '{"a": 1E3}',
        '{"a": NaN}',
        '{"a": "\\u00e9"}',
        '{"a": "\\/"}',
        "[1]",
        '{"a": "' + "x" * 1200 + '"}',
    ]
    for text in handed_over:
        assert _json_unmarshal(text) is None, text
