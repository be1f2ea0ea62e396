"""Capacities file (YAML): a default capacity with per-rack and per-broker overrides.

    default: {disk_bytes: 4TB, net_in_bytes_per_sec: 250MB/s, net_out_bytes_per_sec: 250MB/s}
    racks:   {a: {disk_bytes: 8TB}}
    brokers: {7: {net_in_bytes_per_sec: 1.25GB/s, net_out_bytes_per_sec: 1.25GB/s}}

A broker's capacity is the default, overlaid by its rack's entry, overlaid by its own entry.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from topology.errors import InputError
from topology.model import Broker, Capacity, Topology
from topology.units import parse_bytes

CAPACITY_KEYS = ("disk_bytes", "net_in_bytes_per_sec", "net_out_bytes_per_sec")
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
            raise InputError(f"capacities file names unknown broker {unknown[0]}")
        return topology.with_brokers(
            Broker(b.id, b.rack, self.for_broker(b.id, b.rack, b.capacity), b.alive)
            for b in topology.brokers
        )


def _entry(raw: Any, where: str) -> dict[str, float]:
    if not isinstance(raw, Mapping):
        raise InputError(f"{where}: expected a mapping of {', '.join(CAPACITY_KEYS)}")
    out: dict[str, float] = {}
    for key, value in raw.items():
        if key not in CAPACITY_KEYS:
            raise InputError(f"{where}: unknown key {key!r} (expected {', '.join(CAPACITY_KEYS)})")
        number = parse_bytes(value, f"{where}.{key}", size=key == "disk_bytes")
        if number <= 0:
            raise InputError(f"{where}.{key}: must be positive, got {value!r}")
        out[key] = number
    return out


def parse_capacities(raw: Any, source: str = "capacities") -> Capacities:
    """Validate a loaded YAML document into Capacities."""
    if not isinstance(raw, Mapping):
        raise InputError(f"{source}: expected a mapping with default/racks/brokers")
    extra = set(raw) - _SECTIONS
    if extra:
        raise InputError(f"{source}: unknown section {sorted(map(str, extra))[0]!r} "
                         "(expected default, racks, brokers)")
    default = _entry(raw.get("default") or {}, f"{source}: default")
    racks_raw = raw.get("racks") or {}
    brokers_raw = raw.get("brokers") or {}
    if not isinstance(racks_raw, Mapping) or not isinstance(brokers_raw, Mapping):
        raise InputError(f"{source}: 'racks' and 'brokers' must be mappings")
    racks = {str(r): _entry(v, f"{source}: racks.{r}") for r, v in racks_raw.items()}
    brokers: dict[int, dict[str, float]] = {}
    for key, value in brokers_raw.items():
        try:
            broker_id = int(key)
        except (TypeError, ValueError):
            raise InputError(f"{source}: brokers.{key}: broker ids must be integers") from None
        brokers[broker_id] = _entry(value, f"{source}: brokers.{key}")
    return Capacities(default, racks, brokers)


class _UniqueKeyLoader(yaml.SafeLoader):
    """Safe YAML that refuses a key given twice in one mapping (YAML keeps the last silently,
    so a broker listed twice would lose its first entry unnoticed)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue  # `<<: *anchor` merges; keys after it may override its values
            key = self.construct_object(key_node, deep=deep)
            if key in seen:
                raise InputError(f"line {key_node.start_mark.line + 1}: {key!r} is given twice; "
                                 "keep one entry")
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


def read_capacities(path: Path) -> Capacities:
    """Read and validate a capacities YAML file."""
    try:
        raw = yaml.load(path.read_text(encoding="utf-8"), Loader=_UniqueKeyLoader)
    except OSError as exc:
        raise InputError(f"cannot read capacities file {path}: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise InputError(f"{path}: not a YAML text file (it is not UTF-8); give the "
                         "capacities file itself") from None
    except yaml.YAMLError as exc:
        raise InputError(f"{path}: not valid YAML: {str(exc).splitlines()[0]}") from None
    except InputError as exc:
        raise InputError(f"{path}: {exc}") from None
    return parse_capacities(raw, str(path))
