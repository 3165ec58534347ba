"""``boundedjson``: the size and depth caps, and that a deep body never reaches the parser."""

from __future__ import annotations

import json

import pytest

from autoroll.core import boundedjson
from autoroll.core.boundedjson import BoundedJsonError, TooDeepError, TooLargeError


def nested(depth: int, open_: str = "[", close: str = "]") -> bytes:
    return (open_ * depth + close * depth).encode()


def nested_objects(depth: int) -> bytes:
    return ('{"a":' * depth + "1" + "}" * depth).encode()


@pytest.mark.parametrize(
    ("data", "depth"),
    [
        (b"1", 0),
        (b'"[[[["', 0),  # brackets inside a string are not structure
        (b'["\\"[[", []]', 2),  # an escaped quote does not end the string
        (b'{"a": [1, {"b": []}]}', 4),
        (b"[][][]", 1),
        (nested(1500), 1500),
        (nested_objects(300), 300),
        (b"]]]][", 1),  # unbalanced: measured as far as it goes, the parser refuses it
    ],
)
def test_nesting_depth(data: bytes, depth: int) -> None:
    assert boundedjson.nesting_depth(data) == depth


def test_nesting_depth_stops_once_past_the_limit() -> None:
    assert boundedjson.nesting_depth(nested(10_000), stop_above=64) == 65


@pytest.mark.parametrize(
    ("data", "max_bytes", "max_depth", "error"),
    [
        (nested(1500), 10**6, 64, TooDeepError),  # json.loads would raise RecursionError
        (nested_objects(65), 10**6, 64, TooDeepError),
        (b'{"token": "' + b"x" * 100 + b'"}', 64, 64, TooLargeError),
        (b"not json", 100, 64, json.JSONDecodeError),
        (b"1" * 5000, 10**6, 64, ValueError),  # past Python's int-digit limit
    ],
)
def test_loads_refuses(data: bytes, max_bytes: int, max_depth: int, error: type[Exception]) -> None:
    with pytest.raises(error):
        boundedjson.loads(data, max_bytes=max_bytes, max_depth=max_depth)


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (nested(64), json.loads(nested(64))),  # exactly at the cap is fine
        (b'{"a": "[[[[[[[[[["}', {"a": "[[[[[[[[[["}),
        ('{"ä": 1}', {"ä": 1}),  # str in, as json.loads takes it
    ],
)
def test_loads_parses_within_the_caps(data: bytes | str, expected: object) -> None:
    assert boundedjson.loads(data, max_bytes=10**6, max_depth=64) == expected


def test_the_refusals_are_value_errors_with_reasons() -> None:
    # Every caller already turns a ValueError into its own layer's typed error.
    deep = TooDeepError(64)
    large = TooLargeError(10, 5)
    assert isinstance(deep, ValueError) and isinstance(large, BoundedJsonError)
    assert (deep.reason, large.reason) == ("too-deep", "too-large")
    assert "64" in str(deep) and "5 bytes" in str(large)
