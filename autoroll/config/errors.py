"""What a bad configuration reports: each problem by variable, and secrets that never print.

Kept apart from the parsers so every settings block can report into the same list.
"""

from __future__ import annotations

from dataclasses import dataclass


class Secret:
    """A string that never prints itself. Call ``reveal()`` where the value is really needed.

    Deliberately not a dataclass: ``dataclasses.asdict``/``astuple`` on ``Config`` would
    otherwise recurse into it and copy the value out.
    """

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        return self._value

    def reveal_bytes(self) -> bytes:
        return self._value.encode("utf-8")

    def __repr__(self) -> str:
        return "Secret('<redacted>')"

    def __str__(self) -> str:
        return "<redacted>"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secret) and other._value == self._value

    def __hash__(self) -> int:
        return hash(self._value)


@dataclass(frozen=True, slots=True)
class Problem:
    """One bad variable: its name, what is wrong, and what would be right."""

    variable: str
    message: str

    def __str__(self) -> str:
        return f"{self.variable}: {self.message}"


class ConfigError(Exception):
    """Every configuration problem found, reported together."""

    def __init__(self, problems: list[Problem]) -> None:
        self.problems: tuple[Problem, ...] = tuple(problems)
        super().__init__(str(self))

    def __str__(self) -> str:
        lines = "\n".join(f"  - {p}" for p in self.problems)
        return f"invalid configuration ({len(self.problems)} problem(s)):\n{lines}"
