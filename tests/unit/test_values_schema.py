"""The chart's values are typed once (values.schema.json) and declared once (values.yaml):
the schema covers exactly the values that values.yaml declares, so neither drifts silently.
(The README's table is generated from values.yaml by helm-docs: test_chart_docs.py.)
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import yaml

from autoroll.core.receivers.sources import RECEIVERS

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "charts" / "autoroll"


def _value_paths(values: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    """Every key path of values.yaml; maps with entries are descended into."""
    if isinstance(values, Mapping):
        for key, child in values.items():
            yield (*path, str(key))
            yield from _value_paths(child, (*path, str(key)))


def _schema_paths(
    schema: Mapping[str, Any], path: tuple[str, ...] = ()
) -> Iterator[tuple[str, ...]]:
    for key, sub in schema.get("properties", {}).items():
        yield (*path, key)
        yield from _schema_paths(sub, (*path, key))


def test_schema_declares_every_value_in_values_yaml() -> None:
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    schema = json.loads((CHART / "values.schema.json").read_text())
    declared = set(_schema_paths(schema))
    # Children of free-form Kubernetes objects (resources, security contexts) are typed by
    # their parent's schema; only paths under a schema object with `properties` must match.
    missing = [
        ".".join(p)
        for p in _value_paths(values)
        if p not in declared
        and (p[:-1] == () or p[:-1] in declared)
        and _has_properties(schema, p[:-1])
    ]
    assert missing == []


def _has_properties(schema: Mapping[str, Any], path: tuple[str, ...]) -> bool:
    node: Mapping[str, Any] = schema
    for key in path:
        node = node.get("properties", {}).get(key, {})
    return "properties" in node and node.get("additionalProperties") is False


def test_values_yaml_declares_every_schema_property() -> None:
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    schema = json.loads((CHART / "values.schema.json").read_text())
    present = set(_value_paths(values))
    # `global` is Helm's own; a security context may type fields the defaults leave unset.
    # The per-namespace budget shares are unset by default (the controller then takes half of
    # the cluster-wide limit), so values.yaml documents them in a comment, as helm-docs reads.
    # The webhook receivers' secrets are none by default; values.yaml documents their map.
    ignored = {
        ("global",),
        ("guardrails", "budget", "deletionsPerNamespace"),
        ("guardrails", "budget", "inFlightPerNamespace"),
        *(("secret", "receivers", str(source)) for source in RECEIVERS),
    }
    extra = [
        ".".join(p)
        for p in _schema_paths(schema)
        if p not in present and p not in ignored and _has_properties(schema, p[:-1])
    ]
    assert extra == []
