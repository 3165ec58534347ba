"""The declared dependency ranges, the hashed lock and the installed venv tell one story.

Runs in both venvs CI builds: the locked one (``make venv``: every version inside its
declared range, the lock complete but for what it omits on purpose) and the lowest one
(``make test-lowest``, ``AUTOROLL_EXPECT_LOWEST=1``: every direct dependency installed at
exactly its declared lower bound, so the bounds are the versions the tiers ran on).
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[2]
LOCK = ROOT / "requirements"
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
EXPECT_LOWEST = os.environ.get("AUTOROLL_EXPECT_LOWEST") == "1"
#: Left out of the lock on purpose (Makefile LOCK_OMIT): kubernetes.aio's stack.
OMITTED_FROM_LOCK = {
    "aiohttp",
    "aiohttp-retry",
    "aiohappyeyeballs",
    "aiosignal",
    "frozenlist",
    "multidict",
    "propcache",
    "yarl",
}
_PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s;\\]+)", re.MULTILINE)


def requirements(*groups: str) -> list[Requirement]:
    """``dependencies`` (group "") and the named optional-dependency groups."""
    project = PYPROJECT["project"]
    found: list[Requirement] = []
    for group in groups:
        lines = project["dependencies"] if group == "" else project["optional-dependencies"][group]
        found += [Requirement(line) for line in lines]
    return found


def lower_bound(requirement: Requirement) -> Version:
    (floor,) = [Version(s.version) for s in requirement.specifier if s.operator == ">="]
    return floor


def pins(name: str) -> dict[str, Version]:
    text = (LOCK / name).read_text()
    return {canonicalize_name(n): Version(v) for n, v in _PIN.findall(text)}


def test_every_declared_dependency_has_a_lower_bound() -> None:
    for requirement in requirements("", "test", "lint"):
        assert lower_bound(requirement), requirement


def test_installed_direct_dependencies_are_inside_their_ranges() -> None:
    for requirement in requirements("", "test"):
        installed = Version(importlib.metadata.version(requirement.name))
        assert requirement.specifier.contains(installed, prereleases=True), (
            f"{requirement.name} {installed} is outside {requirement}"
        )
        if EXPECT_LOWEST:
            assert installed == lower_bound(requirement), (
                f"{requirement.name}: the lowest tier installed {installed}, not the declared"
                f" floor of {requirement}; raise the floor to what can really be installed"
            )


def test_the_lock_pins_every_declared_dependency_inside_its_range() -> None:
    locked = pins("dev.txt")
    for requirement in requirements("", "test", "lint"):
        version = locked.get(canonicalize_name(requirement.name))
        assert version is not None, f"{requirement.name} is not in requirements/dev.txt"
        assert requirement.specifier.contains(version, prereleases=True), (
            f"requirements/dev.txt pins {requirement.name}=={version}, outside {requirement};"
            " run `make lock`"
        )


def test_the_image_and_the_dev_venv_share_every_runtime_pin() -> None:
    runtime, dev = pins("runtime.txt"), pins("dev.txt")
    for requirement in requirements(""):
        assert canonicalize_name(requirement.name) in runtime, requirement.name
    assert {name: dev.get(name) for name in runtime} == runtime
    assert not OMITTED_FROM_LOCK & (runtime.keys() | dev.keys())


def test_the_build_lock_is_the_build_system_and_the_dev_venvs_setuptools() -> None:
    build = pins("build.txt")
    assert set(build) == {"setuptools"}
    for line in PYPROJECT["build-system"]["requires"]:
        requirement = Requirement(line)
        assert requirement.specifier.contains(build[canonicalize_name(requirement.name)])
    assert build["setuptools"] == pins("dev.txt")["setuptools"]


def test_nothing_is_missing_but_what_the_lock_omits_on_purpose() -> None:
    if importlib.util.find_spec("pip") is None:
        pytest.skip("no pip in this venv to run `pip check`")
    result = subprocess.run(
        [sys.executable, "-m", "pip", "check"],
        check=False,
        capture_output=True,
        text=True,
        timeout=120,
    )
    unmet = [line for line in result.stdout.splitlines() if "requires" in line]
    allowed = re.compile(r"^kubernetes \S+ requires (aiohttp|aiohttp-retry), which is not")
    assert [line for line in unmet if not allowed.match(line)] == [], result.stdout
    if not EXPECT_LOWEST:
        # The locked venv is the image's set: without aiohttp, kubernetes.aio cannot load,
        # so any import of it fails the suites (the image deletes it).
        assert importlib.util.find_spec("aiohttp") is None, "run `make venv` (lock changed)"
