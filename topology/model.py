"""The cluster model as frozen values: brokers with racks and capacities, partitions, topology.

Constructors validate, so a value that exists is consistent; no I/O happens here.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from enum import StrEnum
from functools import lru_cache

from kafka_rebalance.core.errors import InputError, problems_message
from kafka_rebalance.core.names import (
    TopicPartition as TopicPartition,  # the model's name for a partition, re-exported
)
from kafka_rebalance.core.names import visible

INT32_MAX = 2**31 - 1
"""Kafka's broker ids and partition numbers are 32-bit integers (and never negative)."""

TOPIC_CHARS = "[a-zA-Z0-9._-]+"
TOPIC_MAX_LENGTH = 249
TOPIC_NOUN = ("a Kafka topic name (1 to 249 characters of a-z, A-Z, 0-9, '.', '_' and '-', "
              "not '.' or '..')")
_TOPIC = re.compile(TOPIC_CHARS)


@lru_cache(maxsize=8192)
def is_topic_name(name: str) -> bool:
    """True for a name Kafka accepts for a topic (cached: a topic has many partitions)."""
    return (0 < len(name) <= TOPIC_MAX_LENGTH and name not in (".", "..")
            and _TOPIC.fullmatch(name) is not None)


def is_kafka_id(value: object) -> bool:
    """True for a broker id or partition number: an int (not a bool) in [0, 2**31)."""
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= INT32_MAX


class Resource(StrEnum):
    """A broker resource the planner balances."""

    DISK = "disk"
    NET_IN = "net_in"
    NET_OUT = "net_out"


RESOURCES: tuple[Resource, ...] = (Resource.DISK, Resource.NET_IN, Resource.NET_OUT)


class PerResource:
    """A value with one number per resource (a broker's capacity, or its load)."""

    __slots__ = ()
    disk_bytes: float
    net_in_bytes_per_sec: float
    net_out_bytes_per_sec: float

    def of(self, resource: Resource) -> float:
        """The number for one resource."""
        if resource is Resource.DISK:
            return self.disk_bytes
        if resource is Resource.NET_IN:
            return self.net_in_bytes_per_sec
        return self.net_out_bytes_per_sec


@dataclass(frozen=True, slots=True)
class Capacity(PerResource):
    """What one broker can hold (bytes) and carry (bytes per second); `requests_per_sec`: the
    produce and fetch requests it can serve a second (None: not given, brokers then count as
    equal for `plan --request-balance`)."""

    disk_bytes: float
    net_in_bytes_per_sec: float
    net_out_bytes_per_sec: float
    requests_per_sec: float | None = None

    def __post_init__(self) -> None:
        names = ("disk_bytes", "net_in_bytes_per_sec", "net_out_bytes_per_sec",
                 *(("requests_per_sec",) if self.requests_per_sec is not None else ()))
        for name in names:
            value = getattr(self, name)
            if (not isinstance(value, int | float) or isinstance(value, bool) or not value > 0
                    or not math.isfinite(value)):
                raise InputError(f"capacity {name} must be a positive finite number, "
                                 f"got {value!r}")


@dataclass(frozen=True, slots=True)
class Load(PerResource):
    """Load on a broker in the same units as Capacity."""

    disk_bytes: float = 0.0
    net_in_bytes_per_sec: float = 0.0
    net_out_bytes_per_sec: float = 0.0

    def __add__(self, other: Load) -> Load:
        return Load(
            self.disk_bytes + other.disk_bytes,
            self.net_in_bytes_per_sec + other.net_in_bytes_per_sec,
            self.net_out_bytes_per_sec + other.net_out_bytes_per_sec,
        )


LOG_DIR_MAX_LENGTH = 4096


