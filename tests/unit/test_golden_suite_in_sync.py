"""The golden vectors and the helm-unittest suite generated from them must agree.

``scripts/gen_golden.py`` writes both files from one helm run. helm-unittest checks the names and
full hashes against the chart; this test makes sure the suite it runs is the one the committed
vectors describe, and that each vector is internally consistent (its JSON hashes to its sha256,
its name ends in that hash), so ``expected_json`` is pinned by the hash helm-unittest checks.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import re
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
VECTORS = ROOT / "tests" / "golden" / "jobhash_vectors.json"
SUITE = ROOT / "charts" / "autoroll" / "tests" / "golden_vectors_test.yaml"
REQUIRED_KEYS = {
    "description",
    "release",
    "values",
    "expected_json",
    "expected_sha256",
    "expected_name",
}


def _generator() -> ModuleType:
    """Import scripts/gen_golden.py (a script, not a package) by path."""
    spec = importlib.util.spec_from_file_location("gen_golden", ROOT / "scripts" / "gen_golden.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _vectors() -> list[dict[str, Any]]:
    doc = json.loads(VECTORS.read_text(encoding="utf-8"))
    vectors: list[dict[str, Any]] = doc["vectors"]
    return vectors


def test_generated_suite_matches_the_committed_vectors() -> None:
    expected = str(_generator().suite_text(_vectors()))
    assert SUITE.read_text(encoding="utf-8") == expected, (
        "charts/autoroll/tests/golden_vectors_test.yaml is stale: "
        "run `source .tools/env && python3 scripts/gen_golden.py`"
    )


def test_vectors_file_is_what_the_generator_would_write_for_its_vectors() -> None:
    vectors = _vectors()
    assert VECTORS.read_text(encoding="utf-8") == _generator().vectors_text(vectors)


def test_every_case_in_the_generator_has_a_vector() -> None:
    cases = _generator().CASES
    vectors = _vectors()
    assert [c["description"] for c in cases] == [v["description"] for v in vectors]
    assert [c["values"] for c in cases] == [v["values"] for v in vectors]
    assert [c["release"] for c in cases] == [v["release"] for v in vectors]


def test_there_are_at_least_ten_vectors_with_the_shared_format() -> None:
    vectors = _vectors()
    assert len(vectors) >= 10
    for v in vectors:
        assert v.keys() >= REQUIRED_KEYS, v["description"]


@pytest.mark.parametrize("vector", _vectors(), ids=lambda v: str(v["description"])[:60])
def test_vector_json_hashes_to_its_sha256_and_name(vector: dict[str, Any]) -> None:
    digest = hashlib.sha256(vector["expected_json"].encode("utf-8")).hexdigest()
    assert digest == vector["expected_sha256"]
    name: str = vector["expected_name"]
    limit = 52 if vector.get("kind") == "CronJob" else 63
    assert len(name) <= limit
    assert re.fullmatch(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?", name)
    if not name.endswith(digest[:8]):
        # Only an entry that opts out of the hash suffix may end differently.
        assert '"hashSuffix": false' in json.dumps(vector["values"])
