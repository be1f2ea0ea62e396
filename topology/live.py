"""Build a snapshot v1 document from a running cluster (KafkaAdmin) and, optionally, Prometheus.

Decisions, recorded in the snapshot's notes where they shape the numbers:
- Every partition is included. Internal topics (names starting with `__`, e.g.
  `__consumer_offsets`) take disk and network like any other, so they are kept, and marked
  `"internal": true` so a planner or an operator can leave them alone.
- A partition's size is the largest size any of its assigned replicas reports
  (DescribeLogDirs): the leader's in steady state, and robust to a follower catching up.
- The exporter only has per-topic byte rates, so each topic's rate is split over its partitions
  in proportion to their sizes (equally when all sizes are 0).
- Brokers that hold replicas but are not alive are listed with `"alive": false`.
- A partition being reassigned when read is recorded with the replicas it is moving to (Kafka
  lists the old and the new together until the copy ends), so a plan never sees RF + 1.
The splitting and merging logic is pure and lives in the functions below the reader.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from kafka_rebalance.core.errors import ClusterError, InputError
from kafka_rebalance.core.names import visible
from kafka_rebalance.core.ports import (
    BrokerInfo,
    BrokerLogDirs,
    KafkaAdmin,
    MetricsSource,
    PartitionInfo,
    ReassignmentState,
    replica_sizes,
)
from topology.capacities import CAPACITY_KEYS, Capacities
from topology.model import LogDir, Partition, ReplicaDirs, TopicPartition
from topology.promql import (
    DEFAULT_RATE_WINDOW,
    TOPIC_BYTES_IN_RATE,
    TOPIC_BYTES_OUT_RATE,
    TOPIC_REMOTE_LOG_SIZE_BYTES,
    TOPIC_REQUESTS_RATE,
    render,
)
from topology.snapshot import SNAPSHOT_VERSION, log_dir_to_dict, partition_to_dict
from topology.units import size_text

INTERNAL_TOPIC_PREFIX = "__"
_Rates = dict[TopicPartition, float]


@dataclass(frozen=True)
class LiveSnapshot:
    """A live snapshot: the v1 document (notes included) plus counts for a summary line."""

    document: dict[str, Any]
    notes: tuple[str, ...]
    broker_count: int
    partition_count: int
    topic_count: int
    total_size_bytes: int
    total_bytes_in_per_sec: float


def read_live_topology(admin: KafkaAdmin, metrics: MetricsSource | None = None,
                       capacities: Capacities | None = None,
                       rate_window: str = DEFAULT_RATE_WINDOW) -> LiveSnapshot:
    """Read brokers, partitions, sizes and (with `metrics`) byte rates into a snapshot."""
    notes: list[str] = []
    live_brokers = admin.brokers()
    infos = admin.partitions()
    live_ids = {b.id for b in live_brokers}
    log_dirs = admin.log_dirs(sorted(live_ids))
    silent = sorted(live_ids - set(log_dirs))
    if silent:  # registered, but gone: killed moments ago, not fenced yet
        notes.append(f"broker(s) {silent} are registered but did not answer (killed, and not "
                     "yet fenced by the controller?): recorded as not alive")
        live_brokers = [b for b in live_brokers if b.id not in silent]
        live_ids -= set(silent)
    sizes, unsized = partition_sizes(infos, replica_sizes(log_dirs))
    if unsized:
        notes.append(f"{len(unsized)} partition(s) had no replica size reported (offline "
                     f"replicas?) and are recorded with size 0, e.g. {unsized[0]}")
    infos = _as_reassigned(infos, _reassignments(admin, notes), notes)
    rates_in: dict[TopicPartition, float] = {}
    rates_out: dict[TopicPartition, float] = {}
    remote: Mapping[TopicPartition, float] = {}
    requests: Mapping[TopicPartition, float] = {}
    if metrics is None:
        notes.append("no Prometheus given: byte rates are recorded as 0")
    else:
        rates_in, rates_out = _read_rates(metrics, sizes, rate_window, notes)
        remote = _remote_sizes(metrics, sizes, notes)
        requests = _request_rates(metrics, sizes, rate_window, notes)
    partitions = [Partition(p.topic, p.partition, p.replicas, sizes.get(p.key, 0),
                            rates_in.get(p.key, 0.0), rates_out.get(p.key, 0.0),
                            round(remote.get(p.key, 0.0)),
                            round(requests.get(p.key, 0.0), 3))
                  for p in infos]
    brokers = broker_entries(live_brokers, infos, capacities, admin.registered_racks())
    cordoned = admin.cordoned_brokers(sorted(live_ids))
    windows = admin.quota_windows(sorted(live_ids))  # the executor waits them out; the
    for entry in brokers:  # review's ETA counts them
        if entry["id"] in cordoned:
            entry["cordoned"] = True
        if entry["id"] in windows:
            entry["quota_window_seconds"] = windows[entry["id"]]
    if cordoned:
        notes.append(f"broker(s) {sorted(cordoned)} are cordoned (cordoned.log.dirs): listed "
                     "with cordoned=true; a plan puts no new replica on them")
    replica_dirs = _jbod(log_dirs, brokers, notes)
    notes.extend(_broker_notes(brokers))
    notes.extend(_partition_notes(infos))
    document = snapshot_document(brokers, partitions, notes, replica_dirs)
    return LiveSnapshot(
        document=document, notes=tuple(notes), broker_count=len(brokers),
        partition_count=len(partitions), topic_count=len({p.topic for p in partitions}),
        total_size_bytes=sum(p.size_bytes for p in partitions),
        total_bytes_in_per_sec=sum(p.bytes_in_per_sec for p in partitions),
    )


def _reassignments(admin: KafkaAdmin, notes: list[str]
                   ) -> Mapping[TopicPartition, ReassignmentState]:
    try:
        return admin.list_partition_reassignments()
    except ClusterError as exc:
        notes.append(f"reassignments in flight could not be listed ({exc}): a partition "
                     "being reassigned is recorded with its old and new replicas together")
        return {}


def _as_reassigned(infos: Sequence[PartitionInfo],
                   moving: Mapping[TopicPartition, ReassignmentState],
                   notes: list[str]) -> list[PartitionInfo]:
    """`infos` with each partition in flight at the replicas it is moving to: Kafka lists the
    replicas being removed beside the target ones until the copy ends."""
    out = list(infos)
    if not moving:
        return out
    changed: list[str] = []
    for i, p in enumerate(out):
        state = moving.get(p.key)
        if state is None:
            continue
        target = tuple(b for b in p.replicas if b not in state.removing)
        if target and target != p.replicas:
            changed.append(f"{p.key} {list(p.replicas)} -> {list(target)}")
            out[i] = replace(p, replicas=target, isr=tuple(b for b in p.isr if b in target))
    if changed:
        notes.append(f"{len(changed)} partition(s) were being reassigned and are recorded with "
                     f"the replicas they are moving to, e.g. {changed[0]}")
    return out


def _read_rates(metrics: MetricsSource, sizes: Mapping[TopicPartition, int], window: str,
                notes: list[str]) -> tuple[_Rates, _Rates]:
    in_query = render(TOPIC_BYTES_IN_RATE, window)
    out_query = render(TOPIC_BYTES_OUT_RATE, window)
    topic_in = topic_rates(metrics.query(in_query))
    topic_out = topic_rates(metrics.query(out_query))
    topics = {tp.topic for tp in sizes}
    if not (set(topic_in) | set(topic_out)) & topics:
        notes.append(f"Prometheus has no per-topic byte rates for this cluster's topics "
                     f"({in_query}): byte rates are recorded as 0")
    notes.append(f"byte rates are per-topic Prometheus rates over {window} "
                 "(kafka_topic_bytes_in_total / kafka_topic_bytes_out_total summed over "
                 "brokers) split over each topic's partitions in proportion to partition size "
                 "(equally when all sizes are 0)")
    return split_topic_rates(topic_in, sizes), split_topic_rates(topic_out, sizes)


def _request_rates(metrics: MetricsSource, sizes: Mapping[TopicPartition, int], window: str,
                   notes: list[str]) -> Mapping[TopicPartition, float]:
    """Produce and fetch requests a second per partition (for `plan --request-balance`): per
    topic from the brokers' request meters, split over its partitions by size. None recorded
    when Prometheus has no request series (snapshots then read as before)."""
    topic_requests = {t: v for t, v in topic_rates(metrics.query(
        render(TOPIC_REQUESTS_RATE, window))).items() if v > 0}
    if not topic_requests.keys() & {tp.topic for tp in sizes}:
        return {}
    notes.append(f"request rates are per-topic Prometheus rates over {window} "
                 "(kafka_topic_produce_requests_total + kafka_topic_fetch_requests_total summed "
                 "over brokers) split over each topic's partitions in proportion to partition "
                 "size; a partition's requests count on its leader")
    return split_topic_rates(topic_requests, sizes)


def _remote_sizes(metrics: MetricsSource, sizes: Mapping[TopicPartition, int],
                  notes: list[str]) -> Mapping[TopicPartition, float]:
    """Bytes each partition keeps in remote storage (tiered storage): per topic from the
    brokers' RemoteLogSizeBytes, split over its partitions by their local size."""
    topic_remote = {t: v for t, v in topic_rates(metrics.query(
        render(TOPIC_REMOTE_LOG_SIZE_BYTES))).items() if v > 0}
    if not topic_remote:
        return {}
    remote = split_topic_rates(topic_remote, sizes)
    total = sum(remote.values())
    notes.append(f"tiered storage: {len(topic_remote)} topic(s) keep {size_text(total)} in remote "
                 "storage (kafka_topic_remote_log_size_bytes, RemoteLogSizeBytes summed over "
                 "brokers, split over each topic's partitions in proportion to local size); "
                 "size_bytes is what is local, which is all a broker holds and a move copies")
    return remote


