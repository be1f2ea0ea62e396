"""Quantities in and out: parse what an operator types ("4TB", "250 MiB/s", 1.5e9) and write
numbers the way every table, message, chart and page shows them ("1.84 MB/s", "1m 05s").

Decimal units (10^6 bytes to the MB), as --max-mbps and network vendors count. Two styles, one
definition each: the full one keeps three significant digits so a rate and the cap it is
compared with line up ("1.84 MB/s" of "2.00 MB/s"), and durations show every unit down to the
second ("1h 02m 05s"); the compact one ("1.8MB", "1h2m") is for narrow columns, chart ticks and
values a flag reads back.
"""

from __future__ import annotations

import math
import re

from kafka_rebalance.core.errors import InputError

_UNITS = {
    "": 1, "b": 1,
    "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12, "pb": 10**15,
    "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40, "pib": 2**50,
}
_PATTERN = re.compile(r"^\s*(-?[0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*([a-zA-Z]*)\s*(/s)?\s*$")
_EXAMPLES = "(examples: 4000000000000, '4TB', '250MB/s')"


def parse_bytes(value: object, what: str, *, size: bool = False, rate: bool = False) -> float:
    """A byte count or rate: a number, or a string with a decimal/binary unit and optional /s.

    With `size` the quantity is an amount of bytes, and a rate ("/s") is refused; with `rate`
    it is bytes per second, and a unit without "/s" is refused (250MB for 250MB/s is a slip
    this tool cannot tell from a mix-up). A negative value is returned as such (callers say
    whether it may be); NaN and infinity never are.
    """
    if isinstance(value, bool):
        raise InputError(f"{what}: expected a number of bytes, got {value!r}")
    if not isinstance(value, int | float | str):  # never repr a structure: it may be huge
        raise InputError(f"{what}: expected a number of bytes, got a "
                         f"{'list' if isinstance(value, list) else type(value).__name__} "
                         f"{_EXAMPLES}")
    number: float | None = None
    if isinstance(value, int | float):
        number = float(value) if abs(value) < 1e300 else math.inf
    elif isinstance(value, str):
        m = _PATTERN.match(value)
        if m and m.group(2).lower() in _UNITS:
            if size and m.group(3):
                raise InputError(f"{what}: {value!r} is a rate, but this is an amount of "
                                 "bytes: drop the '/s'")
            if rate and not m.group(3) and m.group(2):
                raise InputError(f"{what}: {value!r} is an amount of bytes, but this is a "
                                 f"rate: write {value.strip()}/s")
            number = float(m.group(1)) * _UNITS[m.group(2).lower()]
        elif m and m.group(2).lower().endswith(("bps", "bit", "bits")):
            raise InputError(f"{what}: {value!r} looks like bits; give bytes, e.g. 125MB/s "
                             "for 1Gbit/s")
    if number is None:
        raise InputError(f"{what}: cannot read {value!r:.60} as bytes {_EXAMPLES}")
    if not math.isfinite(number):
        raise InputError(f"{what}: {value!r:.40} is not a finite number of bytes {_EXAMPLES}")
    return number


_COUNTS = {"": 1, "k": 10**3, "m": 10**6, "g": 10**9}
_COUNT_PATTERN = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*([kKmMgG]?)\s*(/s)?\s*$")


def parse_count_rate(value: object, what: str) -> float:
    """A count a second (requests): a number, or a string with an optional k, M or G and an
    optional /s ('20000', '20k/s'). Never negative, NaN or infinite."""
    number: float | None = None
    if isinstance(value, int | float) and not isinstance(value, bool):
        number = float(value) if abs(value) < 1e300 else math.inf
    elif isinstance(value, str) and (m := _COUNT_PATTERN.match(value)):
        number = float(m.group(1)) * _COUNTS[m.group(2).lower()]
    if number is None or not math.isfinite(number) or number < 0:
        raise InputError(f"{what}: cannot read {value!r:.60} as a count a second "
                         "(examples: 20000, '20k/s')")
    return number


MAX_REQUESTS_PER_SEC = 1e9
"""A billion requests a second: beyond any broker's request threads, so a unit mix-up."""

MAX_QUANTITY = 1e24
"""A yottabyte (or per second): beyond any real partition's bytes or rate, so a unit mix-up."""

MAX_DISK_BYTES = 1e18
"""One exabyte: no broker has a disk this large, so a larger capacity is a unit mix-up."""

MAX_NET_BYTES_PER_SEC = 1e12
"""One terabyte per second (8 Tbit/s): beyond any broker's network, so a unit mix-up."""


_PREFIXES = ("", "k", "M", "G", "T", "P", "E")


def _three_digits(value: float) -> str:
    """Two decimals under 10, one under 100, none above: 1.84, 22.0, 123."""
    for decimals, limit in ((2, 10), (1, 100)):
        text = f"{value:.{decimals}f}"
        if abs(float(text)) < limit:
            return text
    return f"{value:.0f}"


def size_text(amount: float, unit: str = "B", *, compact: bool = False) -> str:
    """1234567 -> '1.23 MB' (compact: '1.2MB'); under a kilobyte the count itself ('512 B')."""
    if not math.isfinite(amount):
        return f"{amount} {unit}"
    value = float(amount)
    space = "" if compact else " "
    for prefix in _PREFIXES:
        if prefix and compact:
            number = f"{value:.1f}"
        else:
            number = f"{value:.0f}" if not prefix else _three_digits(value)
        if abs(float(number)) < 1000 or prefix == _PREFIXES[-1]:
            return f"{number}{space}{prefix}{unit}"
        value /= 1000
    raise AssertionError("unreachable: the last prefix returns")


def rate_text(bytes_per_sec: float, *, compact: bool = False) -> str:
    """1102865 -> '1.10 MB/s' (compact: '1.1MB/s')."""
    return size_text(bytes_per_sec, "B/s", compact=compact)


def duration_text(seconds: float, *, compact: bool = False) -> str:
    """Whole seconds, never negative. Full: 65 -> '1m 05s', 3725 -> '1h 02m 05s', 9 -> '9s';
    from a day on '2d 03h 04m'. Compact, the largest two units: 5400 -> '1h30m', 93600 ->
    '1d2h', 720 -> '12m', under a second as it is ('0.5s'), which a duration flag reads back."""
    if not math.isfinite(seconds):
        return "-"
    seconds = max(0.0, seconds)
    if compact and seconds < 1:
        return f"{seconds:g}s"
    whole = round(seconds)
    days, rest = divmod(whole, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if compact:
        parts = [f"{count}{unit}" for count, unit in
                 ((days, "d"), (hours, "h"), (minutes, "m"), (secs, "s")) if count]
        return "".join(parts[:2])
    if days:
        return f"{days}d {hours:02d}h {minutes:02d}m"
    if hours:
        return f"{hours}h {minutes:02d}m {secs:02d}s"
    if minutes:
        return f"{minutes}m {secs:02d}s"
    return f"{secs}s"


def share_text(part: float, whole: float) -> str:
    """part / whole as a whole percentage ('92%'); '-' without a whole."""
    return f"{part / whole:.0%}" if whole > 0 else "-"
