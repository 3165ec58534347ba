"""The settings that name one of a few choices: log level and format, rollout method, scheme."""

from __future__ import annotations

from collections.abc import Callable
from enum import StrEnum
from typing import TypeVar


class LogFormat(StrEnum):
    TEXT = "text"
    JSON = "json"


class LogLevel(StrEnum):
    DEBUG = "debug"
    INFO = "info"
    WARNING = "warning"
    ERROR = "error"


class RolloutMethod(StrEnum):
    """How a stale pod is removed: a plain delete, or an eviction that honours PDBs."""

    DELETE = "delete"
    EVICT = "evict"


class RegistryScheme(StrEnum):
    HTTPS = "https"
    HTTP = "http"


E = TypeVar("E", bound=StrEnum)


def enum_parser(kind: type[E]) -> Callable[[str], E]:
    def parse(raw: str) -> E:
        try:
            return kind(raw.lower())
        except ValueError:
            raise ValueError(f"expected one of {'|'.join(m.value for m in kind)}") from None

    return parse
