"""The ``LEADER_ELECTION*`` settings block: Lease-based leader election between replicas."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

from autoroll.config.errors import Problem
from autoroll.config.parsers import bounded, parse_bool, parse_nonblank
from autoroll.config.reader import Reader

#: A Kubernetes object name (DNS-1123 subdomain) and a namespace (DNS-1123 label).
_DNS_LABEL: Final = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_DNS_SUBDOMAIN: Final = re.compile(rf"{_DNS_LABEL.pattern}(\.{_DNS_LABEL.pattern})*")
#: Least gap, in seconds, between the renew deadline and the lease duration: the time a
#: deletion already past its leadership check may still take before another replica could
#: hold the lease (see docs/adr/004-leader-election-and-webhook-handoff.md).
MIN_LEASE_SAFETY_GAP_SECONDS: Final = 1.0


@dataclass(frozen=True, slots=True)
class LeaderElection:
    """Lease-based leader election between replicas (``LEADER_ELECTION=true``).

    Timings follow client-go's defaults: another replica may take the lease only after it
    has seen it unchanged for ``lease_duration_seconds``; the leader stops acting once
    ``renew_deadline_seconds`` have passed since its last successful renew began; it tries
    every ``retry_period_seconds``. ``renew deadline < lease duration`` is the safety margin.
    """

    namespace: str  # the controller's own namespace; the chart's Role is there
    lease_name: str  # must match the Role's resourceNames
    identity: str | None = None  # POD_NAME; None means hostname-pid, chosen at startup
    lease_duration_seconds: float = 15.0  # leadership moves within this after a crash
    renew_deadline_seconds: float = 10.0  # the leader stops deleting this long after a renew
    retry_period_seconds: float = 2.0  # renew/acquire attempts; also the API load per replica


def read_leader_election(reader: Reader) -> LeaderElection | None:
    """The ``LEADER_ELECTION*`` variables; None when election is off (the default).

    The timing variables are read (and checked) even when election is off, so a typo is
    reported instead of silently ignored.
    """
    enabled = reader.optional("LEADER_ELECTION", False, parse_bool)
    duration = reader.optional("LEADER_ELECTION_LEASE_DURATION_SECONDS", 15.0, parse_seconds)
    deadline = reader.optional("LEADER_ELECTION_RENEW_DEADLINE_SECONDS", 10.0, parse_seconds)
    retry = reader.optional("LEADER_ELECTION_RETRY_PERIOD_SECONDS", 2.0, parse_seconds)
    identity = reader.optional("POD_NAME", None, parse_nonblank)
    lease = reader.optional("LEADER_ELECTION_LEASE", "autoroll", parse_object_name)
    namespace: str | None = reader.optional("LEADER_ELECTION_NAMESPACE", None, parse_namespace)
    if duration - deadline < MIN_LEASE_SAFETY_GAP_SECONDS:
        reader.problems.append(
            Problem(
                "LEADER_ELECTION_RENEW_DEADLINE_SECONDS",
                f"{deadline:g} must be at least {MIN_LEASE_SAFETY_GAP_SECONDS:g}s below"
                f" LEADER_ELECTION_LEASE_DURATION_SECONDS ({duration:g}): a leader must stop"
                " deleting before another replica can take the lease",
            )
        )
    if retry * 2 > deadline:
        reader.problems.append(
            Problem(
                "LEADER_ELECTION_RETRY_PERIOD_SECONDS",
                f"{retry:g} must be at most half of LEADER_ELECTION_RENEW_DEADLINE_SECONDS"
                f" ({deadline:g}), so a leader gets at least two renew attempts",
            )
        )
    if not enabled:
        return None
    if namespace is None:
        if "LEADER_ELECTION_NAMESPACE" in reader.env:
            return None  # set but invalid: already reported
        reader.problems.append(
            Problem(
                "LEADER_ELECTION_NAMESPACE",
                "is required when LEADER_ELECTION=true; set it to the controller's namespace"
                " (the chart sets it from the release namespace)",
            )
        )
        return None
    return LeaderElection(
        namespace=namespace,
        lease_name=lease,
        identity=identity,
        lease_duration_seconds=duration,
        renew_deadline_seconds=deadline,
        retry_period_seconds=retry,
    )


def redacted_election(election: LeaderElection | None) -> dict[str, str]:
    if election is None:
        return {"LEADER_ELECTION": "false"}
    return {
        "LEADER_ELECTION": "true",
        "LEADER_ELECTION_NAMESPACE": election.namespace,
        "LEADER_ELECTION_LEASE": election.lease_name,
        "LEADER_ELECTION_LEASE_DURATION_SECONDS": f"{election.lease_duration_seconds:g}",
        "LEADER_ELECTION_RENEW_DEADLINE_SECONDS": f"{election.renew_deadline_seconds:g}",
        "LEADER_ELECTION_RETRY_PERIOD_SECONDS": f"{election.retry_period_seconds:g}",
        "POD_NAME": election.identity or "<unset: hostname-pid>",
    }


# --------------------------------------------------------------------------------------------
# Parsers: each returns the value or raises ValueError with the expected form.


def parse_seconds(raw: str) -> float:
    return bounded(raw, float, 0.1, 300, "expected a number of seconds, 0.1 to 300")


def parse_object_name(raw: str) -> str:
    if len(raw) > 253 or not _DNS_SUBDOMAIN.fullmatch(raw):
        raise ValueError(
            "expected a Kubernetes object name: lowercase letters, digits, '-' and '.',"
            " at most 253 characters"
        )
    return raw


def parse_namespace(raw: str) -> str:
    if len(raw) > 63 or not _DNS_LABEL.fullmatch(raw):
        raise ValueError(
            "expected a namespace name: lowercase letters, digits and '-', at most 63 characters"
        )
    return raw