@dataclass(frozen=True, slots=True)
class LogDir:
    """One log dir of a broker that has several (JBOD, KIP-858): its path as the broker names
    it, the size of the volume it is on (None: unknown, the broker's dirs then count as equal),
    whether it is cordoned (KIP-1066: it gets no new replica) and the free space on its
    volume when read (no replica goes where it would not fit)."""

    path: str
    capacity_bytes: int | None = None
    cordoned: bool = False
    free_bytes: int | None = None  # free on its volume when read (None: unknown)

    def __post_init__(self) -> None:
        if self.free_bytes is not None and self.free_bytes < 0:
            raise InputError(f"log dir {visible(str(self.path))}: free_bytes must not be "
                             f"negative, got {self.free_bytes!r}")
        if not isinstance(self.path, str) or not 0 < len(self.path) <= LOG_DIR_MAX_LENGTH:
            raise InputError(f"log dir {self.path!r}: a path must be a string of 1 to "
                             f"{LOG_DIR_MAX_LENGTH} characters")
        if self.capacity_bytes is not None and self.capacity_bytes <= 0:
            raise InputError(f"log dir {visible(self.path)}: capacity_bytes must be positive, "
                             f"got {self.capacity_bytes!r}")


@dataclass(frozen=True, slots=True)
class Broker:
    """A broker: id, rack (None when the cluster sets no broker.rack) and capacity; `cordoned`:
    every log dir of it is cordoned (KIP-1066 `cordoned.log.dirs`): it gets no new replica.
    `log_dirs`: its log dirs when it has more than one (JBOD), else empty.
    `quota_window_seconds`: its replication quota window as read (None: not read)."""

    id: int
    rack: str | None
    capacity: Capacity
    alive: bool = True
    cordoned: bool = False
    log_dirs: tuple[LogDir, ...] = ()
    quota_window_seconds: float | None = None

    def __post_init__(self) -> None:
        if not is_kafka_id(self.id):
            raise InputError(f"broker id must be an integer from 0 to {INT32_MAX}, "
                             f"got {self.id!r}")
        paths = [d.path for d in self.log_dirs]
        if len(set(paths)) != len(paths):
            raise InputError(f"broker {self.id}: a log dir is listed twice")
        if self.rack is not None and self.rack != (shown := visible(self.rack)):
            # broker.rack is any string: its control characters are kept written out, so
            # that no table, message or page obeys them (the rack is only a grouping key)
            object.__setattr__(self, "rack", shown)


class KeyedByPartition:
    """A value about one partition: its topic and index give its key and its name."""

    __slots__ = ()
    topic: str
    partition: int

    @property
    def key(self) -> TopicPartition:
        return TopicPartition(self.topic, self.partition)

    @property
    def name(self) -> str:
        return f"{self.topic}-{self.partition}"


@dataclass(frozen=True, slots=True)
class Partition(KeyedByPartition):
    """A partition with its replica list (preferred leader first), size and byte rates.

    size_bytes is what a replica holds on a broker's disk: with tiered storage (KIP-405) only
    the segments still local, and so all a move copies (a new follower fetches from the
    leader's local log start). remote_size_bytes is what remote storage holds besides: it
    fills no broker and is never moved. requests_per_sec: the produce and consumer fetch
    requests for it a second, which its leader serves."""

    topic: str
    partition: int
    replicas: tuple[int, ...]
    size_bytes: int = 0
    bytes_in_per_sec: float = 0.0
    bytes_out_per_sec: float = 0.0
    remote_size_bytes: int = 0
    requests_per_sec: float = 0.0

    def __post_init__(self) -> None:
        if not isinstance(self.topic, str) or not is_topic_name(self.topic):
            raise InputError(f"partition {self.topic!r}-{self.partition!r}: the topic must be "
                             f"{TOPIC_NOUN}")
        name = self.name
        if not is_kafka_id(self.partition):
            raise InputError(f"partition {self.topic}-{self.partition!r}: index must be an "
                             f"integer from 0 to {INT32_MAX}")
        if not self.replicas:
            raise InputError(f"partition {name}: replica list is empty")
        if len(set(self.replicas)) != len(self.replicas):
            raise InputError(
                f"partition {name}: replica list {list(self.replicas)} repeats a broker"
            )
        if self.size_bytes < 0:
            raise InputError(f"partition {name}: size_bytes is negative ({self.size_bytes})")
        if self.remote_size_bytes < 0:
            raise InputError(f"partition {name}: remote_size_bytes is negative "
                             f"({self.remote_size_bytes})")
        for rate in (self.bytes_in_per_sec, self.bytes_out_per_sec):
            if not math.isfinite(rate) or rate < 0:
                raise InputError(f"partition {name}: byte rates must not be negative "
                                 f"or infinite, got {rate!r}")
        if not math.isfinite(self.requests_per_sec) or self.requests_per_sec < 0:
            raise InputError(f"partition {name}: requests_per_sec must not be negative or "
                             f"infinite, got {self.requests_per_sec!r}")

    @property
    def replication_factor(self) -> int:
        return len(self.replicas)

    @property
    def leader(self) -> int:
        """The preferred leader: the first replica."""
        return self.replicas[0]


