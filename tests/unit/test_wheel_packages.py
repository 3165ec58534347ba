"""Every package under autoroll/ and jobhash/ ships in the wheel.

pyproject.toml lists the packages by hand (jobhash._chart maps onto charts/autoroll), and an
editable install finds a forgotten one anyway, so only the image would notice: this test
notices first.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def listed() -> set[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    return set(project["tool"]["setuptools"]["packages"])


def on_disk(top: str) -> set[str]:
    return {
        ".".join(init.parent.relative_to(ROOT).parts)
        for init in (ROOT / top).rglob("__init__.py")
        if "__pycache__" not in init.parts
    }


def test_every_python_package_is_listed_for_the_wheel() -> None:
    assert on_disk("autoroll") | on_disk("jobhash") <= listed()


def test_the_list_names_no_package_that_is_gone() -> None:
    chart = {name for name in listed() if name.startswith("jobhash._chart")}
    assert listed() - chart <= on_disk("autoroll") | on_disk("jobhash")
