"""Snapshot format v1 (DESIGN.md): read, validate and write the topology JSON file.

Brokers may lack a capacity in the file (a live snapshot taken without a capacities file);
such a snapshot needs a capacities file before it becomes a Topology.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from topology.capacities import CAPACITY_KEYS, Capacities
from topology.errors import InputError
from topology.model import Broker, Capacity, Partition, Topology

SNAPSHOT_VERSION = 1
_MAX_NUMBER = 1e24  # a yottabyte: beyond any real byte count or rate, so a unit mix-up


def read_json_object(path: Path, what: str, expected_keys: str) -> dict[str, Any]:
    """Read a JSON file whose top level must be an object; errors name the file and the fix."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot read {what} {path}: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise InputError(f"{path}: not a JSON text file (it is not UTF-8); give the {what} "
                         "file itself") from None
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}: not valid JSON ({exc.msg} at line {exc.lineno}, "
                         f"column {exc.colno})") from None
    except ValueError as exc:  # e.g. an integer too long to convert
        raise InputError(f"{path}: not valid JSON ({exc})") from None
    if not isinstance(doc, dict):
        raise InputError(f"{path}: expected a JSON object with {expected_keys}")
    return doc


def load_snapshot_dict(path: Path) -> dict[str, Any]:
    """Read the JSON document of a snapshot file (no model validation yet)."""
    return read_json_object(path, "snapshot", "version, brokers, partitions")


def _number(entry: Mapping[str, Any], key: str, where: str, default: float | None = None) -> float:
    if key not in entry or entry[key] is None:
        if default is not None:
            return default
        raise InputError(f"{where}: missing '{key}'")
    value = entry[key]
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InputError(f"{where}: '{key}' must be a number, got {value!r}")
    if isinstance(value, float) and not math.isfinite(value):
        raise InputError(f"{where}: '{key}' must be a finite number, got {value!r}")
    if value < 0:
        raise InputError(f"{where}: '{key}' is negative ({value})")
    if value > _MAX_NUMBER:
        raise InputError(f"{where}: '{key}' is implausibly large (over {_MAX_NUMBER:.0e}); "
                         "check its unit")
    return float(value)


def _int(entry: Mapping[str, Any], key: str, where: str) -> int:
    value = entry.get(key)
    if isinstance(value, bool) or not isinstance(value, int):
        raise InputError(f"{where}: '{key}' must be an integer, got {value!r}")
    return value


def _broker(raw: Any, index: int, capacities: Capacities | None) -> Broker:
    where = f"brokers[{index}]"
    if not isinstance(raw, Mapping):
        raise InputError(f"{where}: expected an object")
    broker_id = _int(raw, "id", where)
    where = f"broker {broker_id}"
    rack = raw.get("rack")
    if rack is not None and not isinstance(rack, str):
        raise InputError(f"{where}: 'rack' must be a string or null")
    cap_raw = raw.get("capacity")
    capacity: Capacity | None = None
    if cap_raw is not None:
        if not isinstance(cap_raw, Mapping):
            raise InputError(f"{where}: 'capacity' must be an object")
        missing = [k for k in CAPACITY_KEYS if k not in cap_raw]
        if missing and capacities is None:
            raise InputError(f"{where}: capacity lacks {', '.join(missing)}")
        if not missing:
            values = {k: _number(cap_raw, k, f"{where} capacity") for k in CAPACITY_KEYS}
            capacity = Capacity(**values)
    if capacities is not None:
        capacity = capacities.for_broker(broker_id, rack, capacity)
    if capacity is None:
        raise InputError(f"{where}: has no capacity; add 'capacity' to the snapshot "
                         "or pass --capacities FILE")
    alive = raw.get("alive", True)
    if not isinstance(alive, bool):
        raise InputError(f"{where}: 'alive' must be true or false")
    return Broker(broker_id, rack, capacity, alive)


def _partition(raw: Any, index: int) -> Partition:
    where = f"partitions[{index}]"
    if not isinstance(raw, Mapping):
        raise InputError(f"{where}: expected an object")
    topic = raw.get("topic")
    if not isinstance(topic, str) or not topic:
        raise InputError(f"{where}: 'topic' must be a non-empty string")
    number = _int(raw, "partition", where)
    where = f"partition {topic}-{number}"
    replicas = raw.get("replicas")
    if not isinstance(replicas, list) or not all(
        isinstance(r, int) and not isinstance(r, bool) for r in replicas
    ):
        raise InputError(f"{where}: 'replicas' must be a list of broker ids")
    size = _number(raw, "size_bytes", where, default=0.0)
    return Partition(
        topic, number, tuple(replicas), int(size),
        _number(raw, "bytes_in_per_sec", where, default=0.0),
        _number(raw, "bytes_out_per_sec", where, default=0.0),
    )


