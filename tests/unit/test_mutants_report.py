"""scripts/mutants_report.py: the kill rate ``make mutants`` prints, from mutmut's records."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def script() -> ModuleType:
    """Import scripts/mutants_report.py (a script, not a package) by path."""
    spec = importlib.util.spec_from_file_location(
        "mutants_report", ROOT / "scripts/mutants_report.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses and annotations look the module up
    spec.loader.exec_module(module)
    return module


def test_a_failing_run_or_a_timeout_kills_and_a_passing_run_survives(script: ModuleType) -> None:
    counts = script.tally([1, 3, 36, 0, 0, 5, None, 99])
    assert counts == {"killed": 3, "survived": 2, "no tests": 1, "not run": 1, "other": 1}
    # Mutants not run yet are left out of the rate; those no test reaches count against it.
    assert script.kill_rate(counts) == pytest.approx(3 / 6)
    assert script.kill_rate(script.tally([None])) is None


def test_the_report_reads_mutmuts_records_per_module_and_in_all(
    script: ModuleType, tmp_path: Path
) -> None:
    for path, codes in (("pkg/a.py", {"m1": 1, "m2": 0}), ("pkg/b.py", {"m3": 1, "m4": 1})):
        meta = tmp_path / f"{path}.meta"
        meta.parent.mkdir(parents=True, exist_ok=True)
        meta.write_text(json.dumps({"exit_code_by_key": codes}))
    found = script.records(tmp_path)
    lines = script.report(found).splitlines()
    assert lines[1].split() == ["pkg/a.py", "1", "1", "0", "0", "50.0%"]
    assert lines[2].split() == ["pkg/b.py", "2", "0", "0", "0", "100.0%"]
    assert lines[3].split() == ["all", "3", "1", "0", "0", "75.0%"]
    assert script.survivors(found) == ["survived: m2"]


def test_no_records_says_to_run_it_first(
    script: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert script.main([str(tmp_path)]) == 1
    assert "run `make mutants` first" in capsys.readouterr().out
