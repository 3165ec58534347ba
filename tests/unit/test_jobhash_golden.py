"""The golden vectors (tests/golden/*.json, produced by the real helm) hold for jobhash.

Each vector's values are written as a values file (as scripts/gen_golden.py gives them to
helm, with controller.enabled=false) and go through the whole jobhash pipeline.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from jobhash.plan import plan
from jobhash.values import ValueSources, load, load_chart

ROOT = Path(__file__).resolve().parents[2]
CHART = load_chart(ROOT / "charts" / "autoroll")
VECTORS: list[dict[str, Any]] = [
    vector
    for path in sorted((ROOT / "tests" / "golden").glob("*.json"))
    for vector in json.loads(path.read_text(encoding="utf-8"))["vectors"]
]


def yaml_safe_json(value: Any) -> str:
    """JSON that a YAML 1.1 parser reads back unchanged: raw UTF-8, but escape what YAML
    forbids raw (controls, surrogates, U+FFFE/U+FFFF) and the U+2028/U+2029 line breaks."""
    out = []
    for char in json.dumps(value, ensure_ascii=False):
        code = ord(char)
        allowed = char in "\t\n\r" or 0x20 <= code <= 0x7E or code == 0x85
        allowed = allowed or 0xA0 <= code <= 0xD7FF or 0xE000 <= code <= 0xFFFD or code > 0xFFFF
        out.append(char if allowed and code not in (0x2028, 0x2029) else f"\\u{code:04x}")
    return "".join(out)


def test_there_are_golden_vectors() -> None:
    assert len(VECTORS) >= 10


@pytest.mark.parametrize("vector", VECTORS, ids=[v["description"] for v in VECTORS])
def test_golden_vector(vector: dict[str, Any], tmp_path: Path) -> None:
    values_file = tmp_path / "values.json"
    values_file.write_text(yaml_safe_json(vector["values"]), encoding="utf-8")
    sources = ValueSources(files=[values_file], sets=["controller.enabled=false"])
    items = plan(load(CHART, sources).values, release=vector["release"], chart_name=CHART.name)
    assert len(items) == 1
    (item,) = items
    assert item.spec == vector["expected_json"]
    assert item.hash == vector["expected_sha256"]
    assert item.name == vector["expected_name"]
    assert item.kind == vector["kind"]
