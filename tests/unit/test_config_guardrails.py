"""Configuration of the guardrails (``ROLL_*``) and ``PLATFORM_AWARE``: the ADR's defaults,
every variable parsed, bad values reported at once with the form they take.
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from autoroll.config import Config
from tests.support.config_env import BASE, problems

# --- the guardrails (ROLL_*) and PLATFORM_AWARE ------------------------------------------------


def test_guardrail_defaults_are_the_adrs() -> None:
    guardrails = Config.from_env(BASE).guardrails
    assert guardrails.deletions_per_period == 30
    assert guardrails.period == timedelta(seconds=60)
    assert guardrails.in_flight == 10
    assert guardrails.min_age == timedelta(0)
    assert guardrails.windows is None
    assert guardrails.paused is False
    assert Config.from_env(BASE).platform_aware is False


def test_every_guardrail_variable_parsed() -> None:
    cfg = Config.from_env(
        BASE
        | {
            "ROLL_BUDGET_DELETIONS": "0",
            "ROLL_BUDGET_PERIOD_SECONDS": "5",
            "ROLL_BUDGET_IN_FLIGHT": "3",
            "ROLL_MIN_AGE_SECONDS": "600",
            "ROLL_WINDOW": "Mon-Fri 22:00-06:00 Europe/Stockholm; Sat 00:00-24:00 UTC",
            "ROLL_PAUSED": "true",
            "PLATFORM_AWARE": "yes",
        }
    )
    g = cfg.guardrails
    assert (g.deletions_per_period, g.period, g.in_flight) == (0, timedelta(seconds=5), 3)
    assert g.min_age == timedelta(minutes=10)
    assert g.windows is not None and len(g.windows.windows) == 2
    assert g.paused is True and cfg.platform_aware is True
    view = cfg.redacted()
    assert view["ROLL_WINDOW"] == "Mon-Fri 22:00-06:00 Europe/Stockholm; Sat 00:00-24:00 UTC"
    assert view["ROLL_PAUSED"] == "true" and view["PLATFORM_AWARE"] == "true"


def test_the_health_window_is_30_seconds_unless_set() -> None:
    assert Config.from_env(BASE).guardrails.healthy == timedelta(seconds=30)
    assert Config.from_env(BASE).redacted()["ROLL_HEALTHY_SECONDS"] == "30"
    off = Config.from_env(BASE | {"ROLL_HEALTHY_SECONDS": "0"})
    assert off.guardrails.healthy == timedelta(0)
    assert off.redacted()["ROLL_HEALTHY_SECONDS"] == "0"
    assert Config.from_env(BASE | {"ROLL_HEALTHY_SECONDS": "3600"}).guardrails.healthy == (
        timedelta(hours=1)
    )


@pytest.mark.parametrize("raw", ["30s", "-1", "3601", "", " "])
def test_a_bad_health_window_names_the_variable_and_the_form(raw: str) -> None:
    found = problems(BASE | {"ROLL_HEALTHY_SECONDS": raw})
    assert set(found) == {"ROLL_HEALTHY_SECONDS"}
    if raw.strip():
        assert f"{raw!r}" in found["ROLL_HEALTHY_SECONDS"]
        assert "0 (no health window) to 3600" in found["ROLL_HEALTHY_SECONDS"]


def test_roll_window_always_means_no_window() -> None:
    cfg = Config.from_env(BASE | {"ROLL_WINDOW": "always"})
    assert cfg.guardrails.windows is None
    assert cfg.redacted()["ROLL_WINDOW"] == "always"


def test_bad_guardrail_values_are_reported_at_once_with_the_form() -> None:
    found = problems(
        BASE
        | {
            "ROLL_BUDGET_DELETIONS": "-1",
            "ROLL_BUDGET_PERIOD_SECONDS": "0",
            "ROLL_BUDGET_IN_FLIGHT": "many",
            "ROLL_MIN_AGE_SECONDS": "10m",
            "ROLL_WINDOW": "weekends",
            "ROLL_PAUSED": "maybe",
            "PLATFORM_AWARE": "2",
        }
    )
    assert set(found) == {
        "ROLL_BUDGET_DELETIONS",
        "ROLL_BUDGET_PERIOD_SECONDS",
        "ROLL_BUDGET_IN_FLIGHT",
        "ROLL_MIN_AGE_SECONDS",
        "ROLL_WINDOW",
        "ROLL_PAUSED",
        "PLATFORM_AWARE",
    }
    assert "0 (unlimited) to 100000" in found["ROLL_BUDGET_DELETIONS"]
    assert "1 to 3600" in found["ROLL_BUDGET_PERIOD_SECONDS"]
    assert "'10m'" in found["ROLL_MIN_AGE_SECONDS"] and "seconds" in found["ROLL_MIN_AGE_SECONDS"]
    assert "Europe/Stockholm" in found["ROLL_WINDOW"]  # the form, with an example
    assert "true or false" in found["ROLL_PAUSED"]


def test_an_unknown_zone_in_roll_window_names_the_zone() -> None:
    found = problems(BASE | {"ROLL_WINDOW": "Mon 01:00-02:00 Mars/Olympus"})
    assert "'Mars/Olympus' is not an IANA time zone" in found["ROLL_WINDOW"]
