"""The pure core imports only the standard library and itself, and the model is its floor.

import-linter's layers contract keeps autoroll.core from reaching up into the other
packages; this test closes what a contract cannot list in advance: any third-party package at
all (a new dependency would otherwise slip in unnoticed), and any core module imported by the
model, which every layer shares.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

CORE = Path(__file__).resolve().parents[2] / "autoroll" / "core"


def imported(source: str) -> set[str]:
    """Absolute module names a source file imports (relative imports are not used here)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, "the core uses absolute imports"
            names.add(node.module or "")
    return names


def outside_core(names: set[str]) -> set[str]:
    """The names that are neither the standard library nor autoroll.core."""
    return {
        name
        for name in names
        if name.split(".")[0] not in sys.stdlib_module_names
        and name != "autoroll.core"
        and not name.startswith("autoroll.core.")
    }


@pytest.mark.parametrize(
    "path", sorted(CORE.rglob("*.py")), ids=lambda path: str(path.relative_to(CORE))
)
def test_a_core_module_imports_only_the_standard_library_and_the_core(path: Path) -> None:
    assert outside_core(imported(path.read_text())) == set()


def test_the_model_imports_no_other_autoroll_module() -> None:
    names = imported((CORE / "model.py").read_text())
    assert {name for name in names if name.startswith("autoroll")} == set()


@pytest.mark.parametrize(
    ("line", "caught"),
    [
        ("import requests", {"requests"}),
        ("from autoroll.instruments import metrics", {"autoroll.instruments"}),
        ("from autoroll.config import Config", {"autoroll.config"}),
        ("import json", set()),
        ("from autoroll.core.model import Digest", set()),
    ],
)
def test_the_check_catches_an_import_from_outside(line: str, caught: set[str]) -> None:
    assert outside_core(imported(line)) == caught
