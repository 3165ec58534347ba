"""The chart's values are documented once (``# --`` in values.yaml) and typed once (schema).

These checks keep the README table generated from those comments, and the schema covering
exactly the values that values.yaml declares, so neither can drift silently.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "values_table.py"
CHART = ROOT / "charts" / "autoroll"


def _load_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("values_table", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["values_table"] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


vt = _load_script()


def test_chart_readme_table_is_current() -> None:
    result = subprocess.run(
        [sys.executable, str(SCRIPT), "--check"], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr


def test_check_fails_when_the_readme_is_stale(tmp_path: Path) -> None:
    values = tmp_path / "values.yaml"
    values.write_text("# -- How often.\nevery: 5\n")
    readme = tmp_path / "README.md"
    readme.write_text(f"intro\n{vt.BEGIN}\n| old |\n{vt.END}\n")
    argv = ["--values", str(values), "--readme", str(readme)]
    assert vt.main([*argv, "--check"]) == 1
    assert vt.main(argv) == 0
    assert "| `every` | int | `5` | How often. |" in readme.read_text()
    assert vt.main([*argv, "--check"]) == 0


def test_rows_carry_key_type_default_and_joined_description() -> None:
    text = (
        "# Plain comments are not docs.\n"
        "# -- The image.\n"
        "image:\n"
        "  # -- Repository; first line\n"
        "  # and its continuation | with a pipe.\n"
        "  repository: x/y\n"
        "  # -- Pinned?\n"
        "  pinned: false\n"
        "# -- Shown whole because no child is documented.\n"
        "resources:\n"
        "  limits:\n"
        "    cpu: 1\n"
    )
    rows = vt.build_rows(text)
    assert [(r.key, r.type, r.default) for r in rows] == [
        ("image.repository", "string", '"x/y"'),
        ("image.pinned", "bool", "false"),
        ("resources", "object", '{"limits":{"cpu":1}}'),
    ]
    assert rows[0].description == "Repository; first line and its continuation | with a pipe."
    assert r"continuation \| with a pipe" in vt.render_table(rows)


def test_an_undocumented_value_is_an_error_naming_it() -> None:
    text = "# -- Documented.\na: 1\nb:\n  c: 2\n"
    with pytest.raises(vt.ValuesDocError, match=r"no `# --` comment documents b\.c"):
        vt.build_rows(text)


def test_a_blank_line_detaches_a_doc_comment() -> None:
    with pytest.raises(vt.ValuesDocError, match="documents a "):
        vt.build_rows("# -- Orphaned.\n\na: 1\n")


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
    ignored = {("global",)}
    extra = [
        ".".join(p)
        for p in _schema_paths(schema)
        if p not in present and p not in ignored and _has_properties(schema, p[:-1])
    ]
    assert extra == []