def _jbod(log_dirs: Mapping[int, BrokerLogDirs], brokers: Sequence[dict[str, Any]],
          notes: list[str]) -> ReplicaDirs:
    """The log dirs of brokers with several (JBOD, KIP-858) into their `brokers` entries, and the
    dir of each of their replicas. An offline dir is left out: it takes no replica."""
    several = {b: dirs for b, dirs in log_dirs.items() if len(dirs.dirs) > 1}
    if not several:
        return {}
    offline = {b: [d.path for d in dirs.dirs if not d.online] for b, dirs in several.items()}
    for entry in brokers:
        dirs = several.get(entry["id"])
        if dirs is not None:
            entry["log_dirs"] = [log_dir_to_dict(LogDir(d.path, d.total_bytes, d.cordoned,
                                                        d.usable_bytes))
                                 for d in dirs.dirs if d.online]
    notes.append(f"{len(several)} broker(s) keep replicas in several log dirs (JBOD): each dir "
                 "is listed with its volume's size, and each replica with its dir")
    for broker, paths in sorted(offline.items()):
        if paths:
            notes.append(f"broker {broker}: log dir(s) {', '.join(map(visible, paths))} offline "
                         "(left out: they take no replica)")
    return {(tp, b): path for b, dirs in several.items()
            for tp, (path, _) in dirs.replicas.items()}


