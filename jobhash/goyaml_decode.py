"""Decoding: a node tree -> Go values, as go-yaml v2 ``decode.go`` decodes into ``interface{}``.

Anchors and aliases (with go-yaml's billion-laughs guard), ``<<`` merges, typed map keys; then
sigs.k8s.io/yaml's ``convertToJSONableObject`` and the JSON trip: non-string keys become
strings (ints decimal, floats as float32 ``%g``), every number a float64, NaN/Inf an error.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from jobhash.errors import UnmirrorableError, ValuesError
from jobhash.gojson import GoValue, format_g32
from jobhash.goyaml_compose import _Node
from jobhash.goyaml_resolve import (
    BINARY_TAG,
    MERGE_TAG,
    _Int,
    _ResolveError,
    _Uint,
    _UnsupportedError,
    resolve,
)

# go-yaml v2's billion-laughs guard (decode.go allowedAliasRatio).
_ALIAS_LOW = 400_000
_ALIAS_HIGH = 4_000_000


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
