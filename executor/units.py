"""Quantities as an operator reads them: "1.84 MB/s", "22.0 MB", "1m 05s".

Decimal units (10^6 bytes to the MB), as --max-mbps and network vendors count, with three
significant digits, so a rate and the cap it is compared with line up ("1.84 MB/s" of "2.00
MB/s"). Messages of the executor (gates, adaptive rates) and the CLI's run output share them.
"""

from __future__ import annotations

import math

_PREFIXES = ("", "k", "M", "G", "T", "P", "E")


def _three_digits(value: float) -> str:
    """Two decimals under 10, one under 100, none above: 1.84, 22.0, 123."""
    for decimals, limit in ((2, 10), (1, 100)):
        text = f"{value:.{decimals}f}"
        if abs(float(text)) < limit:
            return text
    return f"{value:.0f}"


def size_text(amount: float, unit: str = "B") -> str:
    """1234567 -> '1.23 MB'; under a kilobyte the count itself ('512 B')."""
    if not math.isfinite(amount):
        return f"{amount} {unit}"
    value = float(amount)
    for prefix in _PREFIXES[:-1]:
        number = f"{value:.0f}" if not prefix else _three_digits(value)
        if abs(float(number)) < 1000:
            return f"{number} {prefix}{unit}"
        value /= 1000
    return f"{_three_digits(value)} {_PREFIXES[-1]}{unit}"


def rate_text(bytes_per_sec: float) -> str:
    """1102865 -> '1.10 MB/s'."""
    return size_text(bytes_per_sec, "B/s")


def duration_text(seconds: float) -> str:
    """65 -> '1m 05s', 3725 -> '1h 02m 05s', 9 -> '9s' (whole seconds); from a day on,
    '2d 03h 04m'."""
    if not math.isfinite(seconds):
        return "-"
    whole = max(0, round(seconds))
    days, rest = divmod(whole, 86400)
    if days:
        return f"{days}d {rest // 3600:02d}h {rest % 3600 // 60:02d}m"
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h {minutes:02d}m {secs:02d}s"
    if minutes:
        return f"{minutes}m {secs:02d}s"
    return f"{secs}s"


def share_text(part: float, whole: float) -> str:
    """part / whole as a whole percentage ('92%'); '-' without a whole."""
    return f"{part / whole:.0%}" if whole > 0 else "-"
