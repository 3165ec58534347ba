"""The ``stalled`` strategy's timing (bench.scale.stalled_timing): the hold always outlasts
the registry budget, and the budget always covers the plain strategy's cold pass, so what
is tested is the pass's own time, never a registry budget too short for the HEADs (at
10,000 Deployments on a loaded machine a fixed 2 s ran out after 173 of 200)."""

from __future__ import annotations

import pytest

from bench.scale import STALLED_BUDGET_SECONDS, stalled_timing


@pytest.mark.parametrize(
    ("cold", "budget", "hold"),
    [(None, 2.0, 3.0), (0.4, 2.0, 3.0), (1.0, 2.0, 3.0), (4.0, 6.0, 7.0), (16.04, 24.1, 25.1)],
)
def test_the_budget_covers_the_cold_pass_and_the_hold_outlasts_the_budget(
    cold: float | None, budget: float, hold: float
) -> None:
    assert stalled_timing(cold) == (budget, hold)


@pytest.mark.parametrize("cold", [0.0, 0.7, 1.33, 2.9, 9.52, 16.04, 60.0])
def test_for_any_cold_pass(cold: float) -> None:
    budget, hold = stalled_timing(cold)
    assert budget >= max(STALLED_BUDGET_SECONDS, cold)
    assert hold > budget
