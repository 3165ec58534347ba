"""Sizes as a ratchet: no module over 400 lines, no class over 250 (issue 27).

Today's offenders are listed below with the size they had when the limit came in. The test
fails when one of them grows, when any other module or class crosses the limit, and when a
listed one is back within it (take it off the list, so it cannot grow back unnoticed). The
list is emptied as those modules and classes are split; it must never gain an entry.

Every ``.py`` file under the project's source folders counts, tests included: a 1,300-line
test module is as hard to read as a 1,300-line controller. A module's size is its line
count; a class's runs from its ``class`` line to its last line (nested classes are named
``Outer.Inner``). ``python -m tests.lint.test_sizes`` prints the current offenders in the
form of the tables below.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Final

import pytest

ROOT = Path(__file__).resolve().parents[2]
#: Where the project's Python lives; the top level's own ``*.py`` files count too.
SOURCE_DIRS: Final = ("autoroll", "jobhash", "bench", "scripts", "tests")
MODULE_LIMIT: Final = 400
CLASS_LIMIT: Final = 250

# Sizes on 2026-12-02 at the merge of the house branch into main (after the registries, bad
# builds, pinning and performance branches, which grew in parallel with it). Lower a number or
# drop an entry when a split shrinks it; never raise one.
MODULES_OVER_THE_LIMIT: Final[Mapping[str, int]] = {}
CLASSES_OVER_THE_LIMIT: Final[Mapping[str, int]] = {}


def python_files(root: Path = ROOT) -> list[Path]:
    """Every ``.py`` file of the project (none from a venv, a tool cache or a hidden folder)."""
    found = [p for p in root.glob("*.py")]
    for folder in SOURCE_DIRS:
        found += [
            p
            for p in (root / folder).rglob("*.py")
            if not any(part.startswith(".") for part in p.relative_to(root).parts)
        ]
    return sorted(found)


def classes(tree: ast.AST, prefix: str = "") -> Iterator[tuple[str, int]]:
    """(qualified name, lines) of every class in ``tree``, nested ones as ``Outer.Inner``."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.ClassDef):
            name = f"{prefix}{node.name}"
            yield name, (node.end_lineno or node.lineno) - node.lineno + 1
            yield from classes(node, f"{name}.")
        else:
            yield from classes(node, prefix)


def sizes(root: Path = ROOT) -> tuple[dict[str, int], dict[str, int]]:
    """Line counts of every module and every class, keyed as in the tables above."""
    modules: dict[str, int] = {}
    found: dict[str, int] = {}
    for path in python_files(root):
        text = path.read_text()
        key = path.relative_to(root).as_posix()
        modules[key] = len(text.splitlines())
        for name, lines in classes(ast.parse(text, filename=key)):
            found[f"{key}::{name}"] = lines
    return modules, found


def problems(actual: Mapping[str, int], allowed: Mapping[str, int], limit: int) -> list[str]:
    """What breaks the ratchet: a listed offender that grew or is back within the limit (or
    gone), and anything else over the limit."""
    found = []
    for name, lines in sorted(actual.items()):
        ceiling = allowed.get(name)
        if ceiling is None and lines > limit:
            found.append(f"{name}: {lines} lines, over the limit of {limit}; split it")
        elif ceiling is not None and lines > ceiling:
            found.append(f"{name}: {lines} lines, grew past its listed {ceiling}; split it")
        elif ceiling is not None and lines <= limit:
            found.append(f"{name}: {lines} lines, within {limit} now; take it off the list")
    found += [
        f"{name}: listed, but no longer exists; take it off the list"
        for name in sorted(set(allowed) - set(actual))
    ]
    return found


@pytest.fixture(scope="module")
def measured() -> tuple[dict[str, int], dict[str, int]]:
    return sizes()


def test_no_module_grows_past_the_limit_or_its_listed_size(
    measured: tuple[dict[str, int], dict[str, int]],
) -> None:
    assert problems(measured[0], MODULES_OVER_THE_LIMIT, MODULE_LIMIT) == []


def test_no_class_grows_past_the_limit_or_its_listed_size(
    measured: tuple[dict[str, int], dict[str, int]],
) -> None:
    assert problems(measured[1], CLASSES_OVER_THE_LIMIT, CLASS_LIMIT) == []


def test_the_lists_only_ever_name_offenders() -> None:
    assert all(lines > MODULE_LIMIT for lines in MODULES_OVER_THE_LIMIT.values())
    assert all(lines > CLASS_LIMIT for lines in CLASSES_OVER_THE_LIMIT.values())


@pytest.mark.parametrize(
    ("actual", "allowed", "expected"),
    [
        ({"a.py": 401}, {}, ["a.py: 401 lines, over the limit of 400; split it"]),
        ({"a.py": 400}, {}, []),
        ({"a.py": 500}, {"a.py": 500}, []),
        ({"a.py": 450}, {"a.py": 500}, []),
        ({"a.py": 501}, {"a.py": 500}, ["a.py: 501 lines, grew past its listed 500; split it"]),
        ({"a.py": 399}, {"a.py": 500}, ["a.py: 399 lines, within 400 now; take it off the list"]),
        ({}, {"a.py": 500}, ["a.py: listed, but no longer exists; take it off the list"]),
    ],
)
def test_the_ratchet(actual: dict[str, int], allowed: dict[str, int], expected: list[str]) -> None:
    assert problems(actual, allowed, 400) == expected


def test_classes_are_measured_with_their_nested_classes_named(tmp_path: Path) -> None:
    source = "class Outer:\n    class Inner:\n        x = 1\n\n    y = 2\n"
    assert dict(classes(ast.parse(source))) == {"Outer": 5, "Outer.Inner": 2}


def test_a_module_outside_the_source_folders_and_hidden_folders_is_not_measured(
    tmp_path: Path,
) -> None:
    for name in ("top.py", "tests/a.py", "tests/.hidden/b.py", ".venv/lib/c.py", "other/d.py"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("x = 1\n")
    assert [p.relative_to(tmp_path).as_posix() for p in python_files(tmp_path)] == [
        "tests/a.py",
        "top.py",
    ]


if __name__ == "__main__":
    modules, found = sizes()
    for title, table, limit in (
        ("MODULES_OVER_THE_LIMIT", modules, MODULE_LIMIT),
        ("CLASSES_OVER_THE_LIMIT", found, CLASS_LIMIT),
    ):
        print(f"{title}: Final[Mapping[str, int]] = {{")
        for name, lines in sorted(table.items()):
            if lines > limit:
                print(f'    "{name}": {lines},')
        print("}")
