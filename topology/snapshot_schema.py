"""Snapshot format v1 (DESIGN.md) as a declared schema, and its conversion to the model values.

Unknown keys: every key of a broker, its capacity and a partition must be known. These are the
tool's own records, and a key it does not read is either misspelt, which silently drops data
(`sizebytes` left every partition at 0 bytes), or written by a newer version, whose data this
one would silently lose. At the top level, unknown keys are ignored as DESIGN.md says (a
snapshot may carry annotations of other tools) unless they are close to a known key.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Required, cast

from pydantic import ConfigDict, TypeAdapter, ValidationError, with_config
from typing_extensions import TypedDict

from kafka_rebalance.core.errors import InputError, problems_message
from topology.capacities import CAPACITY_KEYS, Capacities, implausible_capacity
from topology.documents import parse_json
from topology.model import (
    Broker,
    Capacity,
    LogDir,
    Partition,
    TopicPartition,
    Topology,
    is_kafka_id,
    is_topic_name,
    topology_problems,
)
from topology.schema import (
    BROKER_IDS,
    STRINGS,
    Flag,
    KafkaId,
    Labeler,
    Loc,
    Positive,
    Quantity,
    Text,
    TopicName,
    describe,
    near_misses,
)

SNAPSHOT_VERSION = 1
TOP_LEVEL_KEYS = ("version", "brokers", "partitions", "notes")
_FORBID = ConfigDict(extra="forbid")


@with_config(_FORBID)
class CapacityEntry(TypedDict, total=False):
    disk_bytes: Positive
    net_in_bytes_per_sec: Positive
    net_out_bytes_per_sec: Positive
    requests_per_sec: Positive | None  # produce and fetch requests it can serve a second


@with_config(_FORBID)
class LogDirEntry(TypedDict, total=False):
    path: Required[Text]
    capacity_bytes: Positive | None  # the size of the volume the dir is on
    cordoned: Flag  # this dir cordoned (KIP-1066): no new replica in it
    free_bytes: Quantity | None  # free space on the volume when read


@with_config(_FORBID)
class BrokerEntry(TypedDict, total=False):
    id: Required[KafkaId]
    rack: Text | None
    capacity: CapacityEntry | None
    alive: Flag
    cordoned: Flag  # every log dir cordoned (KIP-1066): no new replica
    log_dirs: list[LogDirEntry] | None  # JBOD (KIP-858) brokers only: their log dirs
    quota_window_seconds: Positive  # replication.quota.window.num x .size.seconds, as read


@with_config(_FORBID)
class PartitionEntry(TypedDict, total=False):
    topic: Required[TopicName]
    partition: Required[KafkaId]
    replicas: Required[list[KafkaId]]
    size_bytes: Quantity | None
    bytes_in_per_sec: Quantity | None
    bytes_out_per_sec: Quantity | None
    # tiered storage (KIP-405): bytes in remote storage; size_bytes is then the local part
    remote_size_bytes: Quantity | None
    # produce and consumer fetch requests a second, served by its leader
    requests_per_sec: Quantity | None
    # the log dir of each replica, in the order of replicas (null: a broker with one dir)
    log_dirs: list[Text | None] | None
    internal: Flag  # written by live snapshots for Kafka's internal topics


@with_config(ConfigDict(extra="allow"))
class SnapshotDocument(TypedDict, total=False):
    version: Required[Any]
    brokers: Required[list[BrokerEntry]]
    partitions: Required[list[PartitionEntry]]
    notes: list[Text] | None


_ADAPTER = TypeAdapter(SnapshotDocument)
_NOUNS = {"replicas": BROKER_IDS, "notes": STRINGS, "rack": "a string or null",
          "brokers": "a list of broker objects", "partitions": "a list of partition objects",
          "capacity": "an object of disk_bytes, net_in_bytes_per_sec, net_out_bytes_per_sec"}


def validate_snapshot_json(text: str, source: str) -> SnapshotDocument:
    """A snapshot file's document, parsed and checked in one pass; InputError names every
    problem (up to a cap) with its entry and key. A file's capacities are also held to the
    bounds of a capacities file (1 EB, 1 TB/s): people write them."""
    try:
        doc = _ADAPTER.validate_json(text)
    except ValidationError as exc:
        raise _refusal(parse_json(text, source), exc, source) from None
    _check_top_level(doc, source)
    problems = _implausible_capacities(doc)
    if problems:
        raise InputError(f"{source}: {problems_message(problems)}")
    return doc


def validate_snapshot(raw: object, source: str) -> SnapshotDocument:
    """The same checks for a document already in memory (a live cluster's, whose capacities
    may be the 'unbounded' 1e15 that execute and auto give brokers without a capacities file)."""
    try:
        doc = _ADAPTER.validate_python(_envelope(raw, source))
    except ValidationError as exc:
        raise _refusal(raw, exc, source) from None
    _check_top_level(doc, source)
    return doc


def _envelope(raw: object, source: str) -> dict[str, Any]:
    """`raw` once it is a version-1 snapshot object."""
    if not isinstance(raw, dict):
        raise InputError(f"{source}: expected a JSON object with version, brokers, partitions")
    if "moves" in raw and "brokers" not in raw:
        raise InputError(f"{source}: this is a plan file, not a cluster snapshot; "
                         f"`rebalance diff {source}` reviews a plan, and `rebalance snapshot` "
                         "takes a snapshot")
    version = raw.get("version")
    if version != SNAPSHOT_VERSION or isinstance(version, bool):
        raise InputError(f"{source}: unsupported snapshot version {version!r} (expected 1)")
    return raw


def _check_top_level(doc: Mapping[str, Any], source: str) -> None:
    _envelope(doc, source)
    problems = near_misses(doc.keys(), TOP_LEVEL_KEYS)
    if problems:
        raise InputError(f"{source}: {problems_message(problems)}")


def _implausible_capacities(doc: SnapshotDocument) -> list[str]:
    problems: list[str] = []
    for broker in doc["brokers"]:
        values = cast(Mapping[str, float], broker.get("capacity") or {})  # checked: numbers
        problems.extend(f"broker {broker['id']} capacity: '{key}' {why}"
                        for key, value in values.items()
                        if value is not None and (why := implausible_capacity(key, value)))
    return problems


def _refusal(raw: object, exc: ValidationError, source: str) -> InputError:
    doc = _envelope(raw, source)
    missed = near_misses(doc.keys(), TOP_LEVEL_KEYS)
    described, total = describe(exc, SnapshotDocument, _labeler(doc), _NOUNS)
    return InputError(f"{source}: {problems_message(missed + described, len(missed) + total)}")


def _labeler(raw: Mapping[str, Any]) -> Labeler:
    """Names a broker by its id and a partition by topic-number where the file's are valid."""

    def label(loc: Loc) -> str | None:
        if len(loc) != 2 or not isinstance(loc[0], str) or not isinstance(loc[1], int):
            return None
        entries = raw.get(loc[0])
        entry = entries[loc[1]] if isinstance(entries, list) else None
        if not isinstance(entry, dict):
            return None
        if loc[0] == "brokers" and is_kafka_id(entry.get("id")):
            return f"broker {entry['id']}"
        topic, number = entry.get("topic"), entry.get("partition")
        if loc[0] == "partitions" and isinstance(topic, str) and is_topic_name(topic) \
                and is_kafka_id(number):
            return f"partition {topic}-{number}"
        return None

    return label


