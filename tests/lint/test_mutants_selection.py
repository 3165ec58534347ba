"""``make mutants`` runs only the unit tests listed in ``[tool.mutmut]``
``pytest_add_cli_args_test_selection``: a test of a mutated module left off that list kills
no mutant, however sharp it is, and nothing says so (issue 27: five new test files were).

So every unit test module that imports a mutated module is either on the list or below, with
the reason it stays off. A new test module of the core fails here until it is placed.
"""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path
from typing import Final

ROOT = Path(__file__).resolve().parents[2]

#: Shell tests that import a mutated module (mostly for its types: ``Reason``, ``Policy``) and
#: run the reconciler, the executor or the registry client with threads and fakes: too slow
#: and too timing-bound to run for every mutant; the core's own tables cover what they decide.
OFF_THE_LIST: Final = frozenset(
    {
        "tests/unit/test_executor.py",
        "tests/unit/test_pacer.py",
        "tests/unit/test_plan.py",
        "tests/unit/test_quarantine_passes.py",
        "tests/unit/test_reconciler.py",
        "tests/unit/test_reconciler_content.py",
        "tests/unit/test_reconciler_credentials.py",
        "tests/unit/test_reconciler_guardrails.py",
        "tests/unit/test_reconciler_pinning.py",
        "tests/unit/test_reconciler_scope.py",
        "tests/unit/test_registry_children.py",
        "tests/unit/test_registry_content.py",
    }
)


def mutmut_settings() -> dict[str, list[str]]:
    with (ROOT / "pyproject.toml").open("rb") as handle:
        settings: dict[str, list[str]] = tomllib.load(handle)["tool"]["mutmut"]
    return settings


def imported(path: Path) -> set[str]:
    """Every module ``path`` imports, and each ``from`` import's ``module.name``."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return found


def unplaced() -> list[str]:
    settings = mutmut_settings()
    mutated = {path.removesuffix(".py").replace("/", ".") for path in settings["only_mutate"]}
    listed = set(settings["pytest_add_cli_args_test_selection"])
    return [
        str(path.relative_to(ROOT))
        for path in sorted((ROOT / "tests" / "unit").rglob("test_*.py"))
        if imported(path) & mutated and str(path.relative_to(ROOT)) not in listed | OFF_THE_LIST
    ]


def test_every_test_of_a_mutated_module_is_run_by_make_mutants_or_says_why_not() -> None:
    assert unplaced() == [], (
        "add these to [tool.mutmut] pytest_add_cli_args_test_selection in pyproject.toml,"
        " or to OFF_THE_LIST here with the reason"
    )


def test_the_lists_name_only_files_that_exist() -> None:
    listed = mutmut_settings()["pytest_add_cli_args_test_selection"]
    assert [p for p in [*listed, *sorted(OFF_THE_LIST)] if not (ROOT / p).is_file()] == []


def test_a_new_test_of_the_core_left_off_the_list_is_caught(tmp_path: Path) -> None:
    """The check itself can fail: a module importing ``autoroll.core.halt`` is seen."""
    probe = tmp_path / "test_probe.py"
    probe.write_text("from autoroll.core.halt import rollout_halt\n")
    mutated = {p.removesuffix(".py").replace("/", ".") for p in mutmut_settings()["only_mutate"]}
    assert imported(probe) & mutated == {"autoroll.core.halt"}
