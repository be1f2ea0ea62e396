"""Maintenance windows: when an automatic rebalance may run.

A spec lists windows separated by ";", each "DAYS HH:MM-HH:MM" in one timezone's wall-clock
time: "Mon-Fri 01:00-05:00", "daily 22:00-02:00" (an end before the start crosses midnight and
belongs to the day it starts), "Sat,Sun 00:00-24:00". Windows follow the wall clock, so on a DST
change day a window is an hour longer or shorter in real time. Pure: no clock, no files.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta, tzinfo

from kafka_rebalance.core.errors import InputError
from kafka_rebalance.core.names import visible

DAY_NAMES = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
_DAY_ALIASES = {"daily": range(7), "everyday": range(7), "weekdays": range(5),
                "weekends": range(5, 7)}
_CLOCK = re.compile(r"(\d{1,2}):(\d{2})")
_MINUTES_PER_DAY = 24 * 60
_EXAMPLE = "e.g. 'Mon-Fri 01:00-05:00; Sat,Sun 00:00-24:00' or 'daily 22:00-02:00'"


@dataclass(frozen=True, slots=True)
class Window:
    """One recurring window: on each of `days` (0 = Monday), from `start` to `end` minutes after
    local midnight; `end <= start` means it ends the next day."""

    days: frozenset[int]
    start: int
    end: int

    def __post_init__(self) -> None:
        if not self.days or not self.days <= frozenset(range(7)):
            raise InputError(f"window days must be weekdays 0-6, got {sorted(self.days)}")
        if not 0 <= self.start < _MINUTES_PER_DAY or not 0 < self.end <= _MINUTES_PER_DAY:
            raise InputError(f"window times out of range: {self.start}-{self.end} minutes")
        if self.start == self.end:
            raise InputError("a window's start and end are equal: for a whole day write "
                             "00:00-24:00")

    def describe(self) -> str:
        named = {frozenset(v): k for k, v in _DAY_ALIASES.items() if k != "everyday"}
        days = named.get(self.days) or ",".join(DAY_NAMES[d].title() for d in sorted(self.days))
        return f"{days} {_hhmm(self.start)}-{_hhmm(self.end)}"


@dataclass(frozen=True)
class Schedule:
    """The windows in force and the timezone whose wall clock they follow."""

    windows: tuple[Window, ...]
    zone: tzinfo

    def __post_init__(self) -> None:
        if not self.windows:
            raise InputError(f"no maintenance window given ({_EXAMPLE})")

    def describe(self) -> str:
        return "; ".join(w.describe() for w in self.windows) + f" ({self.zone})"


@dataclass(frozen=True, slots=True)
class Span:
    """One occurrence of a window, as UTC instants: [start, end)."""

    start: datetime
    end: datetime

    def contains(self, at: datetime) -> bool:
        return self.start <= at < self.end


def _hhmm(minutes: int) -> str:
    return f"{minutes // 60:02d}:{minutes % 60:02d}"


def resolve_zone(name: str | None) -> tzinfo:
    """--timezone as an IANA zone; without it the machine's zone (TZ, then /etc/localtime)."""
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    if name is not None:
        try:  # OSError: a zone directory (Europe) or a name too long for a file
            return ZoneInfo(name)
        except (ZoneInfoNotFoundError, ValueError, OSError):
            raise InputError(f"--timezone {visible(name)[:80]!r}: not an IANA timezone name "
                             "(e.g. UTC, Europe/Berlin, America/New_York)") from None
    env = os.environ.get("TZ", "").lstrip(":")
    if env:
        try:
            return ZoneInfo(env)
        except (ZoneInfoNotFoundError, ValueError, OSError):
            # windows read in another zone than the operator's shell would start moves at the
            # wrong hour: a POSIX rule (CET-1CEST,...) or a typo is refused, not guessed
            raise InputError(f"TZ={visible(env)[:80]!r} is not an IANA timezone name, so the "
                             "windows' zone is unknown; give --timezone (e.g. Europe/Berlin) "
                             "or set TZ to such a name") from None
    try:
        with open("/etc/localtime", "rb") as local:
            return ZoneInfo.from_file(local, key="localtime")
    except (OSError, ValueError):
        return datetime.now().astimezone().tzinfo or UTC


def parse_schedule(specs: Iterable[str], zone: tzinfo) -> Schedule:
    """Every window of `specs` (each may hold several, separated by ';') in `zone`."""
    parts = [part.strip() for spec in specs for part in spec.split(";")]
    return Schedule(tuple(parse_window(p) for p in parts if p), zone)


def parse_window(text: str) -> Window:
    """One window: "[DAYS] HH:MM-HH:MM"; no days means every day."""
    fields = text.split()
    if len(fields) not in (1, 2):
        raise InputError(f"window {text!r}: write DAYS HH:MM-HH:MM ({_EXAMPLE})")
    days = _parse_days(fields[0], text) if len(fields) == 2 else frozenset(range(7))
    times = fields[-1].split("-")
    if len(times) != 2:
        raise InputError(f"window {text!r}: the times must be HH:MM-HH:MM ({_EXAMPLE})")
    start, end = _parse_clock(times[0], text, False), _parse_clock(times[1], text, True)
    if start == end:
        raise InputError(f"window {text!r}: start and end are equal; for a whole day write "
                         "00:00-24:00")
    return Window(days, start, end if end != 0 else _MINUTES_PER_DAY)


