"""A fast yes/no JSON-schema check with the exact verdict of ``jsonschema.Draft7Validator``.

Why: building and walking a ``jsonschema`` validator costs more than everything else
``jobhash names`` does (and its import alone is a large part of start-up), yet almost every run
has valid values. The schema is compiled once into plain closures that only answer "valid?";
when they say no, :mod:`jobhash.values` asks ``jsonschema`` for the messages, so errors are
exactly what they were. Only the draft-7 keywords below are compiled; a schema using any other
keyword (or a non-local ``$ref``) is not compiled at all (:func:`compile_schema` returns
``None``) and ``jsonschema`` does the whole job, so a chart change can never make the verdict
disagree silently.

Semantics follow ``jsonschema`` 4.x draft 7, not the spec prose where they differ:
``$ref`` hides its sibling keywords, ``integer`` accepts integral floats, bools are never
numbers, ``enum``/``const`` compare with ``jsonschema``'s bool-aware equality, ``format`` is
not asserted, and ``pattern`` uses RE2 anchors (the same function the ``jsonschema`` path uses).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

Check = Callable[[Any], bool]


class UnsupportedSchemaError(Exception):
    """The schema uses something this compiler does not mirror; use ``jsonschema`` instead."""


# Keywords with no effect on the verdict (annotations and containers of referenced schemas).
_IGNORED = frozenset(
    {"$schema", "$comment", "title", "description", "default", "examples", "definitions"}
)
_TYPES: dict[str, Check] = {
    "object": lambda value: isinstance(value, dict),
    "array": lambda value: isinstance(value, list),
    "string": lambda value: isinstance(value, str),
    "boolean": lambda value: isinstance(value, bool),
    "null": lambda value: value is None,
    "number": lambda value: isinstance(value, int | float) and not isinstance(value, bool),
    "integer": lambda value: (
        (isinstance(value, int) and not isinstance(value, bool))
        or (isinstance(value, float) and value.is_integer())
    ),
}


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _unbool(value: object) -> object:
    if value is True:
        return ("bool", True)
    if value is False:
        return ("bool", False)
    return value


def equal(one: object, two: object) -> bool:
    """``jsonschema._utils.equal``: ``==`` except that ``True``/``1`` and ``False``/``0`` differ."""
    if one is two:
        return True
    if isinstance(one, str) or isinstance(two, str):
        return one == two
    if isinstance(one, list) and isinstance(two, list):
        return len(one) == len(two) and all(equal(a, b) for a, b in zip(one, two, strict=True))
    if isinstance(one, dict) and isinstance(two, dict):
        return one.keys() == two.keys() and all(equal(one[key], two[key]) for key in one)
    return _unbool(one) == _unbool(two)


class _Compiler:
    def __init__(self, root: Mapping[str, Any], pattern: Callable[[str], re.Pattern[str]]) -> None:
        self.root = root
        self.pattern = pattern
        self.refs: dict[str, Check] = {}

    def ref(self, ref: str) -> Check:
        """A local ``#/...`` reference, compiled once (and lazily, so recursion works)."""
        if ref in self.refs:
            return self.refs[ref]
        if not ref.startswith("#"):
            raise UnsupportedSchemaError(f"$ref {ref!r}")
        target: Any = self.root
        for raw in filter(None, ref[1:].split("/")):
            token = raw.replace("~1", "/").replace("~0", "~")
            if isinstance(target, dict) and token in target:
                target = target[token]
            elif isinstance(target, list) and token.isdigit() and int(token) < len(target):
                target = target[int(token)]
            else:
                raise UnsupportedSchemaError(f"$ref {ref!r} does not resolve")
        compiled: list[Check] = []

        def forward(value: Any) -> bool:
            return compiled[0](value)

        self.refs[ref] = forward  # a recursive reference calls through to the finished check
        compiled.append(self.compile(target))
        self.refs[ref] = compiled[0]
        return compiled[0]

    def compile(self, schema: Any) -> Check:
        if schema is True:
            return lambda value: True
        if schema is False:
            return lambda value: False
        if not isinstance(schema, dict):
            raise UnsupportedSchemaError(f"schema {schema!r}")
        if "$ref" in schema:
            if not isinstance(schema["$ref"], str):
                raise UnsupportedSchemaError("non-string $ref")
            return self.ref(schema["$ref"])  # draft 7: siblings of $ref are ignored
        if "$id" in schema and schema is not self.root:
            raise UnsupportedSchemaError("a nested $id changes how references resolve")
        checks: list[Check] = []
        for keyword, argument in schema.items():
            if keyword == "$id":
                continue
            if keyword in _IGNORED or keyword in ("then", "else", "additionalProperties"):
                continue  # then/else belong to if; additionalProperties to properties
            method = getattr(self, "kw_" + keyword.replace("$", "_"), None)
            if method is None:
                raise UnsupportedSchemaError(f"keyword {keyword!r}")
            checks.append(method(argument, schema))
        if "additionalProperties" in schema and "properties" not in schema:
            checks.append(self.kw_properties({}, schema))
        if len(checks) == 1:
            return checks[0]
        return lambda value: all(check(value) for check in checks)

    # -- keywords ------------------------------------------------------------------------

    def kw_type(self, argument: Any, schema: Mapping[str, Any]) -> Check:
        names = argument if isinstance(argument, list) else [argument]
        if not all(isinstance(name, str) and name in _TYPES for name in names):
            raise UnsupportedSchemaError(f"type {argument!r}")
        tests = [_TYPES[name] for name in names]
        if len(tests) == 1:
            return tests[0]
        return lambda value: any(test(value) for test in tests)

    def kw_properties(self, argument: Any, schema: Mapping[str, Any]) -> Check:
        if not isinstance(argument, dict):
            raise UnsupportedSchemaError("properties")
        props = {name: self.compile(sub) for name, sub in argument.items()}
        extra_schema = schema.get("additionalProperties", True)
        if "patternProperties" in schema:
            raise UnsupportedSchemaError("patternProperties")
        extra: Check | None = None if extra_schema is True else self.compile(extra_schema)

        def check(value: Any) -> bool:
            if not isinstance(value, dict):
                return True
            for name, item in value.items():
                sub = props.get(name)
                if sub is not None:
                    if not sub(item):
                        return False
                elif extra is not None and not extra(item):
                    return False
            return True

        return check

    def kw_required(self, argument: Any, schema: Mapping[str, Any]) -> Check:
        names = list(argument)
        return lambda value: not isinstance(value, dict) or all(name in value for name in names)

    def kw_propertyNames(self, argument: Any, schema: Mapping[str, Any]) -> Check:  # noqa: N802
        sub = self.compile(argument)
        return lambda value: not isinstance(value, dict) or all(sub(name) for name in value)

    def kw_items(self, argument: Any, schema: Mapping[str, Any]) -> Check:
        if isinstance(argument, list):
            raise UnsupportedSchemaError("items as a list")
        sub = self.compile(argument)
        return lambda value: not isinstance(value, list) or all(sub(item) for item in value)

    def kw_minItems(self, argument: Any, schema: Mapping[str, Any]) -> Check:  # noqa: N802
        return lambda value: not isinstance(value, list) or len(value) >= argument

    def kw_uniqueItems(self, argument: Any, schema: Mapping[str, Any]) -> Check:  # noqa: N802
        """``jsonschema``'s ``uniqueItems``: no two items ``equal`` (so ``1`` and ``True``
        are different items)."""
        if not argument:
            return lambda value: True

        def check(value: Any) -> bool:
            if not isinstance(value, list):
                return True
            return not any(
                equal(value[i], value[j])
                for i in range(len(value))
                for j in range(i + 1, len(value))
            )

        return check

    def kw_minLength(self, argument: Any, schema: Mapping[str, Any]) -> Check:  # noqa: N802
        return lambda value: not isinstance(value, str) or len(value) >= argument

    def kw_maxLength(self, argument: Any, schema: Mapping[str, Any]) -> Check:  # noqa: N802
        return lambda value: not isinstance(value, str) or len(value) <= argument

    def kw_minimum(self, argument: Any, schema: Mapping[str, Any]) -> Check:
        return lambda value: not _is_number(value) or value >= argument

    def kw_maximum(self, argument: Any, schema: Mapping[str, Any]) -> Check:
        return lambda value: not _is_number(value) or value <= argument

    def kw_pattern(self, argument: Any, schema: Mapping[str, Any]) -> Check:
        search = self.pattern(argument).search
        return lambda value: not isinstance(value, str) or search(value) is not None

    def kw_enum(self, argument: Any, schema: Mapping[str, Any]) -> Check:
        options = list(argument)
        return lambda value: any(equal(option, value) for option in options)

    def kw_const(self, argument: Any, schema: Mapping[str, Any]) -> Check:
        return lambda value: equal(value, argument)

    def kw_allOf(self, argument: Any, schema: Mapping[str, Any]) -> Check:  # noqa: N802
        subs = [self.compile(sub) for sub in argument]
        return lambda value: all(sub(value) for sub in subs)

    def kw_anyOf(self, argument: Any, schema: Mapping[str, Any]) -> Check:  # noqa: N802
        subs = [self.compile(sub) for sub in argument]
        return lambda value: any(sub(value) for sub in subs)

    def kw_oneOf(self, argument: Any, schema: Mapping[str, Any]) -> Check:  # noqa: N802
        subs = [self.compile(sub) for sub in argument]
        return lambda value: sum(1 for sub in subs if sub(value)) == 1

    def kw_not(self, argument: Any, schema: Mapping[str, Any]) -> Check:
        sub = self.compile(argument)
        return lambda value: not sub(value)

    def kw_if(self, argument: Any, schema: Mapping[str, Any]) -> Check:
        condition = self.compile(argument)
        then = self.compile(schema["then"]) if "then" in schema else None
        otherwise = self.compile(schema["else"]) if "else" in schema else None

        def check(value: Any) -> bool:
            if condition(value):
                return then is None or then(value)
            return otherwise is None or otherwise(value)

        return check


def compile_schema(
    schema: Mapping[str, Any], pattern: Callable[[str], re.Pattern[str]]
) -> Check | None:
    """The schema as a ``value -> valid?`` function, or None if it needs ``jsonschema``.

    ``pattern`` compiles a schema ``pattern`` the way the ``jsonschema`` path does.
    """
    try:
        return _Compiler(schema, pattern).compile(schema)
    except (UnsupportedSchemaError, re.error, TypeError, ValueError):
        return None
