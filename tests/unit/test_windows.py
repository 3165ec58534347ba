"""Maintenance windows (autoroll.core.windows): reading the text, open or closed at an instant, and
when the next one opens. One row per rule; each fails when its rule is broken."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from autoroll.core.windows import WindowError, parse_windows

# 2026-12-07 is a Monday. Stockholm is UTC+1 in winter, UTC+2 in summer.
MON = datetime(2026, 12, 7, tzinfo=UTC)


def at(day: int, hour: int, minute: int = 0, *, month: int = 12) -> datetime:
    return datetime(2026, month, day, hour, minute, tzinfo=UTC)


@pytest.mark.parametrize(
    ("text", "when", "expected"),
    [
        # a plain window: start inclusive, end exclusive, in the zone's wall-clock time
        ("Mon 10:00-12:00 UTC", at(7, 10), True),
        ("Mon 10:00-12:00 UTC", at(7, 11, 59), True),
        ("Mon 10:00-12:00 UTC", at(7, 12), False),
        ("Mon 10:00-12:00 UTC", at(7, 9, 59), False),
        ("Mon 10:00-12:00 UTC", at(8, 10), False),  # Tuesday is not listed
        # the zone: 10:00 in Stockholm is 09:00 UTC in December
        ("Mon 10:00-12:00 Europe/Stockholm", at(7, 9), True),
        ("Mon 10:00-12:00 Europe/Stockholm", at(7, 11), False),
        # across midnight: opens on the listed day, runs into the next
        ("Fri 22:00-06:00 UTC", at(11, 23), True),  # Friday night
        ("Fri 22:00-06:00 UTC", at(12, 5, 59), True),  # Saturday morning
        ("Fri 22:00-06:00 UTC", at(12, 6), False),
        ("Fri 22:00-06:00 UTC", at(11, 5), False),  # Friday morning belongs to Thursday's
        ("Fri 22:00-06:00 UTC", at(12, 23), False),  # Saturday night: Saturday not listed
        # 24:00 ends at midnight; 00:00-24:00 is the whole day
        ("Sat 20:00-24:00 UTC", at(12, 23, 59), True),
        ("Sat 20:00-24:00 UTC", at(13, 0), False),
        ("Sun 00:00-24:00 UTC", at(13, 0), True),
        ("Sun 00:00-24:00 UTC", at(13, 23, 59), True),
        # day lists, ranges, wrapping ranges and *
        ("Mon-Fri 09:00-17:00 UTC", at(9, 12), True),  # Wednesday
        ("Mon-Fri 09:00-17:00 UTC", at(12, 12), False),  # Saturday
        ("Sat,Sun 09:00-17:00 UTC", at(13, 12), True),
        ("Fri-Mon 09:00-17:00 UTC", at(13, 12), True),  # Sunday, inside the wrap
        ("Fri-Mon 09:00-17:00 UTC", at(9, 12), False),  # Wednesday, outside it
        ("* 09:00-10:00 UTC", at(10, 9, 30), True),
        ("mon 10:00-12:00 UTC", at(7, 11), True),  # day names in any case
        # several windows: open when any is
        ("Mon 01:00-02:00 UTC; Tue 01:00-02:00 UTC", at(8, 1, 30), True),
        ("Mon 01:00-02:00 UTC; Tue 01:00-02:00 UTC", at(9, 1, 30), False),
        # wall-clock across daylight saving: 10:00 Stockholm is 08:00 UTC in summer
        ("Mon 10:00-11:00 Europe/Stockholm", at(6, 8, 30, month=7), True),
        ("Mon 10:00-11:00 Europe/Stockholm", at(6, 9, 30, month=7), False),
    ],
)
def test_is_open(text: str, when: datetime, expected: bool) -> None:
    assert parse_windows(text).is_open(when) is expected


@pytest.mark.parametrize(
    ("text", "when", "expected"),
    [
        ("Mon 10:00-12:00 UTC", at(7, 9), at(7, 10)),  # later today
        ("Mon 10:00-12:00 UTC", at(7, 12), at(14, 10)),  # next week
        ("Mon 10:00-12:00 Europe/Stockholm", at(7, 12), at(14, 9)),  # 10:00 local = 09:00 UTC
        ("Sat,Sun 02:00-04:00 UTC", at(7, 12), at(12, 2)),  # the nearest listed day
        ("Mon 10:00-12:00 UTC; Tue 01:00-02:00 UTC", at(7, 13), at(8, 1)),  # the nearest window
        ("Fri 22:00-06:00 UTC", at(12, 7), at(18, 22)),  # after Saturday's tail: next Friday
    ],
)
def test_next_opening(text: str, when: datetime, expected: datetime) -> None:
    opens = parse_windows(text).next_opening(when)
    assert opens == expected
    assert parse_windows(text).is_open(opens)
    assert not parse_windows(text).is_open(opens - timedelta(minutes=1))


def test_a_start_the_clocks_skip_opens_when_the_clocks_pass_it() -> None:
    # 2026-03-29: Stockholm jumps from 02:00 CET to 03:00 CEST; 02:30 never happens.
    windows = parse_windows("Sun 02:30-04:00 Europe/Stockholm")
    opens = windows.next_opening(datetime(2026, 3, 28, 12, tzinfo=UTC))
    assert opens == datetime(2026, 3, 29, 1, 0, tzinfo=UTC)  # 03:00 CEST
    assert windows.is_open(opens)
    assert not windows.is_open(opens - timedelta(seconds=1))


def test_opening_text_is_in_the_windows_own_zone() -> None:
    windows = parse_windows("Mon-Fri 22:00-06:00 Europe/Stockholm")
    assert windows.opening_text(at(12, 10)) == "Mon 2026-12-14 22:00 Europe/Stockholm"  # Sat → Mon


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("", "empty window"),
        ("Mon 10:00-12:00 UTC;", "empty window"),
        ("Mon 10:00-12:00", "three fields"),
        ("Mon 10:00-12:00 UTC extra", "three fields"),
        ("Mon 10:00 UTC", "time range"),
        ("Mon 10-12 UTC", "is not a time HH:MM"),
        ("Mon 9:00-12:00 UTC", "is not a time HH:MM"),
        ("Mon 24:00-12:00 UTC", "00:00 to 23:59"),
        ("Mon 10:00-24:01 UTC", r"24:00 \(as an end\)"),
        ("Mon 10:60-12:00 UTC", "is not a time of day"),
        ("Mon 10:00-10:00 UTC", "same time"),
        ("Monday 10:00-12:00 UTC", "list of days"),
        ("Mon-Xyz 10:00-12:00 UTC", "list of days"),
        ("Mon,,Tue 10:00-12:00 UTC", "list of days"),
        ("Mon 10:00-12:00 Mars/Olympus", "IANA time zone"),
        ("Mon 10:00-12:00 ../etc/passwd", "IANA time zone"),
        ("Mon 10:00-12:00 CEST", "IANA time zone"),  # an abbreviation, not a zone
    ],
)
def test_bad_windows_name_the_part_and_the_form(text: str, says: str) -> None:
    with pytest.raises(WindowError, match=says):
        parse_windows(text)


def test_every_error_shows_the_form() -> None:
    with pytest.raises(WindowError) as caught:
        parse_windows("Mon 10:00-12:00")
    assert "Mon-Fri 22:00-06:00 Europe/Stockholm" in str(caught.value)


def test_naive_instants_are_refused() -> None:
    with pytest.raises(ValueError, match="timezone-aware"):
        parse_windows("Mon 10:00-12:00 UTC").is_open(datetime(2026, 12, 7, 10))
