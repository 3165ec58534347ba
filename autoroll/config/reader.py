"""Reading variables one by one while collecting every problem instead of stopping at one.

Unset means "use the default"; a variable that is set but empty is an error, because an
empty ``DRY_RUN`` silently meaning ``false`` is exactly the surprise we want to avoid.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TypeVar

from autoroll.config.errors import Problem, Secret

T = TypeVar("T")


class Reader:
    """Collects problems instead of stopping at the first one."""

    def __init__(self, env: Mapping[str, str]) -> None:
        self.env = env
        self.problems: list[Problem] = []

    def required(self, name: str, parse: Callable[[str], T]) -> T | None:
        raw = self.env.get(name)
        if raw is None or raw == "":
            self.problems.append(Problem(name, "is required but not set"))
            return None
        try:
            return parse(raw)
        except ValueError as exc:
            self.problems.append(Problem(name, f"{raw!r} is invalid: {exc}"))
            return None

    def required_secret(self, name: str, check: Callable[[str], None]) -> Secret | None:
        raw = self.env.get(name)
        if raw is None or raw == "":
            self.problems.append(Problem(name, "is required but not set"))
            return None
        try:
            check(raw)
        except ValueError as exc:
            # The value of a secret is never echoed, not even a bad one.
            self.problems.append(Problem(name, f"(value not shown) is invalid: {exc}"))
            return None
        return Secret(raw)

    def optional(
        self, name: str, default: T, parse: Callable[[str], T], *, default_text: str = ""
    ) -> T:
        """``name`` parsed, or ``default`` when unset (``default_text`` says what that
        default is, when ``str(default)`` would not)."""
        raw = self.env.get(name)
        if raw is None:
            return default
        if raw == "":
            text = default_text or str(default)
            self.problems.append(
                Problem(name, f"is set but empty; unset it for the default {text}")
            )
            return default
        try:
            return parse(raw)
        except ValueError as exc:
            self.problems.append(Problem(name, f"{raw!r} is invalid: {exc}"))
            return default
