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
