"""Snapshot format v1 (DESIGN.md): read, validate and write the topology JSON file.

Brokers may lack a capacity in the file (a live snapshot taken without a capacities file);
such a snapshot needs a capacities file before it becomes a Topology.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from kafka_rebalance.core.errors import InputError
from topology.capacities import CAPACITY_KEYS, Capacities
from topology.documents import bulk_objects, read_text, write_json_atomic
from topology.model import Broker, LogDir, Partition, ReplicaDirs, Topology
from topology.snapshot_schema import SNAPSHOT_VERSION as SNAPSHOT_VERSION
from topology.snapshot_schema import (
    SnapshotDocument,
    to_topology,
    validate_snapshot,
    validate_snapshot_json,
)


def topology_from_dict(doc: Mapping[str, Any], capacities: Capacities | None = None,
                       source: str = "snapshot") -> Topology:
    """Validate a snapshot document into a Topology; errors name every offending entry."""
    with bulk_objects():
        return _topology(validate_snapshot(doc, source), capacities, source)


def read_snapshot(path: Path, capacities: Capacities | None = None) -> Topology:
    """Read and validate a snapshot file (parsed and checked in one pass of pydantic-core)."""
    text = read_text(path, "snapshot")
    with bulk_objects():
        return _topology(validate_snapshot_json(text, str(path)), capacities, str(path))


def _topology(doc: SnapshotDocument, capacities: Capacities | None, source: str) -> Topology:
    try:
        topology = to_topology(doc, capacities)
    except InputError as exc:
        raise InputError(f"{source}: {exc}") from None
    if capacities is not None:
        _check_capacities_match(capacities, topology)
    return topology


def _check_capacities_match(capacities: Capacities, topology: Topology) -> None:
    unknown = sorted(set(capacities.brokers) - set(topology.broker_ids))
    if unknown:
        raise InputError(f"capacities file names unknown broker {unknown[0]}")
    racks = {b.rack for b in topology.brokers if b.rack is not None}
    unknown_racks = sorted(set(capacities.racks) - racks)
    if unknown_racks:
        raise InputError(f"capacities file names unknown rack {unknown_racks[0]!r}; the "
                         f"cluster's racks are {sorted(racks) or 'none'}")


def broker_to_dict(broker: Broker) -> dict[str, Any]:
    out: dict[str, Any] = {"id": broker.id, "rack": broker.rack, "capacity": {
        k: _compact(getattr(broker.capacity, k)) for k in CAPACITY_KEYS}}
    if broker.capacity.requests_per_sec is not None:
        out["capacity"]["requests_per_sec"] = _compact(broker.capacity.requests_per_sec)
    if not broker.alive:
        out["alive"] = False
    if broker.cordoned:
        out["cordoned"] = True
    if broker.log_dirs:  # JBOD brokers only: other snapshots read as before
        out["log_dirs"] = [log_dir_to_dict(d) for d in broker.log_dirs]
    if broker.quota_window_seconds is not None:
        out["quota_window_seconds"] = _compact(broker.quota_window_seconds)
    return out


def log_dir_to_dict(log_dir: LogDir) -> dict[str, Any]:
    """A log dir's entry in a broker's `log_dirs` (a snapshot's, or a live read's)."""
    out: dict[str, Any] = {"path": log_dir.path}
    if log_dir.capacity_bytes is not None:
        out["capacity_bytes"] = log_dir.capacity_bytes
    if log_dir.cordoned:
        out["cordoned"] = True
    if log_dir.free_bytes is not None:
        out["free_bytes"] = log_dir.free_bytes
    return out


def partition_to_dict(p: Partition, replica_dirs: ReplicaDirs | None = None) -> dict[str, Any]:
    """A partition's entry; with `replica_dirs`, the log dir of each replica on a JBOD broker."""
    entry: dict[str, Any] = {"topic": p.topic, "partition": p.partition,
                             "replicas": list(p.replicas), "size_bytes": p.size_bytes,
                             "bytes_in_per_sec": p.bytes_in_per_sec,
                             "bytes_out_per_sec": p.bytes_out_per_sec}
    if p.remote_size_bytes:  # tiered storage only: other snapshots read as before
        entry["remote_size_bytes"] = p.remote_size_bytes
    if p.requests_per_sec:  # only when request rates were read: other snapshots as before
        entry["requests_per_sec"] = p.requests_per_sec
    if replica_dirs:
        dirs = [replica_dirs.get((p.key, b)) for b in p.replicas]
        if any(d is not None for d in dirs):
            entry["log_dirs"] = dirs
    return entry


def _compact(value: float) -> float | int:
    return int(value) if float(value).is_integer() else value


def topology_to_dict(topology: Topology) -> dict[str, Any]:
    """The snapshot v1 document of a topology."""
    doc: dict[str, Any] = {
        "version": SNAPSHOT_VERSION,
        "brokers": [broker_to_dict(b) for b in topology.brokers],
        "partitions": [partition_to_dict(p, topology.replica_dirs) for p in topology.partitions],
    }
    if topology.notes:
        doc["notes"] = list(topology.notes)
    return doc


def write_snapshot(path: Path, topology: Topology) -> None:
    """Write a topology as a snapshot v1 file."""
    write_json_atomic(path, topology_to_dict(topology))
