"""Parse human-friendly byte quantities ("4TB", "250 MiB/s", 1.5e9) into numbers."""

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
        raise InputError(f"{what}: cannot read {value!r} as bytes {_EXAMPLES}")
    if not math.isfinite(number):
        raise InputError(f"{what}: {value!r:.40} is not a finite number of bytes {_EXAMPLES}")
    return number


MAX_QUANTITY = 1e24
"""A yottabyte (or per second): beyond any real partition's bytes or rate, so a unit mix-up."""

MAX_DISK_BYTES = 1e18
"""One exabyte: no broker has a disk this large, so a larger capacity is a unit mix-up."""

MAX_NET_BYTES_PER_SEC = 1e12
"""One terabyte per second (8 Tbit/s): beyond any broker's network, so a unit mix-up."""
