"""The notification adapter: the only package that imports Apprise.

    apprise_notifier.py  AppriseNotifier (NotifyPort): one message to every configured URL

Apprise (https://github.com/caronc/apprise) speaks Slack, Teams, Matrix, Discord, ntfy,
Gotify, email (``mailto://``), generic JSON webhooks (``json://``) and many more, each from
one URL; the URLs carry their credentials, so they are a secret (``NOTIFY_URLS``), never
logged: Apprise's own logger, which prints them, is silenced here.
"""

from __future__ import annotations

from autoroll.notify.apprise_notifier import AppriseNotifier, NotifyConfigError

__all__ = ["AppriseNotifier", "NotifyConfigError"]
