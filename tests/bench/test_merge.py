"""``bench.merge.combine``: the real node's roll pace belongs to the quiet column only. Every
``bench.run`` carries it (from bench/roll_pace.json), and before this the loaded column showed
a quiet measurement as if it had been taken under load."""

from __future__ import annotations

from typing import Any

import pytest

from bench import merge as merging


def test_the_loaded_column_never_shows_the_quiet_roll_pace(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(merging, "merge", lambda a, b: {**a, **b})
    pace: dict[str, Any] = {"roll_s": 9.4, "pull_ready_s": 3.3}
    got = merging.combine(
        [{"scale": "quiet"}, {"roll_pace": pace}], [{"scale": "loaded"}, {"roll_pace": pace}], pace
    )
    assert got["roll_pace"] == pace
    assert got["loaded"] == {"scale": "loaded"}


def test_without_a_loaded_pair_there_is_no_loaded_column(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(merging, "merge", lambda a, b: {**a, **b})
    assert "loaded" not in merging.combine([{}, {}], [], None)


def giant_run(**extra: Any) -> dict[str, Any]:
    machine = {"load_before": "0.3 / 1.2 / 3.6", "load_after": "1.5 / 3.1 / 3.5"}
    return {"date": "2026-12-03T09:19:26", "machine": machine, **extra}


def test_giant_from_takes_only_the_largest_sizes_and_says_where_they_came_from(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(merging, "merge", lambda a, b: {**a, **b})
    quiet: list[dict[str, Any]] = [{"scale": ["quiet cells"]}, {"push": {"quiet": 1}}]
    got = merging.combine(quiet, [], None, giant_run(giant=[{"deployments": 50000}], push={}))
    assert got["giant"] == [{"deployments": 50000}]
    assert got["scale"] == ["quiet cells"] and got["push"] == {"quiet": 1}
    assert got["giant_part"] == {
        "date": "2026-12-03T09:19:26",
        "load_before": "0.3 / 1.2 / 3.6",
        "load_after": "1.5 / 3.1 / 3.5",
    }


def test_the_report_names_the_run_the_largest_row_came_from() -> None:
    from bench.scale_fit import _giant_source

    results = merging.with_giant({}, giant_run(giant=[{"deployments": 50000}]))
    said = _giant_source(results)
    assert "The 50,000 row comes from a separate" in said
    assert "2026-12-03T09:19:26" in said and "0.3 / 1.2 / 3.6" in said
    assert _giant_source({"giant": [{"deployments": 50000}]}) == ""


def test_a_giant_from_run_without_a_giant_size_is_refused_by_name(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(ValueError, match="--giant-from run measured no giant size"):
        merging.with_giant({}, giant_run())
    assert merging.main(["a.json", "b.json", "--giant-from"]) == 2
    assert "--giant-from needs a results file" in capsys.readouterr().out


def test_the_roll_pace_target_keeps_one_row_whether_measured_or_not() -> None:
    from bench.cache_report import verdicts

    pace = {"roll_s": 9.4, "pull_ready_s": 3.3, "full_passes": 0}
    measured = verdicts({"roll_pace": pace}, [])[0]
    unmeasured = verdicts({}, [])[0]
    assert measured.name == unmeasured.name
    assert (measured.met, unmeasured.met) == (True, None)


def test_a_giant_from_file_that_is_missing_is_refused_by_name(
    capsys: pytest.CaptureFixture[str], tmp_path: Any
) -> None:
    missing = tmp_path / "nope.json"
    assert merging.main(["a.json", "b.json", "--giant-from", str(missing)]) == 2
    said = capsys.readouterr().out
    assert f"--giant-from {missing}: not a bench.run results file" in said
