"""jobhash.names: fullname, name budgeting and limits, as _helpers.tpl and _jobs.tpl do."""

from __future__ import annotations

import pytest

from jobhash.errors import RenderError, UnmirrorableError
from jobhash.gojson import GoValue
from jobhash.names import (
    fullname,
    job_group_name,
    name_problem,
    trunc,
    validate_release_name,
)

HASH = "0123456789abcdef" * 4


@pytest.mark.parametrize(
    ("values", "release", "expected"),
    [
        ({}, "demo", "demo-autoroll"),
        ({}, "my-autoroll", "my-autoroll"),  # the release already contains the chart name
        ({"nameOverride": "x"}, "demo", "demo-x"),
        ({"fullnameOverride": "custom"}, "demo", "custom"),
        ({"fullnameOverride": "a" * 62 + "-b"}, "demo", "a" * 62),  # trunc 63, trim one "-"
        # The cut lands on "--": trimSuffix removes one of the two dashes, not both.
        ({"fullnameOverride": "a" * 61 + "--b"}, "demo", "a" * 61 + "-"),
        ({"fullnameOverride": ""}, "demo", "demo-autoroll"),
        # A release that contains the chart name is the fullname, cut to 63 bytes like the
        # template does (Helm refuses such a release, but the helper does not know that).
        ({}, "r" * 56 + "autoroll", "r" * 56 + "autorol"),
        # <release>-<nameOverride> over 63 bytes (a 53-byte release, the longest Helm
        # allows, and a 20-byte nameOverride): cut to 63, then one trailing "-" trimmed.
        ({"nameOverride": "n" * 20}, "r" * 53, "r" * 53 + "-" + "n" * 9),
        ({"nameOverride": "n" * 8 + "-" + "m" * 11}, "r" * 53, "r" * 53 + "-" + "n" * 8),
    ],
)
def test_fullname(values: dict[str, GoValue], release: str, expected: str) -> None:
    assert fullname(values, release, "autoroll") == expected


def name(**overrides: object) -> str:
    args: dict[str, object] = {
        "fullname": "demo-autoroll",
        "group": "db",
        "job": "migrate",
        "hash_hex": HASH,
        "hash_suffix": True,
        "kind": "Job",
    }
    args.update(overrides)
    return job_group_name(**args)  # type: ignore[arg-type]


def test_name_format_and_opt_out() -> None:
    assert name() == "demo-autoroll-db-migrate-01234567"
    assert name(hash_suffix=False) == "demo-autoroll-db-migrate"
    assert name(group="reporting-exports") == "demo-autoroll-reportin-migrate-01234567"


def test_only_the_fullname_is_shortened_to_the_limit() -> None:
    long = "a-very-long-release-name-for-testing-name-budgets-x1-autoroll"
    job = name(fullname=long)
    assert len(job) == 63
    assert job.endswith("-db-migrate-01234567")
    cron = name(fullname=long, kind="CronJob")
    assert len(cron) <= 52
    assert cron.endswith("-db-migrate-01234567")


def test_a_dash_left_by_shortening_is_trimmed() -> None:
    # budget 63 - len("-db-migrate-01234567") = 43; the 43rd character is a dash
    full = "x" * 42 + "-yyyy"
    assert name(fullname=full) == "x" * 42 + "-db-migrate-01234567"


#: A job key that leaves the fullname 4 bytes: 63 - len("-db-<job>-01234567") == 4.
FOUR_BYTE_BUDGET_JOB = "a-long-job-key-that-leaves-four-bytes-of-budge"


def test_a_cut_on_a_double_dash_loses_one_dash_only() -> None:
    # "my--release-autoroll" cut to 4 bytes is "my--"; Helm's trimSuffix "-" leaves "my-"
    # (an rstrip would leave "my"). tests/golden has the same case rendered by helm.
    job = name(fullname="my--release-autoroll", job=FOUR_BYTE_BUDGET_JOB)
    assert job == f"my--db-{FOUR_BYTE_BUDGET_JOB}-01234567"
    assert len(job) == 62  # the 4-byte budget less the one trimmed dash, then the suffix


