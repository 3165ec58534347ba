"""Maintenance windows: when a workload may be rolled, as days and wall-clock times in an
IANA time zone (pure; the zone rules come from ``zoneinfo``).

The text form, used by the ``autoroll.aethnet.se/window`` annotation and ``ROLL_WINDOW``::

    windows  = window *( ";" window )
    window   = days " " HH:MM "-" HH:MM " " zone
    days     = "*" | day-or-range *( "," day-or-range )     day = Mon Tue Wed Thu Fri Sat Sun

    Mon-Fri 22:00-06:00 Europe/Stockholm
    Sat,Sun 00:00-24:00 UTC; Wed 12:00-13:00 America/New_York

A window opens at its start time on each listed day and closes at its end time, the same day
or, when the end is not after the start, the next day (``Fri 22:00-02:00`` runs into
Saturday). ``24:00`` ends a window at midnight. Times are wall-clock times in the zone, so a
window keeps its local hours across daylight-saving changes (on the change day it is an hour
shorter or longer; a start time the clocks skip opens when the clocks reach a later time).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from typing import Final
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

DAYS: Final = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
#: The form every error message repeats, so the fix is in the message.
FORM: Final = (
    "expected '<days> <HH:MM>-<HH:MM> <IANA zone>' such as 'Mon-Fri 22:00-06:00 Europe/Stockholm'"
    " (days: Mon..Sun, ranges like Mon-Fri, lists like Sat,Sun, or *; several windows"
    " separated by ';')"
)
_TIME: Final = re.compile(r"([0-9]{2}):([0-9]{2})")
_MINUTES_PER_DAY: Final = 24 * 60
#: How far ahead the next opening is searched: every window opens at least once a week.
_SEARCH_DAYS: Final = 8


class WindowError(ValueError):
    """A window text that cannot be read; the message names the part and the form."""


@dataclass(frozen=True, slots=True)
class Window:
    """One window: the weekdays it opens on (0 = Monday), start and end in minutes of the
    day (end 1440 is midnight), and its zone."""

    days: frozenset[int]
    start: int
    end: int
    zone: ZoneInfo

    @property
    def crosses_midnight(self) -> bool:
        return self.end <= self.start

    def is_open(self, now: datetime) -> bool:
        local = now.astimezone(self.zone)
        minute = local.hour * 60 + local.minute + local.second / 60 + local.microsecond / 6e7
        today = local.weekday()
        if not self.crosses_midnight:
            return today in self.days and self.start <= minute < self.end
        yesterday = (today - 1) % 7
        return (today in self.days and minute >= self.start) or (
            yesterday in self.days and minute < self.end
        )

    def next_opening(self, now: datetime) -> datetime:
        """The first start of this window after ``now`` (UTC)."""
        local_day = now.astimezone(self.zone).date()
        for offset in range(_SEARCH_DAYS):
            day = local_day + timedelta(days=offset)
            if day.weekday() not in self.days:
                continue
            opens = _wall_time(day, self.start, self.zone)
            if opens > now:
                return opens
        raise AssertionError("a window with days opens within a week")  # pragma: no cover


@dataclass(frozen=True, slots=True)
class Windows:
    """One or more windows; open when any is. ``text`` is what was written, for messages."""

    text: str
    windows: tuple[Window, ...]

    def is_open(self, now: datetime) -> bool:
        _check_aware(now)
        return any(w.is_open(now) for w in self.windows)

    def next_opening(self, now: datetime) -> datetime:
        """When the next window opens after ``now`` (UTC); meant for when none is open."""
        _check_aware(now)
        return min(w.next_opening(now) for w in self.windows)

    def opening_text(self, now: datetime) -> str:
        """The next opening as the window's own zone says it: ``Mon 2026-12-07 22:00
        Europe/Stockholm``."""
        _check_aware(now)
        opens, window = min(((w.next_opening(now), w) for w in self.windows), key=_first)
        local = opens.astimezone(window.zone)
        return f"{local:%a %Y-%m-%d %H:%M} {window.zone.key}"

    def __str__(self) -> str:
        return self.text


def _first(pair: tuple[datetime, Window]) -> datetime:
    return pair[0]


def parse_windows(text: str) -> Windows:
    """Read a windows text (module docstring); ``WindowError`` says what is wrong."""
    parts = [part.strip() for part in text.split(";")]
    if not text.strip() or any(not part for part in parts):
        raise WindowError(f"{text!r} has an empty window; {FORM}")
    return Windows(text.strip(), tuple(_parse_window(part) for part in parts))


def _parse_window(text: str) -> Window:
    fields = text.split()
    if len(fields) != 3:
        raise WindowError(f"{text!r} is not three fields (days, times, zone); {FORM}")
    days_text, times_text, zone_text = fields
    start_text, dash, end_text = times_text.partition("-")
    if not dash:
        raise WindowError(f"{times_text!r} is not a time range <HH:MM>-<HH:MM>; {FORM}")
    start = _minutes(start_text, allow_midnight_end=False)
    end = _minutes(end_text, allow_midnight_end=True)
    if start == end:
        raise WindowError(
            f"{times_text!r} opens and closes at the same time; use 00:00-24:00 for a whole day"
        )
    return Window(_days(days_text), start, end, _zone(zone_text))


def _minutes(text: str, *, allow_midnight_end: bool) -> int:
    match = _TIME.fullmatch(text)
    if match is None:
        raise WindowError(f"{text!r} is not a time HH:MM (24-hour, two digits each); {FORM}")
    hours, minutes = int(match.group(1)), int(match.group(2))
    if allow_midnight_end and (hours, minutes) == (24, 0):
        return _MINUTES_PER_DAY
    if hours > 23 or minutes > 59:
        upper = "24:00 (as an end)" if allow_midnight_end else "23:59"
        raise WindowError(f"{text!r} is not a time of day: 00:00 to {upper}")
    return hours * 60 + minutes


def _days(text: str) -> frozenset[int]:
    if text == "*":
        return frozenset(range(7))
    days: set[int] = set()
    for item in text.lower().split(","):
        first, dash, last = item.partition("-")
        if first not in DAYS or (dash and last not in DAYS):
            raise WindowError(
                f"{text!r} is not a list of days: use Mon, Tue, Wed, Thu, Fri, Sat, Sun, ranges"
                " such as Mon-Fri, lists such as Sat,Sun, or * for every day"
            )
        start = DAYS.index(first)
        stop = DAYS.index(last) if dash else start
        # A range may wrap past Sunday: Fri-Mon is Fri, Sat, Sun, Mon.
        days.update((start + step) % 7 for step in range((stop - start) % 7 + 1))
    return frozenset(days)


def _zone(text: str) -> ZoneInfo:
    try:
        return ZoneInfo(text)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise WindowError(
            f"{text!r} is not an IANA time zone (such as UTC, Europe/Stockholm or"
            f" America/New_York): {exc}"
        ) from None


def _wall_time(day: date, minute: int, zone: ZoneInfo) -> datetime:
    """``day`` at ``minute`` of the day in ``zone``, as a UTC instant (1440: next midnight)."""
    wall = datetime.combine(day, time(minute // 60, minute % 60), zone)
    opens = wall.astimezone(UTC)
    if _local(opens, zone) == wall.replace(tzinfo=None):
        return opens
    # The clocks skip this wall time (spring forward): the window opens at the first minute
    # whose wall time is past it, which is where ``is_open`` starts answering yes. The same
    # wall time read with the offset after the change lies before the gap; walk from there.
    instant = wall.replace(fold=1).astimezone(UTC)
    while _local(instant, zone) < wall.replace(tzinfo=None):
        instant += timedelta(minutes=1)
    return instant


def _local(instant: datetime, zone: ZoneInfo) -> datetime:
    return instant.astimezone(zone).replace(tzinfo=None)


def _check_aware(now: datetime) -> None:
    if now.tzinfo is None:
        raise ValueError("now must be timezone-aware")


__all__ = ["DAYS", "FORM", "Window", "WindowError", "Windows", "parse_windows"]
