"""The tenancy settings block: which namespaces the controller rolls, how it reaches them,
and each namespace's share of a pass's registry lookups (docs/adr/019).

    WATCH_NAMESPACES=a,b       namespaced mode: list and watch only these namespaces (the
                               chart then grants Roles in each, no ClusterRole)
    ALLOWED_NAMESPACES=a,b     cluster-wide lists, but workloads elsewhere are ignored (and
                               said so once each)
    REGISTRY_LOOKUPS_PER_NAMESPACE=200
                               the most tags asked for one namespace in a pass (0: no share)
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

from autoroll.config.errors import Problem
from autoroll.config.parsers import bounded
from autoroll.config.reader import Reader

#: A namespace name as the API accepts it (an RFC 1123 label).
_NAMESPACE: Final = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")
#: A pass's default registry lookups per namespace: far more tags than one team enrols.
DEFAULT_LOOKUPS_PER_NAMESPACE: Final = 200


@dataclass(frozen=True, slots=True)
class Tenancy:
    """Which namespaces autoroll rolls (``namespaces`` empty: all) and whether it reaches only
    them (``namespaced``: per-namespace lists and watches, no cluster-wide right)."""

    namespaces: tuple[str, ...] = ()
    namespaced: bool = False
    lookups_per_namespace: int = DEFAULT_LOOKUPS_PER_NAMESPACE

    def allows(self, namespace: str) -> bool:
        return not self.namespaces or namespace in self.namespaces


def parse_namespaces(raw: str) -> tuple[str, ...]:
    names = [part.strip() for part in raw.split(",")]
    bad = [n for n in names if not _NAMESPACE.fullmatch(n)]
    if bad or not names:
        raise ValueError(
            f"expected namespace names separated by commas (such as team-a,team-b); not a"
            f" namespace name: {', '.join(repr(b) for b in bad) or 'none given'}"
        )
    return tuple(sorted(set(names)))


def parse_lookups(raw: str) -> int:
    return bounded(raw, int, 0, 100000, "expected a whole number, 0 (no share) to 100000")


def read_tenancy(reader: Reader) -> Tenancy:
    everywhere: tuple[str, ...] = ()
    watch = reader.optional("WATCH_NAMESPACES", everywhere, parse_namespaces, default_text="(all)")
    allowed = reader.optional(
        "ALLOWED_NAMESPACES", everywhere, parse_namespaces, default_text="(all)"
    )
    if watch and allowed:
        reader.problems.append(
            Problem(
                "ALLOWED_NAMESPACES",
                "cannot be set together with WATCH_NAMESPACES (which already limits autoroll"
                " to its namespaces); set one of them",
            )
        )
    lookups = reader.optional(
        "REGISTRY_LOOKUPS_PER_NAMESPACE", DEFAULT_LOOKUPS_PER_NAMESPACE, parse_lookups
    )
    return Tenancy(watch or allowed, bool(watch), lookups)


def redacted_tenancy(tenancy: Tenancy) -> dict[str, str]:
    names = ",".join(tenancy.namespaces) or "(all)"
    key = "WATCH_NAMESPACES" if tenancy.namespaced else "ALLOWED_NAMESPACES"
    return {key: names, "REGISTRY_LOOKUPS_PER_NAMESPACE": str(tenancy.lookups_per_namespace)}


__all__ = ["Tenancy", "parse_namespaces", "read_tenancy", "redacted_tenancy"]
