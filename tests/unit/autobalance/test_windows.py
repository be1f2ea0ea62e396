"""Maintenance windows: parsing, membership, the end of the current window and the next start,
across midnight, over weekday lists and across DST changes (wall-clock windows)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from kafka_rebalance.autobalance.windows import (
    is_open,
    next_start,
    parse_schedule,
    parse_window,
    spans,
    window_at,
    window_end,
)
from kafka_rebalance.core.errors import InputError

BERLIN = ZoneInfo("Europe/Berlin")
NEW_YORK = ZoneInfo("America/New_York")


def at(text: str, zone: ZoneInfo = BERLIN) -> datetime:
    """A wall-clock time in `zone`; 2026-11-23 is a Monday."""
    return datetime.fromisoformat(text).replace(tzinfo=zone)


def test_weekday_range_covers_working_days_only() -> None:
    schedule = parse_schedule(["Mon-Fri 01:00-05:00"], BERLIN)
    assert is_open(schedule, at("2026-11-23T01:00"))  # Monday, start is inside
    assert is_open(schedule, at("2026-11-27T04:59"))  # Friday
    assert not is_open(schedule, at("2026-11-23T05:00"))  # end is outside
    assert not is_open(schedule, at("2026-11-28T02:00"))  # Saturday
    assert not is_open(schedule, at("2026-11-23T00:59"))


def test_a_window_crossing_midnight_belongs_to_the_day_it_starts() -> None:
    schedule = parse_schedule(["Fri 22:00-02:00"], BERLIN)
    assert is_open(schedule, at("2026-11-27T23:30"))  # Friday night
    assert is_open(schedule, at("2026-11-28T01:30"))  # early Saturday: Friday's window
    assert not is_open(schedule, at("2026-11-23T01:30"))  # early Monday: Sunday has none
    assert window_end(schedule, at("2026-11-27T23:30")) == at("2026-11-28T02:00")


def test_daily_across_midnight_and_its_end_and_next_start() -> None:
    schedule = parse_schedule(["daily 22:00-02:00"], BERLIN)
    now = at("2026-11-23T00:30")
    assert window_end(schedule, now) == at("2026-11-23T02:00")
    assert next_start(schedule, at("2026-11-23T02:00")) == at("2026-11-23T22:00")
    assert window_end(schedule, at("2026-11-23T12:00")) is None


def test_weekday_lists_wrapping_ranges_and_aliases() -> None:
    assert parse_window("Sat,Sun 00:00-23:59").days == frozenset({5, 6})
    assert parse_window("Fri-Mon 01:00-02:00").days == frozenset({4, 5, 6, 0})
    assert parse_window("weekdays 01:00-02:00").days == frozenset(range(5))
    assert parse_window("weekends 01:00-02:00").days == frozenset({5, 6})
    assert parse_window("tuesday,THU 01:00-02:00").days == frozenset({1, 3})
    assert parse_window("01:00-02:00").days == frozenset(range(7))  # no days: every day


def test_several_windows_separated_by_semicolons_or_repeated() -> None:
    joined = parse_schedule(["Mon-Fri 01:00-05:00; Sat,Sun 00:00-24:00"], BERLIN)
    repeated = parse_schedule(["Mon-Fri 01:00-05:00", "Sat,Sun 00:00-24:00"], BERLIN)
    assert joined.windows == repeated.windows
    assert is_open(joined, at("2026-11-28T12:00"))  # Saturday noon
    assert not is_open(joined, at("2026-11-24T12:00"))  # Tuesday noon
    # Saturday 00:00 to Monday 00:00 is one stretch: touching windows merge
    assert window_end(joined, at("2026-11-28T12:00")) == at("2026-11-30T00:00")
    assert window_at(joined, at("2026-11-29T23:00")) is not None
    assert next_start(joined, at("2026-11-24T12:00")) == at("2026-11-25T01:00")


def test_touching_windows_extend_the_current_one() -> None:
    schedule = parse_schedule(["daily 22:00-24:00; daily 00:00-03:00"], BERLIN)
    span = window_at(schedule, at("2026-11-23T23:00"))
    assert span is not None
    assert span.end == at("2026-11-24T03:00")
    assert span.start == at("2026-11-23T22:00")


def test_next_start_waits_over_the_weekend() -> None:
    schedule = parse_schedule(["Mon-Fri 01:00-05:00"], BERLIN)
    assert next_start(schedule, at("2026-11-27T06:00")) == at("2026-11-30T01:00")


def test_windows_follow_the_wall_clock_across_dst_changes() -> None:
    schedule = parse_schedule(["daily 01:00-05:00"], BERLIN)
    # 2026-03-29: clocks go 02:00 -> 03:00 in Berlin; the window is 3 hours long that night
    spring = window_at(schedule, at("2026-03-29T01:30"))
    assert spring is not None
    assert spring.end - spring.start == timedelta(hours=3)
    assert spring.end == datetime(2026, 3, 29, 3, 0, tzinfo=UTC)  # 05:00 CEST
    # 2026-10-25: clocks go 03:00 -> 02:00; the window is 5 hours long
    autumn = window_at(schedule, at("2026-10-25T01:30"))
    assert autumn is not None
    assert autumn.end - autumn.start == timedelta(hours=5)
    # the same instant seen from another zone gives the same answer
    instant = at("2026-10-25T04:30").astimezone(NEW_YORK)
    assert window_end(schedule, instant) == autumn.end


def test_the_timezone_decides_which_instant_is_inside() -> None:
    berlin = parse_schedule(["daily 01:00-05:00"], BERLIN)
    new_york = parse_schedule(["daily 01:00-05:00"], NEW_YORK)
    instant = datetime(2026, 11, 23, 1, 0, tzinfo=UTC)  # 02:00 Berlin, 20:00 New York
    assert is_open(berlin, instant)
    assert not is_open(new_york, instant)


@pytest.mark.parametrize(("spec", "hint"), [
    ("Mon-Fri", "DAYS HH:MM-HH:MM"),
    ("Mon-Fri 1-5", "not a time of day"),
    ("Mon-Fri 01:00", "HH:MM-HH:MM"),
    ("Mon-Fri 25:00-05:00", "not a time of day"),
    ("Mon-Fri 01:00-01:00", "00:00-24:00"),
    ("Mo 01:00-02:00", "unknown day"),
    ("Funday 01:00-02:00", "unknown day"),
    ("Mon- 01:00-02:00", "day range"),
    ("Mon Tue 01:00-02:00", "DAYS HH:MM-HH:MM"),
    (" ; ", "no maintenance window"),
])
def test_bad_specs_say_what_to_fix(spec: str, hint: str) -> None:
    with pytest.raises(InputError, match=hint):
        parse_schedule([spec], BERLIN)


def test_naive_datetimes_are_refused() -> None:
    schedule = parse_schedule(["daily 01:00-05:00"], BERLIN)
    with pytest.raises(ValueError, match="timezone-aware"):
        is_open(schedule, datetime(2026, 11, 23, 2, 0))


def test_schedules_describe_themselves() -> None:
    schedule = parse_schedule(["Mon-Fri 01:00-05:00; Sat,Sun 00:00-24:00", "Tue 22:00-02:00",
                               "daily 12:00-13:00"], BERLIN)
    assert schedule.describe() == ("weekdays 01:00-05:00; weekends 00:00-24:00; Tue 22:00-02:00; "
                                   "daily 12:00-13:00 (Europe/Berlin)")


@pytest.mark.parametrize(("window", "expected"), [
    ("daily 02:15-02:45", None),  # wholly in the hour the clocks skip: no window that night
    ("daily 02:30-03:00", None),
    ("daily 01:30-02:30", ("01:30 CET", "03:00 CEST")),  # the half hour that exists
    ("daily 02:30-04:00", ("03:00 CEST", "04:00 CEST")),
])
def test_a_window_in_the_skipped_hour_keeps_to_the_clock_times_that_exist(
        window: str, expected: tuple[str, str] | None) -> None:
    berlin = ZoneInfo("Europe/Berlin")
    night = datetime(2027, 3, 28).date()  # clocks go from 02:00 CET to 03:00 CEST
    found = list(spans(parse_schedule([window], berlin), night, 1))
    shown = [(s.start.astimezone(berlin).strftime("%H:%M %Z"),
              s.end.astimezone(berlin).strftime("%H:%M %Z")) for s in found]
    assert shown == ([] if expected is None else [expected])
