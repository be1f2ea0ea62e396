"""Compact quantities for tables, charts and pages: '1.2MB', '250.0MB/s', '1h02m05s'.

Shared by the terminal review, the HTML reports and the commands' messages, so a number reads
the same wherever it is shown. (The executor's run messages use `executor.units`, which keeps
three significant digits so a rate lines up with its cap.)
"""

from __future__ import annotations


def human_bytes(value: float, suffix: str = "B") -> str:
    """1234567 -> '1.2MB' (decimal units, as network and disk vendors quote)."""
    units = ["", "k", "M", "G", "T", "P"]
    magnitude = float(value)
    for unit in units:
        if abs(magnitude) < 1000 or unit == units[-1]:
            return f"{magnitude:.1f}{unit}{suffix}" if unit else f"{magnitude:.0f}{suffix}"
        magnitude /= 1000
    return f"{magnitude:.1f}P{suffix}"


def human_duration(seconds: float) -> str:
    """3725 -> '1h02m05s'."""
    whole = round(seconds)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes:02d}m{secs:02d}s"
    if minutes:
        return f"{minutes}m{secs:02d}s"
    return f"{secs}s"
