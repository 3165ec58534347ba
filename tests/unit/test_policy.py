"""Per-workload guardrails from annotations (autoroll.core.policy): one row per rule."""

from __future__ import annotations

from datetime import timedelta

import pytest

from autoroll.core.policy import (
    HEALTH_WINDOW,
    MIN_AGE,
    PAUSED,
    WAVE,
    WINDOW,
    Guardrails,
    format_duration,
    parse_duration,
    workload_policy,
)
from autoroll.core.windows import parse_windows

GLOBAL = Guardrails(min_age=timedelta(minutes=5), windows=parse_windows("Sat 01:00-05:00 UTC"))


def test_no_annotation_takes_the_cluster_wide_settings() -> None:
    policy = workload_policy({}, defaults=GLOBAL)
    assert policy.is_valid and not policy.paused
    assert policy.min_age == timedelta(minutes=5)
    assert policy.windows == GLOBAL.windows
    assert policy.overridden == frozenset()


def test_other_annotations_are_not_ours() -> None:
    policy = workload_policy(
        {"kubectl.kubernetes.io/last-applied-configuration": "{}", "aethnet.se/autoroll": "x"},
        defaults=GLOBAL,
    )
    assert policy.is_valid


@pytest.mark.parametrize(
    ("value", "paused"),
    [("true", True), ("True", True), ("yes", True), ("1", True), ("false", False), ("off", False)],
)
def test_paused(value: str, paused: bool) -> None:
    assert workload_policy({PAUSED: value}, defaults=GLOBAL).paused is paused


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("0", timedelta(0)),  # lifts a cluster-wide min-age
        ("90", timedelta(seconds=90)),
        ("90s", timedelta(seconds=90)),
        ("10m", timedelta(minutes=10)),
        ("1h30m", timedelta(hours=1, minutes=30)),
        ("2d", timedelta(days=2)),
        ("1d2h3m4s", timedelta(days=1, hours=2, minutes=3, seconds=4)),
        (" 10M ", timedelta(minutes=10)),
    ],
)
def test_min_age_replaces_the_cluster_wide_one(value: str, expected: timedelta) -> None:
    policy = workload_policy({MIN_AGE: value}, defaults=GLOBAL)
    assert policy.is_valid and policy.min_age == expected
    assert MIN_AGE in policy.overridden


def test_window_replaces_the_cluster_wide_one_and_always_lifts_it() -> None:
    own = workload_policy({WINDOW: "Mon 10:00-11:00 UTC"}, defaults=GLOBAL)
    assert own.windows == parse_windows("Mon 10:00-11:00 UTC")
    assert workload_policy({WINDOW: "always"}, defaults=GLOBAL).windows is None
    assert workload_policy({WINDOW: "Always"}, defaults=GLOBAL).windows is None


@pytest.mark.parametrize(
    ("annotations", "annotation", "says"),
    [
        ({PAUSED: "maybe"}, PAUSED, "true or false"),
        ({PAUSED: ""}, PAUSED, "true or false"),
        ({MIN_AGE: "10 minutes"}, MIN_AGE, "such as 90s"),
        ({MIN_AGE: "30m1h"}, MIN_AGE, "in that order"),
        ({MIN_AGE: ""}, MIN_AGE, "such as 90s"),
        ({MIN_AGE: "-5"}, MIN_AGE, "such as 90s"),
        ({MIN_AGE: "31d"}, MIN_AGE, "pause the workload instead"),
        ({WINDOW: "Mon 10:00-12:00"}, WINDOW, "three fields"),
        ({WINDOW: "weekends"}, WINDOW, "or 'always'"),
        ({"autoroll.aethnet.se/pause": "true"}, "autoroll.aethnet.se/pause", "unknown"),
        ({"autoroll.aethnet.se/windows": "x"}, "autoroll.aethnet.se/windows", "expected one of"),
    ],
)
def test_a_bad_annotation_is_a_problem_naming_it(
    annotations: dict[str, str], annotation: str, says: str
) -> None:
    policy = workload_policy(annotations, defaults=GLOBAL)
    assert not policy.is_valid
    [problem] = policy.problems
    assert problem.annotation == annotation
    assert says in str(problem)
    assert annotation in str(problem)


