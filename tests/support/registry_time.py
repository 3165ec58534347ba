"""A registry that takes its time: each answer moves the fake clock of
``tests.support.registry_fakes``, for the tests of the pass's registry budget."""

from __future__ import annotations

from typing import Any

import requests

from tests.support.registry_fakes import Clock, Handler


def taking(seconds: float, clock: Clock, handler: Handler) -> Handler:
    """``handler``, each of whose answers costs ``seconds`` of the registry's time on
    ``clock``."""

    def slow(method: str, url: str, kwargs: dict[str, Any]) -> requests.Response:
        clock.now += seconds
        return handler(method, url, kwargs)

    return slow
