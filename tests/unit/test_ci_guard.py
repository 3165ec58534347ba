"""In CI a missing tool fails the run; on a laptop it only skips."""

from __future__ import annotations

from pathlib import Path

import pytest

CONFTEST = (Path(__file__).parents[1] / "conftest.py").read_text()

NEEDS_MISSING_TOOL = """
from conftest import require_tool

def test_needs_tool():
    require_tool("autoroll-no-such-tool")
"""

PLAIN_SKIP = """
import pytest

def test_skipped():
    pytest.skip("not today")

def test_ok():
    pass
"""


@pytest.mark.parametrize("ci", ["true", ""])
def test_missing_tool_fails_in_ci_and_skips_elsewhere(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, ci: str
) -> None:
    monkeypatch.setenv("CI", ci)
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(NEEDS_MISSING_TOOL)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    if ci:
        result.assert_outcomes(failed=1)
        result.stdout.fnmatch_lines(["*autoroll-no-such-tool*not on PATH*"])
    else:
        result.assert_outcomes(skipped=1)
        assert result.ret == pytest.ExitCode.OK


def test_any_skip_fails_the_session_in_ci(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CI", "true")
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(PLAIN_SKIP)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, skipped=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*CI=true: 1 skipped test(s) count as failures*"])
