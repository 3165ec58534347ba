"""The watched cache's fixtures (``tests.support.watch_cache_fakes``) for the modules here."""

from __future__ import annotations

from tests.support.watch_cache_fakes import cache, metrics

__all__ = ["cache", "metrics"]
