"""The settings of telling people: notifications, and where the quarantine is kept.

NOTIFY_URLS / NOTIFY_URLS_FILE   Apprise URLs (Slack, Teams, Matrix, Discord, ntfy,
                                 mailto://, json://...), one per line (``#`` starts a
                                 comment): a secret, best kept in the chart's Secret and
                                 read from its mounted file; unset: no notifications
NOTIFY_EVENTS=started,done,halted,quarantined
                                 which happenings are sent (docs: autoroll.core.happenings)
NOTIFY_THROTTLE_SECONDS=60       at most one message per happening kind this often; what
                                 comes meanwhile is sent together at the interval's end
QUARANTINE_CONFIGMAP, QUARANTINE_NAMESPACE
                                 the ConfigMap that keeps the quarantine (docs/adr/026);
                                 unset: kept in memory, lost on a restart (said at start)
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Final

from autoroll.config.errors import Problem, Secret
from autoroll.config.parsers import bounded
from autoroll.config.reader import Reader
from autoroll.core.happenings import HappeningKind

ALL_HAPPENINGS: Final = frozenset(HappeningKind)
DEFAULT_THROTTLE_SECONDS: Final = 60
#: An object name and a namespace as the API accepts them.
_NAME: Final = re.compile(r"[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?")
_NAMESPACE: Final = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")
#: What an Apprise URL starts with (the library checks the rest when it is built).
_URL: Final = re.compile(r"[a-zA-Z][a-zA-Z0-9+.-]*://\S+")


@dataclass(frozen=True, slots=True)
class Notifications:
    """Where and what to notify; ``urls`` None: nothing is sent."""

    urls: Secret | None = None
    happenings: frozenset[HappeningKind] = field(default=ALL_HAPPENINGS)
    throttle_seconds: int = DEFAULT_THROTTLE_SECONDS

    @property
    def enabled(self) -> bool:
        return self.urls is not None

    def url_lines(self) -> list[str]:
        """The URLs, one per non-comment line (reveals the secret: hand it to Apprise only)."""
        if self.urls is None:
            return []
        return url_lines(self.urls.reveal())


@dataclass(frozen=True, slots=True)
class QuarantineRecord:
    """The ConfigMap that keeps the quarantine; ``configmap`` None: memory only."""

    configmap: str | None = None
    namespace: str = ""


def url_lines(text: str) -> list[str]:
    return [
        line.strip()
        for line in text.splitlines()
        if line.strip() and not line.strip().startswith("#")
    ]


def check_urls(raw: str) -> None:
    """Every line an Apprise URL; the error names the line, never its text (a secret)."""
    lines = url_lines(raw)
    if not lines:
        raise ValueError("holds no URL (one Apprise URL per line, such as mailto://... )")
    for number, line in enumerate(lines, 1):
        if not _URL.fullmatch(line):
            raise ValueError(
                f"URL {number} is not an Apprise URL (scheme://..., one per line; see"
                " https://github.com/caronc/apprise/wiki)"
            )


def parse_happenings(raw: str) -> frozenset[HappeningKind]:
    names = [part.strip().lower() for part in raw.split(",") if part.strip()]
    known = ", ".join(k.value for k in HappeningKind)
    try:
        found = frozenset(HappeningKind(name) for name in names)
    except ValueError:
        raise ValueError(f"expected some of {known}, separated by commas") from None
    if not found:
        raise ValueError(f"expected some of {known}, separated by commas")
    return found


def parse_throttle(raw: str) -> int:
    return bounded(raw, int, 0, 3600, "expected a whole number of seconds, 0 (no throttle) to 3600")


def parse_name(raw: str) -> str:
    if not _NAME.fullmatch(raw):
        raise ValueError("expected a ConfigMap name (lowercase letters, digits, '-' and '.')")
    return raw


def parse_namespace(raw: str) -> str:
    if not _NAMESPACE.fullmatch(raw):
        raise ValueError("expected a namespace name (a DNS-1123 label)")
    return raw


def read_notifications(reader: Reader) -> Notifications:
    urls = reader.optional_secret("NOTIFY_URLS", check_urls)
    happenings = reader.optional(
        "NOTIFY_EVENTS", ALL_HAPPENINGS, parse_happenings, default_text="all four"
    )
    throttle = reader.optional("NOTIFY_THROTTLE_SECONDS", DEFAULT_THROTTLE_SECONDS, parse_throttle)
    return Notifications(urls, happenings, throttle)


def read_quarantine(reader: Reader) -> QuarantineRecord:
    name = reader.optional("QUARANTINE_CONFIGMAP", None, parse_name, default_text="(memory)")
    namespace = reader.optional("QUARANTINE_NAMESPACE", "", parse_namespace)
    if name is not None and not namespace:
        reader.problems.append(
            Problem(
                "QUARANTINE_NAMESPACE",
                "is required with QUARANTINE_CONFIGMAP: the namespace the ConfigMap is in (the"
                " controller's own; the chart sets both)",
            )
        )
    return QuarantineRecord(name, namespace)


def redacted_announce(notifications: Notifications, record: QuarantineRecord) -> dict[str, str]:
    return {
        "NOTIFY_URLS": f"<{len(notifications.url_lines())} redacted>"
        if notifications.enabled
        else "",
        "NOTIFY_EVENTS": ",".join(sorted(k.value for k in notifications.happenings)),
        "NOTIFY_THROTTLE_SECONDS": str(notifications.throttle_seconds),
        "QUARANTINE_CONFIGMAP": record.configmap or "",
        "QUARANTINE_NAMESPACE": record.namespace,
    }


__all__ = [
    "Notifications",
    "QuarantineRecord",
    "check_urls",
    "read_notifications",
    "read_quarantine",
    "redacted_announce",
    "url_lines",
]