def test_every_bad_annotation_is_reported_at_once() -> None:
    policy = workload_policy({PAUSED: "x", MIN_AGE: "y", WINDOW: "z"}, defaults=GLOBAL)
    assert [p.annotation for p in policy.problems] == [PAUSED, MIN_AGE, WINDOW]


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (timedelta(0), "0s"),
        (timedelta(seconds=45), "45s"),
        (timedelta(minutes=90), "1h30m"),
        (timedelta(days=1), "1d"),
        (timedelta(days=2, hours=3, seconds=4), "2d3h4s"),
    ],
)
def test_format_duration_reads_back(value: timedelta, text: str) -> None:
    assert format_duration(value) == text
    assert parse_duration(text) == value


@pytest.mark.parametrize(
    ("annotations", "problem"),
    [
        ({PAUSED: "maybe"}, f"annotation {PAUSED}='maybe': expected true or false"),
        (
            {WAVE: "101"},
            f"annotation {WAVE}='101': expected a whole number, 0 (the first wave) to 100",
        ),
    ],
)
def test_a_bad_annotation_is_told_word_for_word(annotations: dict[str, str], problem: str) -> None:
    [found] = workload_policy(annotations, defaults=GLOBAL).problems
    assert str(found) == problem


@pytest.mark.parametrize(("value", "wave"), [("0", 0), ("100", 100), (" 7 ", 7)])
def test_waves_run_from_0_to_100(value: str, wave: int) -> None:
    policy = workload_policy({WAVE: value}, defaults=GLOBAL)
    assert policy.is_valid and policy.wave == wave


@pytest.mark.parametrize(
    ("annotation", "longest", "refusal"),
    [
        (MIN_AGE, "30d", f"is longer than 30 days; pause the workload instead ({PAUSED}: 'true')"),
        (HEALTH_WINDOW, "1h", "is longer than 1h, the longest accepted"),
    ],
)
def test_the_longest_duration_is_accepted_a_second_more_is_not(
    annotation: str, longest: str, refusal: str
) -> None:
    assert workload_policy({annotation: longest}, defaults=GLOBAL).is_valid
    over = f"{longest}1s"
    [problem] = workload_policy({annotation: over}, defaults=GLOBAL).problems
    assert str(problem) == f"annotation {annotation}={over!r}: {refusal}"


@pytest.mark.parametrize(
    ("guardrails", "deletions", "in_flight"),
    [
        (Guardrails(), 15, 5),  # half of 30 a minute and of 10 mid-roll
        (Guardrails(deletions_per_period=1, in_flight=1), 1, 1),  # at least 1
        (Guardrails(deletions_per_period=0, in_flight=0), 0, 0),  # unlimited: no share
        (Guardrails(deletions_per_namespace=4, in_flight_per_namespace=0), 4, 0),
    ],
)
def test_a_namespaces_share_is_half_the_budget_unless_set(
    guardrails: Guardrails, deletions: int, in_flight: int
) -> None:
    assert (guardrails.namespace_deletions, guardrails.namespace_in_flight) == (
        deletions,
        in_flight,
    )


def test_an_unknown_annotation_is_reported_among_known_ones() -> None:
    """Read in name order: a known annotation before it does not end the reading."""
    policy = workload_policy({MIN_AGE: "5m", "autoroll.aethnet.se/pauses": "true"}, defaults=GLOBAL)
    assert [str(p) for p in policy.problems] == [
        "annotation autoroll.aethnet.se/pauses='true': unknown autoroll annotation; expected"
        " one of autoroll.aethnet.se/paused, autoroll.aethnet.se/min-age,"
        " autoroll.aethnet.se/window, autoroll.aethnet.se/health-window,"
        " autoroll.aethnet.se/wave"
    ]


def test_no_annotation_means_not_paused() -> None:
    assert workload_policy({}, defaults=GLOBAL).paused is False