def to_topology(doc: SnapshotDocument, capacities: Capacities | None) -> Topology:
    """The Topology of a valid document (capacities resolved); InputError names every broker
    or partition the model refuses (up to a cap)."""
    problems: list[str] = []
    uncapped: list[int] = []
    brokers = [b for b in (_broker(e, capacities, problems, uncapped) for e in doc["brokers"])
               if b]
    if uncapped:
        shown = ", ".join(map(str, uncapped[:10])) + (", ..." if len(uncapped) > 10 else "")
        problems.insert(0, f"{len(uncapped)} broker(s) have no capacity ({shown}): pass "
                           "--capacities FILE (see examples/capacities.yaml), or add "
                           "'capacity' to each broker in the snapshot")
    partitions = _partitions(doc["partitions"], problems)
    problems.extend(rack_problems(brokers))
    dirs = _replica_dirs(doc["partitions"], problems)
    if problems:  # the entries the model took may still clash: name those problems too
        ids = [entry["id"] for entry in doc["brokers"]]
        raise InputError(problems_message(problems + topology_problems(ids, partitions)))
    return Topology(tuple(brokers), partitions, tuple(doc.get("notes") or ()), dirs)


def _whole(value: float | None) -> int | None:
    return None if value is None else int(value)


def _replica_dirs(entries: Sequence[PartitionEntry], problems: list[str]
                  ) -> dict[tuple[TopicPartition, int], str]:
    """The log dir of each replica that names one (JBOD brokers), keyed by (partition, broker)."""
    out: dict[tuple[TopicPartition, int], str] = {}
    for e in entries:
        dirs = e.get("log_dirs")
        if dirs is None:
            continue
        if len(dirs) != len(e["replicas"]):
            problems.append(f"partition {e['topic']}-{e['partition']}: log_dirs names "
                            f"{len(dirs)} dir(s) for {len(e['replicas'])} replica(s); give one "
                            "per replica, in the order of replicas (null for a one-dir broker)")
            continue
        key = TopicPartition(e["topic"], e["partition"])
        out.update({(key, b): d for b, d in zip(e["replicas"], dirs, strict=True)
                    if d is not None})
    return out


