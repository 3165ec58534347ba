"""jobhash.values loads values with Helm's precedence, --set typing and coalescing.

Expected results were taken from `helm template` printing `mustToJson .Values`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from jobhash.coalesce import coalesce
from jobhash.errors import UsageError, ValuesError
from jobhash.gojson import GoValue, marshal
from jobhash.strvals import typed_value
from jobhash.valueflags import parse_set
from jobhash.values import Chart, ValueSources, load, user_values
from jobhash.valueschema import schema_errors


def set_json(*expressions: str, as_string: bool = False) -> str:
    data: dict[str, GoValue] = {}
    for expression in expressions:
        parse_set(expression, data, as_string=as_string)
    return marshal(data)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("3", 3),
        ("-5", -5),
        ("+5", 5),
        ("0", 0),
        ("007", "007"),
        ("1.5", "1.5"),
        ("1e3", "1e3"),
        ("1_0", "1_0"),
        ("true", True),
        ("TRUE", True),
        ("False", False),
        ("fal\u017fe", False),  # Go's EqualFold folds the long s
        ("null", None),
        ("Null", None),
        ("nil", "nil"),
        ("", ""),
        ("9223372036854775807", 9223372036854775807),
        ("9223372036854775808", "9223372036854775808"),
    ],
)
def test_set_typing_matches_strvals(text: str, expected: GoValue) -> None:
    value = typed_value(text, as_string=False)
    assert value == expected
    assert type(value) is type(expected)
    assert typed_value(text, as_string=True) == text


@pytest.mark.parametrize(
    ("expressions", "expected"),
    [
        (["a=1,b=007,c=-5,d=+5,e=TRUE,f=Null,g=1.5"], '{"a":1,"b":"007","c":-5,"d":5,'),
        (["h={1,x},i[2]=3,j.k=1_0,l=0"], '{"h":[1,"x"],"i":[null,null,3],"j":{"k":"1_0"},"l":0}'),
        (["a.b.c=1", "a.b.d=2"], '{"a":{"b":{"c":1,"d":2}}}'),
        (["x\\.y=1,q=a\\,b"], '{"q":"a,b","x.y":1}'),
        (["a="], '{"a":""}'),
        (["a={}"], '{"a":[""]}'),
        (["l[1].k=v", "l[0]=x"], '{"l":["x",{"k":"v"}]}'),
        (["m[0][1]=2"], '{"m":[[null,2]]}'),
        (["a[0"], "{}"),  # "error parsing index: EOF" wraps io.EOF: Helm stops quietly
        (["a.y=x", "a..b=null"], '{"a":{"y":"x"}}'),
    ],
)
def test_set_syntax_matches_strvals(expressions: list[str], expected: str) -> None:
    assert set_json(*expressions).startswith(expected)


def test_set_string_keeps_text() -> None:
    assert set_json("a=1,b=true,c=null", as_string=True) == '{"a":"1","b":"true","c":"null"}'


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("a", 'key "a" has no value'),
        ("a,b=1", 'key "a" has no value (cannot end with ,)'),
        ("a..b=1", 'key map "a" has no value'),
        ("a[x]=1", "strconv.Atoi"),
        ("a[-1]=1", "negative -1 index not allowed"),
        ("a[65537]=1", "greater than maximum supported index"),
        ("a[0]x=1", "unexpected data at end of array index"),
        ("a={x,y", "list must terminate with '}'"),
        ("a=1,a.b=2", "interface {} is int64, not map"),
        ("a=1,a[0]=2", "interface {} is int64, not []interface {}"),
        (".".join("k" * 32) + "=1", "nested level"),
    ],
)
def test_set_errors_match_strvals(expression: str, message: str) -> None:
    with pytest.raises(ValuesError, match="failed parsing --set data") as caught:
        set_json(expression)
    assert message in str(caught.value)
    assert f"--set {expression}" in str(caught.value)


def test_set_with_invalid_utf8_is_a_usage_error() -> None:
    with pytest.raises(UsageError):
        set_json("a=\udcff")


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_files_merge_then_set_then_set_string(tmp_path: Path) -> None:
    # (not "y": in YAML 1.1 that key is the boolean true)
    first = write(tmp_path, "1.yaml", "a: {x: 1, w: [1, 2]}\nb: keep\n")
    second = write(tmp_path, "2.yaml", "a: {w: [3]}\nb: null\n")
    values, _ = user_values(
        ValueSources(
            files=[first, second],
            # --set-string is applied after every --set, wherever it stands
            sets=["c=1", "d=2"],
            set_strings=["c=s"],
        )
    )
    assert marshal(values) == '{"a":{"w":[3],"x":1},"b":null,"c":"s","d":2}'


def test_missing_values_file_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="cannot read values file"):
        user_values(ValueSources(files=[tmp_path / "nope.yaml"]))


CHART_VALUES: dict[str, GoValue] = {
    "a": {"x": 1.0, "y": {"p": 2.0, "q": None}, "z": [1.0, 2.0]},
    "b": 1.0,
    "c": None,
    "d": {"n": None},
    "s": "str",
}


@pytest.mark.parametrize(
    ("user", "expected"),
    [
        ({}, '{"a":{"x":1,"y":{"p":2},"z":[1,2]},"b":1,"d":{},"s":"str"}'),
        # null deletes a chart default, at the top and nested
        ({"b": None, "a": {"x": None}}, '{"a":{"y":{"p":2},"z":[1,2]},"d":{},"s":"str"}'),
        # a null for a key the chart does not have stays null
        ({"new": None, "a": {"w": None}}, '{"a":{"w":null,"x":1,"y":{"p":2},"z":[1,2]},'),
        # lists and scalars replace; a type mismatch keeps the user's value
        ({"a": {"z": [9]}, "s": {"k": 1}}, '{"a":{"x":1,"y":{"p":2},"z":[9]},"b":1,"d":{},'),
        ({"a": 5}, '{"a":5,"b":1,"d":{},"s":"str"}'),
    ],
)
def test_coalesce_matches_helm(user: dict[str, GoValue], expected: str) -> None:
    assert marshal(coalesce(CHART_VALUES, user)).startswith(expected)


def test_coalesce_does_not_modify_its_inputs() -> None:
    user: dict[str, GoValue] = {"a": {"x": None}}
    before = marshal(CHART_VALUES)
    coalesce(CHART_VALUES, user)
    assert marshal(CHART_VALUES) == before
    assert user == {"a": {"x": None}}


SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "groups": {
            "type": "object",
            "propertyNames": {"pattern": "^[a-z]+$"},
            "additionalProperties": {"type": "integer"},
        }
    },
}


def test_schema_pattern_uses_go_end_anchor() -> None:
    # Python's re would let "abc\n" match "^[a-z]+$"; Go's RE2 does not.
    problems = schema_errors({"groups": {"abc\n": 1.0}}, SCHEMA)
    assert len(problems) == 1
    assert problems[0][0] == ["groups"]


def test_schema_integer_accepts_whole_floats_like_helm() -> None:
    assert schema_errors({"groups": {"abc": 3.0}}, SCHEMA) == []
    assert schema_errors({"groups": {"abc": 3}}, SCHEMA) == []
    assert len(schema_errors({"groups": {"abc": 3.5}}, SCHEMA)) == 1


def test_load_names_the_source_and_key_of_a_schema_error(tmp_path: Path) -> None:
    chart = Chart(directory=tmp_path, name="c", values={"groups": {}}, schema=SCHEMA)
    bad = write(tmp_path, "prod.yaml", "groups: {abc: x}\n")
    with pytest.raises(ValuesError) as caught:
        load(chart, ValueSources(files=[bad], sets=["groups.ok=1"]))
    text = str(caught.value)
    assert f"{bad}: groups.abc: 'x' is not of type 'integer'" in text
    assert "fix:" in text