def snapshot_document(brokers: Sequence[Mapping[str, Any]], partitions: Iterable[Partition],
                      notes: Sequence[str], replica_dirs: ReplicaDirs | None = None
                      ) -> dict[str, Any]:
    """The v1 document: brokers by id, partitions by (topic, partition), internal ones marked;
    with `replica_dirs`, each replica on a JBOD broker names its log dir."""
    parts = []
    for p in sorted(partitions, key=lambda p: (p.topic, p.partition)):
        entry = partition_to_dict(p, replica_dirs)
        if is_internal(p.topic):
            entry["internal"] = True
        parts.append(entry)
    doc: dict[str, Any] = {"version": SNAPSHOT_VERSION,
                           "brokers": sorted((dict(b) for b in brokers), key=lambda b: b["id"]),
                           "partitions": parts}
    if notes:
        doc["notes"] = list(notes)
    return doc


def is_internal(topic: str) -> bool:
    """Kafka's internal topics (`__consumer_offsets`, `__transaction_state`, ...)."""
    return topic.startswith(INTERNAL_TOPIC_PREFIX)


def partition_sizes(
    partitions: Iterable[PartitionInfo], replica_sizes: Mapping[tuple[TopicPartition, int], int]
) -> tuple[dict[TopicPartition, int], list[TopicPartition]]:
    """Each partition's size: the largest of its assigned replicas' sizes.

    Also returns the partitions no assigned replica reported (size 0 recorded), sorted.
    """
    sizes: dict[TopicPartition, int] = {}
    unsized: list[TopicPartition] = []
    for p in partitions:
        reported = [replica_sizes[(p.key, b)] for b in p.replicas if (p.key, b) in replica_sizes]
        sizes[p.key] = max(reported) if reported else 0
        if not reported:
            unsized.append(p.key)
    return sizes, sorted(unsized, key=lambda tp: (tp.topic, tp.partition))


