"""LEADER_ELECTION* configuration: off by default, every timing checked, problems named."""

from __future__ import annotations

import pytest

from autoroll.config import Config
from autoroll.config.leader import LeaderElection
from tests.support.config_env import BASE, problems

ON = BASE | {"LEADER_ELECTION": "true", "LEADER_ELECTION_NAMESPACE": "autoroll"}


def test_off_by_default_so_one_replica_behaves_as_before() -> None:
    cfg = Config.from_env(BASE)
    assert cfg.leader_election is None
    assert cfg.redacted()["LEADER_ELECTION"] == "false"


def test_defaults_when_on() -> None:
    cfg = Config.from_env(ON)
    assert cfg.leader_election == LeaderElection(
        namespace="autoroll",
        lease_name="autoroll",
        identity=None,
        lease_duration_seconds=15.0,
        renew_deadline_seconds=10.0,
        retry_period_seconds=2.0,
    )


def test_every_variable_parsed() -> None:
    cfg = Config.from_env(
        ON
        | {
            "LEADER_ELECTION_LEASE": "rel-autoroll",
            "POD_NAME": "rel-autoroll-5d9c-x2x",
            "LEADER_ELECTION_LEASE_DURATION_SECONDS": "6",
            "LEADER_ELECTION_RENEW_DEADLINE_SECONDS": "4.5",
            "LEADER_ELECTION_RETRY_PERIOD_SECONDS": "0.5",
        }
    )
    assert cfg.leader_election == LeaderElection(
        "autoroll", "rel-autoroll", "rel-autoroll-5d9c-x2x", 6, 4.5, 0.5
    )
    view = cfg.redacted()
    assert view["LEADER_ELECTION_LEASE"] == "rel-autoroll"
    assert view["LEADER_ELECTION_RENEW_DEADLINE_SECONDS"] == "4.5"
    assert view["POD_NAME"] == "rel-autoroll-5d9c-x2x"


def test_namespace_is_required_when_on() -> None:
    found = problems(BASE | {"LEADER_ELECTION": "yes"})
    assert "required when LEADER_ELECTION=true" in found["LEADER_ELECTION_NAMESPACE"]


def test_renew_deadline_must_leave_a_safety_gap_below_the_lease_duration() -> None:
    found = problems(
        ON
        | {
            "LEADER_ELECTION_LEASE_DURATION_SECONDS": "10",
            "LEADER_ELECTION_RENEW_DEADLINE_SECONDS": "9.5",
        }
    )
    assert "must be at least 1s below" in found["LEADER_ELECTION_RENEW_DEADLINE_SECONDS"]


def test_retry_period_must_allow_two_attempts_before_the_deadline() -> None:
    found = problems(ON | {"LEADER_ELECTION_RETRY_PERIOD_SECONDS": "6"})
    assert "at most half" in found["LEADER_ELECTION_RETRY_PERIOD_SECONDS"]


@pytest.mark.parametrize(
    ("name", "raw", "expected"),
    [
        ("LEADER_ELECTION", "maybe", "expected true or false"),
        ("LEADER_ELECTION_NAMESPACE", "Auto_Roll", "expected a namespace name"),
        ("LEADER_ELECTION_LEASE", "Not A Name", "expected a Kubernetes object name"),
        ("LEADER_ELECTION_LEASE_DURATION_SECONDS", "nan", "0.1 to 300"),
        ("LEADER_ELECTION_RENEW_DEADLINE_SECONDS", "0", "0.1 to 300"),
        ("LEADER_ELECTION_RETRY_PERIOD_SECONDS", "2s", "expected a number of seconds"),
        ("POD_NAME", " pod", "without surrounding whitespace"),
        ("LEADER_ELECTION_LEASE", "", "set but empty"),
    ],
)
def test_bad_values_name_the_variable_and_the_form(name: str, raw: str, expected: str) -> None:
    found = problems(ON | {name: raw})
    assert expected in found[name]
    assert repr(raw) in found[name] or raw == ""


def test_timings_are_checked_even_when_election_is_off() -> None:
    found = problems(BASE | {"LEADER_ELECTION_RETRY_PERIOD_SECONDS": "two"})
    assert set(found) == {"LEADER_ELECTION_RETRY_PERIOD_SECONDS"}
