"""The ``ROLL_*`` settings block: the cluster-wide budget, min-age, window, pause and health
window.

What they mean and why the defaults are what they are: ``autoroll.core.policy`` and
docs/adr/016-guardrails.md; this module only reads and redacts them.
"""

from __future__ import annotations

from datetime import timedelta

from autoroll.config.parsers import bounded, parse_bool
from autoroll.config.reader import Reader
from autoroll.core.health import MAX_HEALTHY
from autoroll.core.policy import ALWAYS, MAX_MIN_AGE, Guardrails, format_duration
from autoroll.core.windows import Windows, parse_windows


def read_guardrails(reader: Reader) -> Guardrails:
    """The ``ROLL_*`` variables: the cluster-wide budget, min-age, window, pause and health
    window."""
    default = Guardrails()
    deletions = reader.optional("ROLL_BUDGET_DELETIONS", default.deletions_per_period, parse_count)
    period = reader.optional(
        "ROLL_BUDGET_PERIOD_SECONDS", int(default.period.total_seconds()), parse_period
    )
    in_flight = reader.optional("ROLL_BUDGET_IN_FLIGHT", default.in_flight, parse_count)
    min_age = reader.optional(
        "ROLL_MIN_AGE_SECONDS", int(default.min_age.total_seconds()), parse_min_age
    )
    windows = reader.optional("ROLL_WINDOW", default.windows, parse_window)
    paused = reader.optional("ROLL_PAUSED", default.paused, parse_bool)
    half = "(half the cluster-wide limit, at least 1)"
    per_namespace = reader.optional(
        "ROLL_BUDGET_DELETIONS_PER_NAMESPACE", None, parse_count, default_text=half
    )
    in_flight_namespace = reader.optional(
        "ROLL_BUDGET_IN_FLIGHT_PER_NAMESPACE", None, parse_count, default_text=half
    )
    healthy = reader.optional(
        "ROLL_HEALTHY_SECONDS", int(default.healthy.total_seconds()), parse_healthy
    )
    return Guardrails(
        deletions_per_period=deletions,
        period=timedelta(seconds=period),
        in_flight=in_flight,
        min_age=timedelta(seconds=min_age),
        windows=windows,
        paused=paused,
        deletions_per_namespace=per_namespace,
        in_flight_per_namespace=in_flight_namespace,
        healthy=timedelta(seconds=healthy),
    )


def redacted_guardrails(guardrails: Guardrails) -> dict[str, str]:
    return {
        "ROLL_BUDGET_DELETIONS": str(guardrails.deletions_per_period),
        "ROLL_BUDGET_PERIOD_SECONDS": str(int(guardrails.period.total_seconds())),
        "ROLL_BUDGET_IN_FLIGHT": str(guardrails.in_flight),
        "ROLL_BUDGET_DELETIONS_PER_NAMESPACE": str(guardrails.namespace_deletions),
        "ROLL_BUDGET_IN_FLIGHT_PER_NAMESPACE": str(guardrails.namespace_in_flight),
        "ROLL_MIN_AGE_SECONDS": str(int(guardrails.min_age.total_seconds())),
        "ROLL_WINDOW": str(guardrails.windows) if guardrails.windows else ALWAYS,
        "ROLL_PAUSED": str(guardrails.paused).lower(),
        "ROLL_HEALTHY_SECONDS": str(int(guardrails.healthy.total_seconds())),
    }


def parse_count(raw: str) -> int:
    return bounded(raw, int, 0, 100000, "expected a whole number, 0 (unlimited) to 100000")


def parse_period(raw: str) -> int:
    return bounded(raw, int, 1, 3600, "expected a whole number of seconds, 1 to 3600")


def parse_min_age(raw: str) -> int:
    limit = int(MAX_MIN_AGE.total_seconds())
    form = f"expected a whole number of seconds, 0 to {limit} ({format_duration(MAX_MIN_AGE)})"
    return bounded(raw, int, 0, limit, form)


def parse_window(raw: str) -> Windows | None:
    if raw.strip().lower() == ALWAYS:
        return None
    return parse_windows(raw)  # WindowError is a ValueError naming the part and the form


def parse_healthy(raw: str) -> int:
    limit = int(MAX_HEALTHY.total_seconds())
    form = f"expected a whole number of seconds, 0 (no health window) to {limit}"
    return bounded(raw, int, 0, limit, form)
