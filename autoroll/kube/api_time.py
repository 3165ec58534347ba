"""The API's times: RFC 3339 as it writes ``creationTimestamp``, and its ``MicroTime``."""

from __future__ import annotations

from datetime import UTC, datetime


def micro_time(value: datetime) -> str:
    """A ``MicroTime`` as the API writes it: UTC, six fractional digits, ``Z``."""
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_time(raw: object) -> datetime | None:
    """An RFC 3339 time as the API writes it (naive read as UTC), or None."""
    if not isinstance(raw, str) or not raw:
        return None
    try:
        parsed = datetime.fromisoformat(raw)
    except ValueError:
        return None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)


__all__ = [
    "micro_time",
    "parse_time",
]