def test_one_byte_of_budget_is_enough_for_the_release() -> None:
    # "-db-" + 49 + "-01234567" is 62 bytes: the release keeps 1 byte; 0 would fail (below).
    job = "j" * 49
    assert name(job=job) == f"d-db-{job}-01234567"
    with pytest.raises(RenderError):
        name(job=job + "j")


@pytest.mark.parametrize(
    ("values", "message", "fix"),
    [
        (
            {"fullnameOverride": 5},
            "fullnameOverride must be a string for jobhash",
            "quote fullnameOverride",
        ),
        ({"nameOverride": True}, "nameOverride must be a string for jobhash", "quote it"),
    ],
)
def test_an_override_that_is_not_a_string_is_refused_with_its_fix(
    values: dict[str, GoValue], message: str, fix: str
) -> None:
    with pytest.raises(UnmirrorableError) as caught:
        fullname(values, "demo", "autoroll")
    assert caught.value.message == message
    assert caught.value.fix == fix


def test_no_room_for_the_release_fails_with_the_charts_message() -> None:
    with pytest.raises(RenderError) as caught:
        name(job="j" * 45, kind="CronJob")
    assert "the name suffix" in caught.value.message
    assert "within the 52-character CronJob name limit; use a shorter job key" in (
        caught.value.message
    )


def test_trunc_cuts_bytes_and_refuses_to_split_a_character() -> None:
    assert trunc(3, "abcdef") == "abc"
    assert trunc(2, "é") == "é"
    with pytest.raises(UnmirrorableError):
        trunc(1, "é")


def test_release_name_validation_matches_helm() -> None:
    assert validate_release_name("demo") is None
    assert validate_release_name("my.rel") is None
    assert validate_release_name("Bad") is not None
    assert validate_release_name("a" * 54) is not None
    assert validate_release_name("") == "no name provided"


def test_name_problem_for_check() -> None:
    assert name_problem("demo-db-m-01234567", "Job") is None
    assert "not a DNS-1123 label" in str(name_problem("my.rel-db-m", "Job"))
    assert "over the 52-character CronJob limit" in str(name_problem("a" * 53, "CronJob"))


HELMS_INVALID_NAME = (
    "invalid release name, must match regex "
    r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
    " and the length must not be longer than 53"
)


@pytest.mark.parametrize(
    ("release", "problem"),
    [
        ("a" * 53, None),  # the longest Helm allows
        ("a" * 54, HELMS_INVALID_NAME),
        ("Bad", HELMS_INVALID_NAME),
        ("under_score", HELMS_INVALID_NAME),
    ],
)
def test_release_names_at_the_edges_get_helms_own_words(release: str, problem: str | None) -> None:
    """Helm's ``errInvalidName`` text, so the preview refuses with what ``helm install`` says."""
    assert validate_release_name(release) == problem


@pytest.mark.parametrize(("kind", "limit"), [("Job", 63), ("CronJob", 52)])
def test_a_name_of_exactly_the_limit_is_accepted_one_more_is_not(kind: str, limit: int) -> None:
    assert name_problem("a" * limit, kind) is None
    assert name_problem("a" * (limit + 1), kind) == (
        f"is {limit + 1} characters, over the {limit}-character {kind} limit"
    )


def test_a_name_that_is_no_label_says_what_a_label_is() -> None:
    assert name_problem("-lead", "Job") == (
        "is not a DNS-1123 label (lowercase letters, digits and '-', starting and ending "
        "with a letter or digit)"
    )


def test_a_cut_inside_a_character_is_refused_with_the_fields_to_change() -> None:
    with pytest.raises(UnmirrorableError) as caught:
        trunc(1, "é")
    assert caught.value.message == (
        "truncating 'é' to 1 bytes splits a character; Helm would write invalid UTF-8 into the name"
    )
    assert caught.value.fix == "use ASCII for the release name, nameOverride and fullnameOverride"


def test_no_room_for_the_release_says_which_key_to_shorten() -> None:
    with pytest.raises(RenderError) as caught:
        name(job="j" * 45, kind="CronJob")
    assert caught.value.fix == (
        "use a shorter job key (or group key); only the release part is shortened"
    )