def _notes(raw: Any) -> tuple[str, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list) or not all(isinstance(n, str) for n in raw):
        raise InputError("'notes' must be a list of strings")
    return tuple(raw)


def topology_from_dict(doc: Mapping[str, Any], capacities: Capacities | None = None,
                       source: str = "snapshot") -> Topology:
    """Validate a snapshot document into a Topology; errors name the offending entry."""
    version = doc.get("version")
    if version != SNAPSHOT_VERSION:
        raise InputError(f"{source}: unsupported snapshot version {version!r} (expected 1)")
    brokers_raw, parts_raw = doc.get("brokers"), doc.get("partitions")
    if not isinstance(brokers_raw, list) or not isinstance(parts_raw, list):
        raise InputError(f"{source}: 'brokers' and 'partitions' must be lists")
    try:
        brokers = tuple(_broker(b, i, capacities) for i, b in enumerate(brokers_raw))
        partitions = tuple(_partition(p, i) for i, p in enumerate(parts_raw))
        notes = _notes(doc.get("notes"))
        topology = Topology(brokers, partitions, notes)
    except InputError as exc:
        raise InputError(f"{source}: {exc}") from None
    if capacities is not None:
        unknown = sorted(set(capacities.brokers) - set(topology.broker_ids))
        if unknown:
            raise InputError(f"capacities file names unknown broker {unknown[0]}")
        racks = {b.rack for b in topology.brokers if b.rack is not None}
        unknown_racks = sorted(set(capacities.racks) - racks)
        if unknown_racks:
            raise InputError(f"capacities file names unknown rack {unknown_racks[0]!r}; the "
                             f"cluster's racks are {sorted(racks) or 'none'}")
    return topology


def read_snapshot(path: Path, capacities: Capacities | None = None) -> Topology:
    """Read and validate a snapshot file."""
    return topology_from_dict(load_snapshot_dict(path), capacities, str(path))


def broker_to_dict(broker: Broker) -> dict[str, Any]:
    out: dict[str, Any] = {"id": broker.id, "rack": broker.rack, "capacity": {
        k: _compact(getattr(broker.capacity, k)) for k in CAPACITY_KEYS}}
    if not broker.alive:
        out["alive"] = False
    return out


def partition_to_dict(p: Partition) -> dict[str, Any]:
    return {"topic": p.topic, "partition": p.partition, "replicas": list(p.replicas),
            "size_bytes": p.size_bytes, "bytes_in_per_sec": p.bytes_in_per_sec,
            "bytes_out_per_sec": p.bytes_out_per_sec}


def _compact(value: float) -> float | int:
    return int(value) if float(value).is_integer() else value


def topology_to_dict(topology: Topology) -> dict[str, Any]:
    """The snapshot v1 document of a topology."""
    doc: dict[str, Any] = {
        "version": SNAPSHOT_VERSION,
        "brokers": [broker_to_dict(b) for b in topology.brokers],
        "partitions": [partition_to_dict(p) for p in topology.partitions],
    }
    if topology.notes:
        doc["notes"] = list(topology.notes)
    return doc


def write_json_atomic(path: Path, doc: Mapping[str, Any], indent: int | None = None) -> None:
    """Write JSON to a temp file in the same directory, fsync, then rename over `path`."""
    if path.is_dir():
        raise InputError(f"cannot write {path}: it is a directory; give a file name")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    except OSError as exc:
        raise InputError(f"cannot write {path}: {exc.strerror}; choose a writable path") from None
    umask = os.umask(0)
    os.umask(umask)
    os.fchmod(fd, 0o666 & ~umask)
    try:
        with os.fdopen(fd, "w") as fh:
            json.dump(doc, fh, indent=indent)
            fh.write("\n")
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_snapshot(path: Path, topology: Topology) -> None:
    """Write a topology as a snapshot v1 file."""
    write_json_atomic(path, topology_to_dict(topology))
