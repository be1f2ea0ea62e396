"""Ports (typing.Protocol) the core talks to: the Kafka admin, a metrics source, a clock.

Real adapters: topology/kafka_admin.py (Kafka), topology/prom_source.py (Prometheus). Unit tests use
small in-memory fakes under tests/; nothing here does I/O.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from kafka_rebalance.core.names import TopicPartition

# The dynamic broker config of KIP-1066 (Kafka 4.3): log dirs that get no new replica, "*" for
# all of the broker's. The admin port reads it (`cordoned_brokers`); a drain run sets it.
CORDONED_LOG_DIRS = "cordoned.log.dirs"

# The static broker configs that size Kafka's replication quota window: a quota is measured over
# `num` samples of `size.seconds` each (11 x 1 s by default). The admin port reads them
# (`quota_windows`); the executor waits on them (executor.flows.QuotaWindows).
QUOTA_WINDOW_NUM = "replication.quota.window.num"
QUOTA_WINDOW_SIZE = "replication.quota.window.size.seconds"

# What a claim of the run lease decides from (executor.lease.LeaseStore): the latest lease
# value (None: never written) and how many seconds ago it was written by the store's own clock
# (None: the store cannot tell) -> the value to write.
LeaseDecision = Callable[[bytes | None, float | None], bytes]

@dataclass(frozen=True, slots=True)
class BrokerInfo:
    """A broker as the cluster metadata reports it."""

    id: int
    host: str
    port: int
    rack: str | None


@dataclass(frozen=True, slots=True)
class PartitionInfo:
    """A partition's live state: assigned replicas (preferred leader first), ISR and leader."""

    topic: str
    partition: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    leader: int | None  # None or -1 when offline

    @property
    def key(self) -> TopicPartition:
        return TopicPartition(self.topic, self.partition)


@dataclass(frozen=True, slots=True)
class ReassignmentState:
    """An in-flight reassignment (KIP-455): full replica set, and who is being added/removed."""

    replicas: tuple[int, ...]
    adding: tuple[int, ...]
    removing: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class LogDirInfo:
    """One log dir of a broker as DescribeLogDirs reports it: its path, the size and free
    space of its volume (None when the broker does not say), whether it is cordoned (KIP-1066)
    and whether it is online (an offline dir reports no replicas)."""

    path: str
    total_bytes: int | None = None
    usable_bytes: int | None = None
    cordoned: bool = False
    online: bool = True


@dataclass(frozen=True)
class BrokerLogDirs:
    """A broker's log dirs and where its replicas are: `replicas` maps each replica to its dir
    and size; `futures` maps a replica being moved to another dir (AlterReplicaLogDirs) to the
    dir it is moving to and the bytes copied there so far."""

    dirs: tuple[LogDirInfo, ...]
    replicas: Mapping[TopicPartition, tuple[str, int]]
    futures: Mapping[TopicPartition, tuple[str, int]]


ReplicaOnBroker = tuple[TopicPartition, int]
"""A replica: its partition and the broker that holds it."""


def replica_sizes(log_dirs: Mapping[int, BrokerLogDirs]) -> dict[ReplicaOnBroker, int]:
    """The size of each replica (in whichever dir it is) of brokers' log-dir answers."""
    return {(tp, broker): size for broker, dirs in log_dirs.items()
            for tp, (_, size) in dirs.replicas.items()}

ConfigChanges = Mapping[str, str | None]
"""Config name -> new value, or None to delete the dynamic override (incremental alter)."""


class KafkaAdmin(Protocol):
    """The admin operations the tool needs, behind one port (one real adapter module)."""

    def brokers(self) -> list[BrokerInfo]:
        """Live brokers with racks."""
        ...

    def registered_racks(self) -> dict[int, str | None]:
        """The rack of every broker registered with the controller, fenced (offline) ones
        included (KIP-1073): a dead broker's rack is still known there."""
        ...

    def partitions(self, topics: Iterable[str] | None = None) -> list[PartitionInfo]:
        """Every partition (or those of `topics`), internal topics included."""
        ...

    def log_dir_sizes(self, broker_ids: Iterable[int]) -> dict[tuple[TopicPartition, int], int]:
        """Size in bytes of each replica, keyed by (partition, broker id) (DescribeLogDirs)."""
        ...

    def log_dirs(self, broker_ids: Iterable[int]) -> dict[int, BrokerLogDirs]:
        """Each broker's log dirs and the dir and size of each of its replicas
        (DescribeLogDirs)."""
        ...

    def alter_replica_log_dirs(self, targets: Mapping[ReplicaOnBroker, str]
                               ) -> dict[ReplicaOnBroker, str | None]:
        """Ask each broker to move a replica to another of its log dirs, or to create a replica
        it does not hold yet in that dir (AlterReplicaLogDirs); per replica the error's name,
        None when accepted."""
        ...

    def broker_configs(self, broker_ids: Iterable[int], names: Sequence[str]) -> dict[
        int, dict[str, str | None]
    ]:
        """Dynamic per-broker values of `names` (None when not set on that broker)."""
        ...

    def cordoned_brokers(self, broker_ids: Iterable[int]) -> frozenset[int]:
        """Those of `broker_ids` whose every log dir is cordoned (KIP-1066): they get no new
        replica. A broker that does not know `cordoned.log.dirs` is not cordoned."""
        ...

    def quota_windows(self, broker_ids: Iterable[int]) -> dict[int, float]:
        """Each broker's replication quota window in seconds (QUOTA_WINDOW_NUM x
        QUOTA_WINDOW_SIZE, whatever level sets them); a broker that does not say is left out."""
        ...

    def topic_configs(self, topics: Iterable[str], names: Sequence[str]) -> dict[
        str, dict[str, str | None]
    ]:
        """Dynamic values of `names` per topic (None when not set); unknown topics left out."""
        ...

    def alter_broker_configs(self, changes: Mapping[int, ConfigChanges]) -> None:
        """Incrementally set (or delete with None) per-broker dynamic configs."""
        ...

    def alter_topic_configs(self, changes: Mapping[str, ConfigChanges]) -> None:
        """Incrementally set (or delete with None) topic configs."""
        ...

    def alter_partition_reassignments(
        self, targets: Mapping[TopicPartition, Sequence[int] | None]
    ) -> None:
        """Submit reassignments (AlterPartitionReassignments); None cancels one in flight."""
        ...

    def list_partition_reassignments(self) -> dict[TopicPartition, ReassignmentState]:
        """Reassignments in flight (ListPartitionReassignments)."""
        ...

    def elect_preferred_leaders(self, partitions: Iterable[TopicPartition]) -> None:
        """Run preferred leader election for `partitions` (already-preferred is not an error)."""
        ...

    def close(self) -> None:
        """Release client resources."""
        ...


class MetricsSource(Protocol):
    """Instant PromQL queries: one float per label set."""

    def query(self, promql: str) -> list[tuple[dict[str, str], float]]:
        """Evaluate `promql` now; raises MetricsError when Prometheus cannot answer."""
        ...


class Clock(Protocol):
    """Time, so the executor's waits can be driven by tests."""

    def now(self) -> float:
        """Seconds since the epoch."""
        ...

    def sleep(self, seconds: float) -> None:
        """Wait."""
        ...