ReplicaDirs = Mapping[tuple[TopicPartition, int], str]
"""The log dir each replica is in, keyed by (partition, broker), for brokers with several."""


@dataclass(frozen=True)
class Topology:
    """A cluster snapshot: brokers sorted by id, partitions sorted by (topic, partition) and,
    for brokers with several log dirs, the dir each of their replicas is in."""

    brokers: tuple[Broker, ...]
    partitions: tuple[Partition, ...]
    notes: tuple[str, ...] = field(default=())
    replica_dirs: ReplicaDirs = field(default_factory=dict, compare=False)

    def __post_init__(self) -> None:
        problems = topology_problems([b.id for b in self.brokers], self.partitions)
        if problems:
            raise InputError(problems_message(problems))
        object.__setattr__(self, "brokers", tuple(sorted(self.brokers, key=lambda b: b.id)))
        object.__setattr__(
            self, "partitions", tuple(sorted(self.partitions, key=lambda p: (p.topic, p.partition)))
        )

    @property
    def broker_ids(self) -> tuple[int, ...]:
        return tuple(b.id for b in self.brokers)

    def broker(self, broker_id: int) -> Broker:
        for b in self.brokers:
            if b.id == broker_id:
                return b
        raise InputError(f"unknown broker {broker_id}; brokers are {list(self.broker_ids)}")

    @property
    def racks(self) -> tuple[str | None, ...]:
        """Distinct racks, sorted (None sorts first)."""
        return tuple(sorted({b.rack for b in self.brokers}, key=lambda r: (r is not None, r or "")))

    def partition_map(self) -> dict[TopicPartition, Partition]:
        return {p.key: p for p in self.partitions}

    def with_partitions(self, partitions: Iterable[Partition]) -> Topology:
        """A new topology with the same brokers and the given partitions."""
        return Topology(self.brokers, tuple(partitions), self.notes, self.replica_dirs)

    def with_brokers(self, brokers: Iterable[Broker]) -> Topology:
        """A new topology with the given brokers and the same partitions."""
        return Topology(tuple(brokers), self.partitions, self.notes, self.replica_dirs)

    def fingerprint(self) -> str:
        """A stable hash of broker ids and every partition's replica list.

        Sizes and rates drift constantly and are left out: the fingerprint says whether the
        replica placement a plan was made against is still the one on the cluster.
        """
        lines = [",".join(map(str, self.broker_ids))]
        lines.extend(
            f"{p.topic}\x00{p.partition}\x00{','.join(map(str, p.replicas))}"
            for p in self.partitions
        )
        return "sha256:" + hashlib.sha256("\n".join(lines).encode()).hexdigest()[:32]


def topology_problems(broker_ids: Iterable[int], partitions: Iterable[Partition]) -> list[str]:
    """What spans entries: brokers listed twice, partitions listed twice, unknown replicas."""
    counts = Counter(broker_ids)
    problems = [f"broker {i} is listed more than once" for i, n in sorted(counts.items()) if n > 1]
    if not counts:
        problems.append("the topology lists no brokers")
    seen: set[tuple[str, int]] = set()
    for p in partitions:
        key = (p.topic, p.partition)
        if key in seen:
            problems.append(f"partition {p.name} is listed more than once")
        seen.add(key)
        for r in p.replicas:
            if r not in counts:
                problems.append(f"partition {p.name}: replica on unknown broker {r}")
    return problems


def replace_replicas(
    topology: Topology, assignment: Mapping[TopicPartition, tuple[int, ...]]
) -> Topology:
    """A new topology whose partitions carry the replica lists in `assignment`."""
    parts = []
    for p in topology.partitions:
        target = assignment.get(p.key)
        if target is None or tuple(target) == p.replicas:
            parts.append(p)
        else:
            parts.append(replace(p, replicas=tuple(target)))
    return topology.with_partitions(parts)