def _parse_clock(text: str, window: str, is_end: bool) -> int:
    match = _CLOCK.fullmatch(text)
    if not match:
        raise InputError(f"window {window!r}: {text!r} is not a time of day HH:MM (write "
                         f"DAYS HH:MM-HH:MM, {_EXAMPLE})")
    hours, minutes = int(match[1]), int(match[2])
    if is_end and (hours, minutes) == (24, 0):
        return _MINUTES_PER_DAY
    if hours > 23 or minutes > 59:
        raise InputError(f"window {window!r}: {text!r} is not a time of day (00:00-23:59; "
                         "24:00 as an end)")
    return hours * 60 + minutes


def _parse_days(text: str, window: str) -> frozenset[int]:
    """"Mon-Fri", "Sat,Sun", "Fri-Mon" (wraps), "daily", "weekdays", "weekends"."""
    alias = _DAY_ALIASES.get(text.lower())
    if alias is not None:
        return frozenset(alias)
    days: set[int] = set()
    for item in text.split(","):
        ends = item.split("-")
        if len(ends) > 2 or not all(ends):
            raise InputError(f"window {window!r}: {item!r} is not a day or a day range "
                             "such as Mon-Fri")
        first, last = (_day(e, window) for e in (ends[0], ends[-1]))
        span = (last - first) % 7
        days.update((first + i) % 7 for i in range(span + 1))
    return frozenset(days)


def _day(text: str, window: str) -> int:
    name = text.lower()
    for index in range(7):
        if len(name) >= 3 and _full_day(index).startswith(name):
            return index
    raise InputError(f"window {window!r}: unknown day {text!r} (use Mon Tue Wed Thu Fri Sat "
                     "Sun, daily, weekdays or weekends)")


def _full_day(index: int) -> str:
    return ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday",
            "sunday")[index]


def _local(day: date, minutes: int, zone: tzinfo) -> datetime:
    """Wall-clock `minutes` after midnight of `day` in `zone`, as a UTC instant. A wall time
    the clocks skip (02:30 on the night clocks go forward) is the first moment after the
    skip, so a window inside the skipped hour is empty that day instead of moving an hour
    later; a time the clocks pass twice is its first pass."""
    extra, minutes = divmod(minutes, _MINUTES_PER_DAY)
    wall = datetime.combine(day + timedelta(days=extra), time(minutes // 60, minutes % 60),
                            tzinfo=zone)
    instant = wall.astimezone(UTC)
    naive = wall.replace(tzinfo=None)
    if instant.astimezone(zone).replace(tzinfo=None) == naive:
        return instant
    moment = wall.replace(fold=1).astimezone(UTC)  # in the skip: search from its other side
    while moment < instant and moment.astimezone(zone).replace(tzinfo=None) < naive:
        moment += timedelta(minutes=1)
    return moment


def spans(schedule: Schedule, first_day: date, days: int) -> Iterator[Span]:
    """Occurrences of every window starting on local days first_day .. first_day+days-1, in
    start order."""
    found: list[Span] = []
    for offset in range(days):
        day = first_day + timedelta(days=offset)
        for window in schedule.windows:
            if day.weekday() not in window.days:
                continue
            end = window.end if window.end > window.start else window.end + _MINUTES_PER_DAY
            span = Span(_local(day, window.start, schedule.zone), _local(day, end, schedule.zone))
            if span.start < span.end:  # all of it in a skipped hour: no window that day
                found.append(span)
    return iter(sorted(found, key=lambda s: (s.start, s.end)))


def _aware(at: datetime) -> datetime:
    if at.tzinfo is None or at.utcoffset() is None:
        raise ValueError("window arithmetic needs a timezone-aware datetime")
    return at.astimezone(UTC)


def _around(schedule: Schedule, at: datetime, ahead_days: int) -> list[Span]:
    today = at.astimezone(schedule.zone).date()
    return list(spans(schedule, today - timedelta(days=1), ahead_days + 2))


def window_at(schedule: Schedule, at: datetime) -> Span | None:
    """The window `at` lies in (touching or overlapping windows merged), or None."""
    instant = _aware(at)
    around = _around(schedule, instant, 8)
    current = next((s for s in around if s.contains(instant)), None)
    if current is None:
        return None
    start, end = current.start, current.end
    for span in around:  # windows that overlap or touch extend the one we are in
        if span.start <= end < span.end:
            end = span.end
    for span in reversed(around):
        if span.start < start <= span.end:
            start = span.start
    return Span(start, end)


def is_open(schedule: Schedule, at: datetime) -> bool:
    """True when `at` lies inside a window."""
    return window_at(schedule, at) is not None


def window_end(schedule: Schedule, at: datetime) -> datetime | None:
    """When the window `at` lies in ends (UTC), or None outside every window."""
    span = window_at(schedule, at)
    return None if span is None else span.end


def next_start(schedule: Schedule, after: datetime) -> datetime:
    """The first window start strictly after `after` (UTC)."""
    instant = _aware(after)
    for span in _around(schedule, instant, 8):
        if span.start > instant:
            return span.start
    raise AssertionError("every schedule has a window within 8 days")  # pragma: no cover
