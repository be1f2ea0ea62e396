"""Parse human-friendly byte quantities ("4TB", "250 MiB/s", 1.5e9) into numbers."""

from __future__ import annotations

import re

from topology.errors import InputError

_UNITS = {
    "": 1, "b": 1,
    "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12, "pb": 10**15,
    "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40, "pib": 2**50,
}
_PATTERN = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*([a-zA-Z]*)\s*(/s)?\s*$")


def parse_bytes(value: object, what: str) -> float:
    """A byte count or rate: a number, or a string with a decimal/binary unit and optional /s."""
    if isinstance(value, bool):
        raise InputError(f"{what}: expected a number of bytes, got {value!r}")
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        m = _PATTERN.match(value)
        if m and m.group(2).lower() in _UNITS:
            return float(m.group(1)) * _UNITS[m.group(2).lower()]
    raise InputError(
        f"{what}: cannot read {value!r} as bytes (examples: 4000000000000, '4TB', '250MB/s')"
    )
