"""The HTTP edge's app and its fixtures (``tests.support.web_app``) for the ``test_web*.py``
modules here."""

from __future__ import annotations

from tests.support.web_app import app, client, live, metrics, nudge, ready

__all__ = ["app", "client", "live", "metrics", "nudge", "ready"]
