"""The guardrails' settings: cluster-wide ones from the environment, per-workload overrides
from annotations on the workload *object* (pure).

An annotation on the object, never on the pod template: changing the template is itself a
rollout (a new ReplicaSet), and pausing a workload must not restart it. The annotations::

    autoroll.aethnet.se/paused:  "true" | "false"      stop (or resume) rolling this workload
    autoroll.aethnet.se/min-age: 90s | 10m | 1h30m | 2d | 0
                                 roll a new digest only once it has been the tag's for this long
    autoroll.aethnet.se/window:  "<days> <HH:MM>-<HH:MM> <zone>[; ...]" | always
                                 roll only inside these windows (autoroll.core.windows)
    autoroll.aethnet.se/health-window: 45s | 2m | 0
                                 a replacement stays available, no restart, this long before
                                 the next pod goes (autoroll.core.health; 0: off)
    autoroll.aethnet.se/wave:    0 | 1 | ... | 100
                                 the order a new digest reaches the workloads on its tag:
                                 wave N+1 only once every workload of the earlier waves is
                                 done on it (autoroll.core.rollorder; unset: wave 0)

An annotation replaces the cluster-wide setting for its workload (``always`` lifts a
cluster-wide window, ``0`` a cluster-wide min-age or health window; a workload cannot
unpause a global pause). A value that cannot be read, or an unknown annotation under the
prefix (a typo of a guardrail), is a ``PolicyProblem`` naming the workload and the
annotation, and that workload is not rolled until it is fixed: a guardrail misspelt must
not roll anything.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Final, TypeVar

from autoroll.core.health import DEFAULT_HEALTHY, MAX_HEALTHY, HealthWindow
from autoroll.core.windows import WindowError, Windows, parse_windows

PREFIX: Final = "autoroll.aethnet.se/"
PAUSED: Final = f"{PREFIX}paused"
MIN_AGE: Final = f"{PREFIX}min-age"
WINDOW: Final = f"{PREFIX}window"
HEALTH_WINDOW: Final = f"{PREFIX}health-window"
WAVE: Final = f"{PREFIX}wave"
KNOWN: Final = (PAUSED, MIN_AGE, WINDOW, HEALTH_WINDOW, WAVE)
#: The highest wave accepted: waves order a few groups (canary, most, the critical last),
#: not a list of hundreds.
MAX_WAVE: Final = 100
#: The ``window`` value that lifts a cluster-wide window for one workload.
ALWAYS: Final = "always"
#: The longest min-age accepted: beyond a month a tag is not "maturing", it is frozen
#: (pause the workload instead).
MAX_MIN_AGE: Final = timedelta(days=30)

_T = TypeVar("_T")
_DURATION: Final = re.compile(r"(?:([0-9]+)d)?(?:([0-9]+)h)?(?:([0-9]+)m)?(?:([0-9]+)s)?")
_TRUE: Final = frozenset({"true", "yes", "on", "1"})
_FALSE: Final = frozenset({"false", "no", "off", "0"})


@dataclass(frozen=True, slots=True)
class Guardrails:
    """The cluster-wide guardrails (``Config.guardrails``). 0 means unlimited for the budget.

    Defaults are argued in docs/adr/016-guardrails.md: a pass may delete at most 30 pods a
    minute across the cluster, and at most 10 workloads may be mid-roll at once (so a broken
    base image halts after 10 workloads, not 500); no min-age, no window, not paused; a
    replacement must stay available, no restart, for 30 s before the next pod goes.
    """

    deletions_per_period: int = 30
    period: timedelta = timedelta(seconds=60)
    in_flight: int = 10
    min_age: timedelta = timedelta(0)
    windows: Windows | None = None  # None: always
    paused: bool = False
    #: What one namespace may take of the budget's deletions and in-flight slots, so that no
    #: tenant can stall the others (docs/adr/016). None: half the cluster-wide limit (at
    #: least 1); 0: no per-namespace share.
    deletions_per_namespace: int | None = None
    in_flight_per_namespace: int | None = None
    #: the health window (autoroll.core.health): 0 turns it off
    healthy: timedelta = DEFAULT_HEALTHY

    @property
    def namespace_deletions(self) -> int:
        """One namespace's share of ``deletions_per_period`` (0: none)."""
        return _share(self.deletions_per_period, self.deletions_per_namespace)

    @property
    def namespace_in_flight(self) -> int:
        """One namespace's share of ``in_flight`` (0: none)."""
        return _share(self.in_flight, self.in_flight_per_namespace)


