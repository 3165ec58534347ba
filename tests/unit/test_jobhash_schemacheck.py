"""jobhash.schemacheck gives jsonschema's exact valid/invalid verdict, much faster.

The compiled check decides whether jsonschema is consulted at all, so a "valid" where
jsonschema finds a problem would hide a schema error: every case compares both verdicts.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jobhash.coalesce import coalesce
from jobhash.schemacheck import compile_schema, equal
from jobhash.values import load_chart
from jobhash.valueschema import _go_pattern, _validator_class, schema_errors

CHART = load_chart(Path(__file__).resolve().parents[2] / "charts" / "autoroll")
assert CHART.schema is not None
SCHEMA: dict[str, Any] = dict(CHART.schema)


def jsonschema_valid(values: Any, schema: Any = SCHEMA) -> bool:
    return not any(True for _ in _validator_class()(schema).iter_errors(values))


def fast_valid(values: Any, schema: Any = SCHEMA) -> bool:
    check = compile_schema(schema, _go_pattern)
    assert check is not None, "the chart's schema must compile"
    return check(values)


def job_values() -> dict[str, Any]:
    """Chart defaults with one group of two jobs that use most job keys."""
    user = {
        "controller": {"enabled": False},
        "jobGroups": {
            "db": {
                "image": {"repository": "reg.example/app", "tag": "v1"},
                "env": {"A": "x", "B": 3.0},
                "jobs": {
                    "migrate": {
                        "command": ["./migrate"],
                        "tasks": [{"name": "prep", "command": "./prep"}],
                        "podAnnotations": {"team": "data"},
                        "backoffLimit": 2.0,
                    },
                    "nightly": {"schedule": "0 3 * * *", "args": ["--all"]},
                },
            }
        },
    }
    return coalesce(CHART.values, user)  # type: ignore[arg-type]


def test_the_charts_schema_compiles_and_accepts_valid_values() -> None:
    values = job_values()
    assert jsonschema_valid(values)
    assert fast_valid(values)


def paths(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(node, dict):
        for key, value in node.items():
            out += paths(value, (*prefix, key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            out += paths(value, (*prefix, index))
    return out


REPLACEMENTS = st.one_of(
    st.none(),
    st.booleans(),
    st.sampled_from([0, 1, -1, 3, 2**40, 0.0, 1.0, -1.0, 1.5, -0.5, 1e21, 65536.0, 86400.0]),
    st.sampled_from(
        [
            "",
            "a",
            "A",
            "x-y",
            "-x",
            "x_y",
            "abc\n",
            "Always",
            "Never",
            "OnFailure",
            "IfNotPresent",
            "0 3 * * *",
            "v1",
            "a" * 64,
            "ä",
            "Job",
            "CronJob",
            "true",
            "3",
        ]
    ),
    st.just([]),
    st.just(["x"]),
    st.just([{"name": "t", "command": "c"}]),
    st.just({}),
    st.just({"x": 1.0}),
    st.just({"name": "n"}),
)


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_mutated_values_get_jsonschemas_verdict(data: st.DataObject) -> None:
    values = job_values()
    for _ in range(data.draw(st.integers(1, 3))):
        targets = paths(values)[1:]
        path = data.draw(st.sampled_from(targets))
        parent: Any = values
        for part in path[:-1]:
            parent = parent[part]
        if isinstance(parent, dict) and data.draw(st.booleans()):
            key = data.draw(st.sampled_from(["extra", "Bad_Key", "a" * 70, path[-1]]))
            parent[key] = copy.deepcopy(data.draw(REPLACEMENTS))
        else:
            parent[path[-1]] = copy.deepcopy(data.draw(REPLACEMENTS))
    assert fast_valid(values) == jsonschema_valid(values)
    assert (schema_errors(values, SCHEMA) == []) == jsonschema_valid(values)


@pytest.mark.parametrize(
    ("schema", "value", "valid"),
    [
        ({"type": "integer"}, 3.0, True),  # draft 7: an integral float is an integer
        ({"type": "integer"}, 3.5, False),
        ({"type": "number"}, True, False),  # a bool is never a number
        ({"enum": [1]}, True, False),
        ({"const": False}, 0, False),
        ({"const": [1, {"a": True}]}, [1.0, {"a": True}], True),
        ({"$ref": "#/definitions/s", "type": "integer", "definitions": {"s": {}}}, "x", True),
        ({"if": {"type": "string"}, "then": {"minLength": 2}, "else": {"minimum": 0}}, "a", False),
        ({"if": {"type": "string"}, "then": {"minLength": 2}, "else": {"minimum": 0}}, -1, False),
        ({"if": {"type": "string"}, "then": {"minLength": 2}, "else": {"minimum": 0}}, 5, True),
        ({"oneOf": [{"type": "number"}, {"minimum": 0}]}, 1, False),
        ({"pattern": "^a$"}, "a\n", False),  # RE2: $ is the very end
        ({"additionalProperties": False}, {"x": 1}, False),
        ({"propertyNames": {"maxLength": 2}}, {"abc": 1}, False),
        ({"not": {"type": "null"}}, None, False),
        ({"minItems": 1}, [], False),
        ({"minItems": 1}, "", True),
        ({"uniqueItems": True}, ["a", "b", "a"], False),
        ({"uniqueItems": True}, [1, True], True),  # a bool is not the number 1
        ({"uniqueItems": True}, [{"a": 1}, {"a": 1.0}], False),
        ({"uniqueItems": True}, "aa", True),
        ({"uniqueItems": False}, [1, 1], True),
        ({"maxLength": 1}, "ab", False),
        ({"maximum": 1}, 1.5, False),
        ({"required": ["a"]}, {}, False),
        ({"required": ["a"]}, [], True),
        ({"anyOf": [{"type": "string"}, {"type": "null"}]}, 0, False),
        ({"allOf": [{"type": "string"}, {"minLength": 1}]}, "", False),
        (
            {
                "definitions": {"t": {"type": "array", "items": {"$ref": "#/definitions/t"}}},
                "$ref": "#/definitions/t",
            },
            [[[]], []],
            True,
        ),
    ],
)
def test_keyword_semantics_match_jsonschema(schema: Any, value: Any, valid: bool) -> None:
    assert jsonschema_valid(value, schema) is valid
    assert fast_valid(value, schema) is valid


@pytest.mark.parametrize(
    "schema",
    [
        {"maxItems": 1},
        {"patternProperties": {"^x": {}}},
        {"items": [{"type": "string"}]},
        {"$ref": "other.json#/x"},
        {"properties": {"a": {"$id": "x", "type": "string"}}},
        {"format": "email"},
    ],
)
def test_uncompiled_keywords_leave_the_verdict_to_jsonschema(schema: Any) -> None:
    assert compile_schema(schema, _go_pattern) is None


def test_equal_follows_jsonschema() -> None:
    assert equal(1, 1.0)
    assert not equal(True, 1)
    assert not equal([False], [0])
    assert not equal({"a": 1}, {"a": 1, "b": 2})
