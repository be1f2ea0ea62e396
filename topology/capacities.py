"""Capacities file (YAML): a default capacity with per-rack and per-broker overrides.

    default: {disk_bytes: 4TB, net_in_bytes_per_sec: 250MB/s, net_out_bytes_per_sec: 250MB/s}
    racks:   {a: {disk_bytes: 8TB}}
    brokers: {7: {net_in_bytes_per_sec: 1.25GB/s, net_out_bytes_per_sec: 1.25GB/s}}

`requests_per_sec` (optional, e.g. `20k/s`) is the produce and fetch requests a broker can
serve a second, for `plan --request-balance`; without it brokers count as equal there.

A broker's capacity is the default, overlaid by its rack's entry, overlaid by its own entry.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml

from kafka_rebalance.core.errors import InputError, problems_message
from kafka_rebalance.core.names import visible
from topology.documents import parse_yaml, read_text
from topology.model import INT32_MAX, Capacity, Topology, is_kafka_id
from topology.units import (
    MAX_DISK_BYTES,
    MAX_NET_BYTES_PER_SEC,
    MAX_REQUESTS_PER_SEC,
    parse_bytes,
    parse_count_rate,
)

CAPACITY_KEYS = ("disk_bytes", "net_in_bytes_per_sec", "net_out_bytes_per_sec")
REQUESTS_KEY = "requests_per_sec"  # optional: without it, brokers count as equal for requests
ENTRY_KEYS = (*CAPACITY_KEYS, REQUESTS_KEY)
_SECTIONS = {"default", "racks", "brokers"}


@dataclass(frozen=True)
class Capacities:
    """Partial capacity entries at three levels; `for_broker` resolves one broker."""

    default: Mapping[str, float] = field(default_factory=dict)
    racks: Mapping[str, Mapping[str, float]] = field(default_factory=dict)
    brokers: Mapping[int, Mapping[str, float]] = field(default_factory=dict)

    def for_broker(self, broker_id: int, rack: str | None,
                   fallback: Capacity | None = None) -> Capacity:
        """The resolved capacity; `fallback` (e.g. the snapshot's) fills keys the file lacks."""
        merged: dict[str, float] = {}
        if fallback is not None:
            merged.update({k: getattr(fallback, k) for k in CAPACITY_KEYS})
            if fallback.requests_per_sec is not None:
                merged[REQUESTS_KEY] = fallback.requests_per_sec
        merged.update(self.default)
        if rack is not None:
            merged.update(self.racks.get(rack, {}))
        merged.update(self.brokers.get(broker_id, {}))
        missing = [k for k in CAPACITY_KEYS if k not in merged]
        if missing:
            raise InputError(
                f"broker {broker_id} (rack {rack}) has no capacity for {', '.join(missing)}: "
                "add it under 'default', its rack or the broker in the capacities file"
            )
        return Capacity(**merged)

    def apply(self, topology: Topology) -> Topology:
        """A topology whose brokers carry the resolved capacities."""
        unknown = sorted(set(self.brokers) - set(topology.broker_ids))
        if unknown:
            raise InputError(f"capacities file names unknown broker {unknown[0]} (the "
                             f"cluster's brokers are {list(topology.broker_ids)}); remove it "
                             "or correct the id")
        return topology.with_brokers(
            replace(b, capacity=self.for_broker(b.id, b.rack, b.capacity))
            for b in topology.brokers
        )


_LIMITS = {"disk_bytes": (MAX_DISK_BYTES, "1 EB"),
           "net_in_bytes_per_sec": (MAX_NET_BYTES_PER_SEC, "1 TB/s"),
           "net_out_bytes_per_sec": (MAX_NET_BYTES_PER_SEC, "1 TB/s"),
           REQUESTS_KEY: (MAX_REQUESTS_PER_SEC, "1G/s")}


# Below these a capacity a person wrote is a missing unit (disk_bytes: 2 meant 2TB): every
# broker's share of a plan would be millions of percent.
_FLOORS = {"disk_bytes": (1e6, "1 MB"), "net_in_bytes_per_sec": (1e3, "1 kB/s"),
           "net_out_bytes_per_sec": (1e3, "1 kB/s"), REQUESTS_KEY: (1.0, "1/s")}


def implausible_capacity(key: str, value: float) -> str | None:
    """Why a capacity a person wrote is implausible (a unit mix-up such as 1e30TB), or None.

    Only files people write are held to this; execute and auto count brokers without a
    capacities file as unbounded (1e15 of everything), so the model itself allows more.
    """
    limit, name = _LIMITS[key]
    return f"is implausibly large (over {name}); check its unit" if value > limit else None


def _entry(raw: Any, where: str, problems: list[str]) -> dict[str, float]:
    """One capacity entry; every bad key or value is added to `problems`."""
    if not isinstance(raw, Mapping):
        problems.append(f"{where}: expected a mapping of {', '.join(ENTRY_KEYS)}")
        return {}
    out: dict[str, float] = {}
    for key, value in raw.items():
        if key not in ENTRY_KEYS:
            close = difflib.get_close_matches(str(key), ENTRY_KEYS, n=1, cutoff=0.7)
            hint = (f"did you mean {close[0]!r}?" if close
                    else f"expected {', '.join(ENTRY_KEYS)}")
            problems.append(f"{where}: unknown key {key!r} ({hint})")
            continue
        try:
            out[key] = _quantity(key, value, f"{where}.{key}")
        except InputError as exc:
            problems.append(str(exc))
    return out


def _quantity(key: str, value: Any, where: str) -> float:
    number = (parse_count_rate(value, where) if key == REQUESTS_KEY
              else parse_bytes(value, where, size=key == "disk_bytes", rate=key != "disk_bytes"))
    if number <= 0:
        raise InputError(f"{where}: must be positive, got {value!r}")
    floor, unit = _FLOORS[key]
    if number < floor:
        raise InputError(f"{where}: {value!r:.40} is implausibly small (under {unit}); "
                         "check its unit" + ("" if key == REQUESTS_KEY
                                             else " (a bare number is bytes)"))
    why = implausible_capacity(key, number)
    if why:
        raise InputError(f"{where}: {value!r:.40} {why}")
    return number


def _broker_id(key: Any, where: str) -> int:
    """A broker key: an integer (YAML `7:`) or its digits quoted; not 1.9, true or -1."""
    if isinstance(key, str) and key.isascii() and key.isdigit():
        key = int(key)
    if not is_kafka_id(key):
        raise InputError(f"{where}.{key!r}: broker ids must be integers from 0 to {INT32_MAX}, "
                         f"got {type(key).__name__} {key!r}")
    return int(key)


def parse_capacities(raw: Any, source: str = "capacities") -> Capacities:
    """Validate a loaded YAML document into Capacities; InputError names every problem."""
    if not isinstance(raw, Mapping):
        raise InputError(f"{source}: expected a mapping with default/racks/brokers")
    if "partitions" in raw or "moves" in raw:
        kind = "plan" if "moves" in raw else "snapshot"
        raise InputError(f"{source} is a {kind} file, not a capacities file: give the YAML "
                         "with default/racks/brokers capacities (see examples/capacities.yaml)")
    problems = [f"unknown section {str(k)!r} (expected default, racks, brokers)"
                for k in sorted(map(str, set(raw) - _SECTIONS))]
    default = _entry(raw.get("default") or {}, "default", problems)
    racks_raw = raw.get("racks") or {}
    brokers_raw = raw.get("brokers") or {}
    if not isinstance(racks_raw, Mapping) or not isinstance(brokers_raw, Mapping):
        raise InputError(f"{source}: 'racks' and 'brokers' must be mappings")
    # rack names as the brokers carry them (topology.model.Broker writes control characters out)
    racks = {visible(str(r)): _entry(v, f"racks.{r}", problems) for r, v in racks_raw.items()}
    brokers: dict[int, dict[str, float]] = {}
    for key, value in brokers_raw.items():
        try:
            broker_id = _broker_id(key, "brokers")
        except InputError as exc:
            problems.append(str(exc))
            continue
        if broker_id in brokers:
            problems.append(f"brokers.{key!r}: broker {broker_id} is given twice")
        brokers[broker_id] = _entry(value, f"brokers.{key}", problems)
    if problems:
        raise InputError(f"{source}: {problems_message(problems)}")
    return Capacities(default, racks, brokers)


MAX_CAPACITIES_BYTES = 16 * 2**20
"""16 MiB: a hundred thousand broker entries; YAML is read at a few hundred kB a second."""


class _UniqueKeyLoader(yaml.SafeLoader):
    """Safe YAML that refuses a key given twice in one mapping (YAML keeps the last silently,
    so a broker listed twice would lose its first entry unnoticed)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue  # `<<: *anchor` merges; keys after it may override its values
            key = self.construct_object(key_node, deep=deep)
            if not isinstance(key, str | int | float | bool | None):
                raise InputError(f"line {key_node.start_mark.line + 1}: a key must be a name or "
                                 "a broker id, not a list or mapping; give each broker its own "
                                 "entry")
            if key in seen:
                raise InputError(f"line {key_node.start_mark.line + 1}: {key!r} is given twice; "
                                 "keep one entry")
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


def read_capacities(path: Path) -> Capacities:
    """Read and validate a capacities YAML file."""
    text = read_text(path, "capacities file", kind="YAML", limit=MAX_CAPACITIES_BYTES)
    try:
        raw = parse_yaml(text, str(path), _UniqueKeyLoader)
    except InputError as exc:
        message = str(exc)
        raise InputError(message if message.startswith(str(path)) else f"{path}: {message}"
                         ) from None
    return parse_capacities(raw, str(path))