def _share(total: int, explicit: int | None) -> int:
    """An explicit share, else half the cluster-wide limit (at least 1); 0 when unlimited."""
    if explicit is not None:
        return explicit
    return max(1, total // 2) if total else 0


@dataclass(frozen=True, slots=True)
class PolicyProblem:
    """One annotation that cannot be read: which, its value, and what would be right."""

    annotation: str
    value: str
    message: str

    def __str__(self) -> str:
        return f"annotation {self.annotation}={self.value!r}: {self.message}"


@dataclass(frozen=True, slots=True)
class Policy:
    """One workload's effective guardrails: the cluster-wide ones with its annotations.

    ``paused`` is the workload's own pause (the global one is ``Guardrails.paused``);
    ``problems`` non-empty means the workload is not rolled at all.
    """

    paused: bool = False
    min_age: timedelta = timedelta(0)
    windows: Windows | None = None
    problems: tuple[PolicyProblem, ...] = ()
    overridden: frozenset[str] = frozenset()  # annotations that set a value
    healthy: timedelta = DEFAULT_HEALTHY
    wave: int = 0  # the roll's order across workloads on one tag (autoroll.core.rollorder)

    @property
    def is_valid(self) -> bool:
        return not self.problems

    @property
    def health_window(self) -> HealthWindow:
        """The health window as ``decide`` takes it, naming where its length came from."""
        source = HEALTH_WINDOW if HEALTH_WINDOW in self.overridden else "ROLL_HEALTHY_SECONDS"
        return HealthWindow(self.healthy, source)


def workload_policy(annotations: Mapping[str, str], *, defaults: Guardrails) -> Policy:
    """The guardrails of a workload with ``annotations`` (its object's, not its pods')."""
    read = _AnnotationReader(annotations)
    for key in sorted(annotations):
        if not key.startswith(PREFIX) or key in KNOWN:
            continue
        read.problems.append(
            PolicyProblem(
                key,
                annotations[key],
                f"unknown autoroll annotation; expected one of {', '.join(KNOWN)}",
            )
        )
    paused = read(PAUSED, parse_bool, False)
    min_age = read(MIN_AGE, parse_duration, defaults.min_age)
    windows = read(
        WINDOW,
        _parse_window,
        defaults.windows,
        errors=WindowError,
        hint=f" (or '{ALWAYS}' for no window)",
    )
    healthy = read(
        HEALTH_WINDOW, lambda raw: parse_duration(raw, limit=MAX_HEALTHY), defaults.healthy
    )
    wave = read(WAVE, parse_wave, 0)
    return Policy(
        paused,
        min_age,
        windows,
        tuple(read.problems),
        frozenset(read.overridden),
        healthy,
        wave,
    )


class _AnnotationReader:
    """Reads one workload's annotations, noting which set a value and which cannot be read."""

    def __init__(self, annotations: Mapping[str, str]) -> None:
        self._annotations = annotations
        self.problems: list[PolicyProblem] = []
        self.overridden: set[str] = set()

    def __call__(
        self,
        key: str,
        parse: Callable[[str], _T],
        default: _T,
        *,
        errors: type[ValueError] = ValueError,
        hint: str = "",
    ) -> _T:
        """Annotation ``key`` as ``parse`` reads it; ``default`` when it is absent, or when
        ``parse`` raises ``errors`` (a problem then, its message followed by ``hint``)."""
        if key not in self._annotations:
            return default
        raw = self._annotations[key]
        try:
            value = parse(raw)
        except errors as exc:
            self.problems.append(PolicyProblem(key, raw, f"{exc}{hint}"))
            return default
        self.overridden.add(key)
        return value


def _parse_window(raw: str) -> Windows | None:
    """A ``window`` annotation: ``always`` (no window), or the windows."""
    return None if raw.strip().lower() == ALWAYS else parse_windows(raw)


def parse_wave(raw: str) -> int:
    """A wave number, ``0`` to ``MAX_WAVE``."""
    text = raw.strip()
    if not text.isdigit() or int(text) > MAX_WAVE:
        raise ValueError(f"expected a whole number, 0 (the first wave) to {MAX_WAVE}")
    return int(text)


def parse_bool(raw: str) -> bool:
    lowered = raw.strip().lower()
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    raise ValueError("expected true or false")


def parse_duration(raw: str, *, limit: timedelta = MAX_MIN_AGE) -> timedelta:
    """``90s``, ``10m``, ``1h30m``, ``2d``, or a whole number of seconds (``0``), at most
    ``limit`` (a min-age's by default)."""
    text = raw.strip().lower()
    if text.isdigit():
        value = timedelta(seconds=int(text))
    else:
        match = _DURATION.fullmatch(text)
        if not text or match is None:
            raise ValueError(
                "expected a duration such as 90s, 10m, 1h30m or 2d (units d, h, m, s, in that"
                " order), or a whole number of seconds"
            )
        days, hours, minutes, seconds = (int(g) if g else 0 for g in match.groups())
        value = timedelta(days=days, hours=hours, minutes=minutes, seconds=seconds)
    if value > limit and limit == MAX_MIN_AGE:
        raise ValueError(
            f"is longer than {MAX_MIN_AGE.days} days; pause the workload instead ({PAUSED}: 'true')"
        )
    if value > limit:
        raise ValueError(f"is longer than {format_duration(limit)}, the longest accepted")
    return value


def format_duration(value: timedelta) -> str:
    """A duration the way people read it: ``1h30m``, ``45s``, ``0s``."""
    total = int(value.total_seconds())
    days, rest = divmod(total, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, seconds = divmod(rest, 60)
    parts = [f"{n}{unit}" for n, unit in ((days, "d"), (hours, "h"), (minutes, "m")) if n]
    if seconds or not parts:
        parts.append(f"{seconds}s")
    return "".join(parts)


__all__ = [
    "ALWAYS",
    "HEALTH_WINDOW",
    "KNOWN",
    "MAX_WAVE",
    "MIN_AGE",
    "PAUSED",
    "PREFIX",
    "WAVE",
    "WINDOW",
    "Guardrails",
    "Policy",
    "PolicyProblem",
    "format_duration",
    "parse_bool",
    "parse_duration",
    "parse_wave",
    "workload_policy",
]
