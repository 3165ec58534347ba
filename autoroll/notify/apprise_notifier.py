"""``AppriseNotifier``: sends one message to every URL of ``NOTIFY_URLS`` through Apprise.

Errors: ``NotifyConfigError`` (a ValueError) at construction for a URL Apprise cannot use,
naming its line number, never its text; ``send`` never raises: a failure is False (Apprise
tells per URL only in its log, which is silenced because it prints the URLs).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import apprise

#: Apprise logs the URLs it loads and calls (tokens included); nothing of it reaches ours.
_APPRISE_LOG = logging.getLogger("apprise")


class NotifyConfigError(ValueError):
    """A notification URL Apprise cannot use; the message names its line, not its text."""


def _silence_apprise() -> None:
    _APPRISE_LOG.setLevel(logging.CRITICAL + 1)
    _APPRISE_LOG.propagate = False


class AppriseNotifier:
    """Implements ``autoroll.core.ports.NotifyPort`` over one ``apprise.Apprise``."""

    def __init__(self, urls: Sequence[str]) -> None:
        _silence_apprise()
        self._apprise = apprise.Apprise()
        for number, url in enumerate(urls, 1):
            if not self._apprise.add(url):
                raise NotifyConfigError(
                    f"NOTIFY_URLS: URL {number} is not one Apprise can use (an unknown scheme,"
                    " or a part missing; see https://github.com/caronc/apprise/wiki)"
                )
        self.count = len(urls)

    def send(self, *, title: str, body: str, warning: bool) -> bool:
        kind = apprise.NotifyType.WARNING if warning else apprise.NotifyType.INFO
        try:
            return bool(self._apprise.notify(body=body, title=title, notify_type=kind))
        except Exception:  # a plugin's failure is a failed send, never the caller's
            return False


__all__ = ["AppriseNotifier", "NotifyConfigError"]
