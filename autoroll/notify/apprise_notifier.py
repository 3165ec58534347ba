"""``AppriseNotifier``: sends one message to every URL of ``NOTIFY_URLS`` through Apprise.

Errors: ``NotifyConfigError`` (a ValueError) at construction for a URL Apprise cannot use,
naming its line number, never its text; ``send`` never raises: a failure is False (Apprise
tells per URL only in its log, which is silenced because it prints the URLs).

The URLs never reach a log line: Apprise's own logger is silenced, and every part of a URL
that can carry a credential (``secret_parts``: the URL, its user and password, and each path
segment and query value that looks like a token) is handed to ``on_secret`` (the log
redactor, ``autoroll.instruments.logs.redact_also``), since the HTTP library under Apprise
logs request paths at LOG_LEVEL=debug (a webhook's token is often its path).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Final
from urllib.parse import parse_qsl, unquote, urlsplit

if TYPE_CHECKING:
    import apprise

#: A path segment or query value this long, or this long with a digit in it, may be a token.
_LONG: Final = 12
_MIXED: Final = 6
_DIGIT: Final = re.compile(r"[0-9]")

#: Apprise logs the URLs it loads and calls (tokens included); nothing of it reaches ours.
_APPRISE_LOG = logging.getLogger("apprise")


class NotifyConfigError(ValueError):
    """A notification URL Apprise cannot use; the message names its line, not its text."""


def _silence_apprise() -> None:
    _APPRISE_LOG.setLevel(logging.CRITICAL + 1)
    _APPRISE_LOG.propagate = False


def secret_parts(url: str) -> list[str]:
    """The parts of ``url`` that may carry a credential: itself, its user and password, and
    its dotless host, each path segment and query value that looks like a token (at least 12
    characters, or 6 with a digit): ``hooks`` or ``autoroll`` are not, and redacting them
    everywhere would blank ordinary lines."""
    found = [url]
    try:
        parts = urlsplit(url)
    except ValueError:
        return found
    found += [p for p in (parts.username, parts.password) if p]
    # A "host" with no dot is a token in many services' URLs (slack://T…/B…/…).
    host = parts.netloc.rpartition("@")[2].split(":")[0]
    pieces = [host] if host and "." not in host else []
    pieces += [unquote(p) for p in parts.path.split("/") if p]
    pieces += [v for _, v in parse_qsl(parts.query) if v]
    found += [p for p in pieces if len(p) >= _LONG or (len(p) >= _MIXED and _DIGIT.search(p))]
    return found


class AppriseNotifier:
    """Implements ``autoroll.core.ports.NotifyPort`` over one ``apprise.Apprise``."""

    def __init__(
        self, urls: Sequence[str], *, on_secret: Callable[[str], None] | None = None
    ) -> None:
        # Imported here, not at the top: most installs send no notifications, and Apprise's
        # import (its plugins, requests-oauthlib) costs the reconcile process about 3 MB.
        import apprise  # noqa: PLC0415

        _silence_apprise()
        self._kind = (apprise.NotifyType.INFO, apprise.NotifyType.WARNING)
        for url in urls:
            for part in secret_parts(url):
                if on_secret is not None:
                    on_secret(part)
        # Sequential: every send on the caller's thread (the notifier's), whose library log
        # lines the notifier drops (they carry the URLs); Apprise's default pool would log
        # them from threads of its own.
        self._apprise: apprise.Apprise = apprise.Apprise(
            asset=apprise.AppriseAsset(async_mode=False)
        )
        for number, url in enumerate(urls, 1):
            if not self._apprise.add(url):
                raise NotifyConfigError(
                    f"NOTIFY_URLS: URL {number} is not one Apprise can use (an unknown scheme,"
                    " or a part missing; see https://github.com/caronc/apprise/wiki)"
                )
        self.count = len(urls)

    def send(self, *, title: str, body: str, warning: bool) -> bool:
        kind = self._kind[warning]
        try:
            return bool(self._apprise.notify(body=body, title=title, notify_type=kind))
        except Exception:  # a plugin's failure is a failed send, never the caller's
            return False


__all__ = ["AppriseNotifier", "NotifyConfigError", "secret_parts"]