def topic_rates(samples: Iterable[tuple[Mapping[str, str], float]]) -> dict[str, float]:
    """Per-topic rates from query samples labelled `topic` (summing duplicates, clamping < 0)."""
    rates: dict[str, float] = defaultdict(float)
    for labels, value in samples:
        topic = labels.get("topic")
        if topic:
            rates[topic] += max(0.0, value)
    return dict(rates)


def split_topic_rates(rates: Mapping[str, float],
                      sizes: Mapping[TopicPartition, int]) -> dict[TopicPartition, float]:
    """Split each topic's rate over its partitions in proportion to size (equal if all 0).

    Topics without a rate get 0 for every partition; rates of unknown topics are ignored.
    """
    by_topic: dict[str, list[TopicPartition]] = defaultdict(list)
    for tp in sizes:
        by_topic[tp.topic].append(tp)
    out: dict[TopicPartition, float] = {}
    for topic, members in by_topic.items():
        rate = rates.get(topic, 0.0)
        total = sum(sizes[tp] for tp in members)
        for tp in members:
            share = sizes[tp] / total if total > 0 else 1.0 / len(members)
            out[tp] = rate * share
    return out


def broker_entries(live: Sequence[BrokerInfo], partitions: Iterable[PartitionInfo],
                   capacities: Capacities | None,
                   registered: Mapping[int, str | None] | None = None) -> list[dict[str, Any]]:
    """Snapshot broker entries: live brokers, plus `alive: false` ones replicas still name,
    with the rack the controller still has registered for them (`registered`, KIP-1073), or
    none when it has no record (the broker was unregistered).

    With `capacities`, each entry carries the resolved capacity; without, it has none.
    """
    entries: dict[int, dict[str, Any]] = {b.id: {"id": b.id, "rack": b.rack} for b in live}
    for p in partitions:
        for replica in p.replicas:
            if replica not in entries:
                rack = (registered or {}).get(replica)
                entries[replica] = {"id": replica, "rack": rack, "alive": False}
    if capacities is not None:
        unknown = sorted(set(capacities.brokers) - set(entries))
        if unknown:
            raise InputError(f"capacities file names unknown broker {unknown[0]}; the cluster "
                             f"has brokers {sorted(entries)}")
        for entry in entries.values():
            cap = capacities.for_broker(entry["id"], entry["rack"])
            entry["capacity"] = {k: _compact(getattr(cap, k)) for k in CAPACITY_KEYS}
    return [entries[i] for i in sorted(entries)]


def _compact(value: float) -> float | int:
    return int(value) if float(value).is_integer() else value


def _broker_notes(brokers: Sequence[Mapping[str, Any]]) -> list[str]:
    dead = [b for b in brokers if b.get("alive") is False]
    notes = []
    known = [f"{b['id']} (rack {b['rack']})" for b in dead if b["rack"] is not None]
    if known:
        notes.append(f"broker(s) {', '.join(known)} hold replicas but are not alive: listed "
                     "with alive=false and the rack the controller still has registered")
    unknown = [str(b["id"]) for b in dead if b["rack"] is None]
    if unknown:
        notes.append(f"broker(s) {', '.join(unknown)} hold replicas but are not alive and not "
                     "registered: listed with alive=false and an unknown rack, which "
                     "counts as no rack of its own")
    return notes


def _partition_notes(partitions: Sequence[PartitionInfo]) -> list[str]:
    notes = []
    internal = sorted({p.topic for p in partitions if is_internal(p.topic)})
    if internal:
        notes.append(f"internal topics ({', '.join(internal)}) are included and marked "
                     "\"internal\": true")
    offline = [p for p in partitions if p.leader is None]
    if offline:
        notes.append(f"{len(offline)} partition(s) have no leader, e.g. {offline[0].key}")
    under = [p for p in partitions if p.leader is not None and set(p.replicas) - set(p.isr)]
    if under:
        notes.append(f"{len(under)} partition(s) are under-replicated, e.g. {under[0].key}")
    return notes
