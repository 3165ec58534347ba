"""Shared pytest configuration.

In CI (``CI=true``) a test that cannot run because a tool or service is missing is a
failure, not a skip: ``require_tool`` fails there, and any skip at all fails the session.
"""

from __future__ import annotations

import os
import shutil

import pytest
from hypothesis import settings

IN_CI = os.environ.get("CI", "").lower() in {"1", "true", "yes"}


def require_tool(name: str) -> str:
    """Return the path of ``name`` on PATH; skip locally, fail in CI, when it is missing."""
    path = shutil.which(name)
    if path is None:
        message = f"required tool {name!r} is not on PATH (run `make tools`)"
        if IN_CI:
            pytest.fail(message)
        pytest.skip(message)
    return path


#: ``make mutants`` loads this profile: with no example database, a mutant is judged by the
#: tests' own seeded examples, never by a failing example another mutant left behind, so a
#: fresh run and a re-run give each mutant the same verdict.
settings.register_profile("mutants", database=None)

_skipped: list[str] = []


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    # An expected failure (xfail, always strict here) ran and failed as documented: not a skip.
    if report.skipped and not hasattr(report, "wasxfail"):
        _skipped.append(report.nodeid)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if IN_CI and _skipped and exitstatus == 0:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if IN_CI and _skipped:
        terminalreporter.write_line(
            f"CI=true: {len(_skipped)} skipped test(s) count as failures: {', '.join(_skipped)}",
            red=True,
        )