def _broker(entry: BrokerEntry, capacities: Capacities | None, problems: list[str],
            uncapped: list[int]) -> Broker | None:
    """The entry's Broker; its problem in `problems`, or its id in `uncapped` when it has no
    capacity (one line names them all)."""
    broker_id, rack = entry["id"], entry.get("rack")
    where = f"broker {broker_id}"
    cap_entry = entry.get("capacity")
    capacity: Capacity | None = None
    try:
        if cap_entry is not None:
            missing = [k for k in CAPACITY_KEYS if k not in cap_entry]
            if missing and capacities is None:
                raise InputError(f"{where}: capacity lacks {', '.join(missing)}")
            if not missing:
                capacity = Capacity(**cap_entry)
        if capacities is not None:
            capacity = capacities.for_broker(broker_id, rack, capacity)
        if capacity is None:
            uncapped.append(broker_id)
            return None
        log_dirs = tuple(LogDir(d["path"], _whole(d.get("capacity_bytes")),
                                d.get("cordoned", False), _whole(d.get("free_bytes")))
                         for d in entry.get("log_dirs") or ())
        return Broker(broker_id, rack, capacity, entry.get("alive", True),
                      entry.get("cordoned", False), log_dirs,
                      entry.get("quota_window_seconds"))
    except InputError as exc:
        problems.append(str(exc))
        return None


def _partitions(entries: Sequence[PartitionEntry], problems: list[str]) -> tuple[Partition, ...]:
    """The hot loop of a read (up to 400,000 entries): one constructor call per entry."""
    out = []
    for e in entries:
        try:
            out.append(Partition(e["topic"], e["partition"], tuple(e["replicas"]),
                                 int(e.get("size_bytes") or 0), e.get("bytes_in_per_sec") or 0.0,
                                 e.get("bytes_out_per_sec") or 0.0,
                                 int(e.get("remote_size_bytes") or 0),
                                 e.get("requests_per_sec") or 0.0))
        except InputError as exc:
            problems.append(str(exc))
    return tuple(out)


def rack_problems(brokers: Sequence[Broker]) -> list[str]:
    """Live brokers must all have a rack or all lack one, as Kafka's own tools require for
    rack-aware assignment ("Not all brokers have rack information"). Dead brokers are left out:
    a live snapshot lists them with no rack, since the cluster no longer says."""
    padded = [b for b in brokers if b.rack is not None and b.rack != b.rack.strip()]
    if padded:  # Kafka trims broker.rack: "a " and "a" would read as one rack there, two here
        return [f"broker {b.id}: rack {b.rack!r} has blanks around it, which Kafka trims from "
                f"broker.rack (a hand edit?): write {str(b.rack).strip()!r}"
                if str(b.rack).strip() else
                f"broker {b.id}: rack {b.rack!r} is blank (a hand edit?): write the rack's name, "
                "or null for a broker without one"
                for b in padded[:10]]
    empty = [b.id for b in brokers if b.rack == ""]
    if empty:  # shown as nothing in every table, it reads as "no rack" while counting as one
        return [f"broker(s) {', '.join(map(str, empty[:10]))}: rack '' is empty (a hand edit?): "
                "write the rack's name, or null for a broker without one"]
    live = [b for b in brokers if b.alive]
    rackless = [b.id for b in live if b.rack is None]
    if not rackless or len(rackless) == len(live):
        return []
    racks = sorted({b.rack for b in live if b.rack is not None})
    shown = ", ".join(map(str, rackless[:10])) + (", ..." if len(rackless) > 10 else "")
    return [f"broker(s) {shown} have no rack while the other live brokers do ({', '.join(racks)})"
            ": Kafka's tools refuse rack-aware assignment on such a cluster; set broker.rack "
            "('rack' in a snapshot) on every live broker, or on none to plan without racks"]
