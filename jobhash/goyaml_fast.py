"""The two fast paths of :func:`jobhash.goyaml.unmarshal_document`, which skip the node tree.

A values file written by ``json.dumps`` is read with the C JSON parser; a plain document (a
root map, no anchors, aliases, tags or merges) is built straight from the parser's events.
Each returns None for anything else, and the full composer and decoder, which mirror go-yaml
in every case and word the errors, read the document instead.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

import yaml

from jobhash.gojson import GoValue
from jobhash.goyaml_compose import _make_parser
from jobhash.goyaml_resolve import FLOAT_TAG, INT_TAG, MERGE_TAG, _resolve_untyped


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
