"""tests/e2e/schedule.py: the order the e2e tier's files go to the workers."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import cast

import pytest

from tests.e2e import schedule


@dataclass
class Item:
    """What ``file_order`` reads of a pytest item: its file and (here) its name."""

    path: Path
    name: str


def items(*spec: str) -> list[pytest.Item]:
    built = [Item(Path("tests/e2e") / f, f"{f}::{n}") for f, n in map(str.split, spec)]
    return cast("list[pytest.Item]", built)


def names(ordered: list[pytest.Item]) -> list[str]:
    return [cast(Item, item).name for item in ordered]


def test_the_longest_files_go_first_and_each_files_tests_stay_in_their_order(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(schedule, "E2E_FILE_SECONDS", {"test_b.py": 300, "test_a.py": 30})
    ordered = schedule.file_order(
        items("test_a.py 1", "test_b.py 1", "test_c.py 1", "test_b.py 2", "test_c.py 2")
    )
    # test_c.py is not listed: two tests at SECONDS_PER_TEST each, 10 s, after test_a.py.
    assert names(ordered) == [
        "test_b.py::1",
        "test_b.py::2",
        "test_a.py::1",
        "test_c.py::1",
        "test_c.py::2",
    ]


def test_files_that_take_as_long_keep_a_stable_order_by_name(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(schedule, "E2E_FILE_SECONDS", {})
    ordered = schedule.file_order(items("test_z.py 1", "test_y.py 1"))
    assert names(ordered) == ["test_y.py::1", "test_z.py::1"]
