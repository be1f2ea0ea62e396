"""The cluster reads of one poll, asked once: with several moves in flight each would ask the
same cluster-wide questions every poll (which reassignments are listed, which brokers are
alive, a topic's partitions), and the answers cannot differ within a poll.

`TickReads` is a KafkaAdmin in front of the real one. It keeps answers only between
`new_tick` and `end_tick` (outside a poll, on cancel, at the end of a run, every read goes to
the cluster), and any write forgets them, so a read after a change in the same poll sees it.
`new_tick` also names the topics and receiving brokers of the moves in flight, so that the
first move to ask for its partitions or its replicas' sizes fetches those of every move in
one request. Config reads pass through: they are read-backs of what this process just set,
and must be fresh.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, TypeVar

from kafka_rebalance.core.errors import ClusterError
from kafka_rebalance.core.names import TopicPartition
from kafka_rebalance.core.ports import (
    BrokerInfo,
    BrokerLogDirs,
    ConfigChanges,
    KafkaAdmin,
    PartitionInfo,
    ReassignmentState,
    ReplicaOnBroker,
)

T = TypeVar("T")
K = TypeVar("K", int, str)


class TickReads:
    """A KafkaAdmin that answers each read once per poll (see the module docstring)."""

    def __init__(self, admin: KafkaAdmin) -> None:
        self._admin = admin
        self._answers: dict[tuple[Any, ...], Any] = {}
        self._topics: dict[str, list[PartitionInfo]] = {}
        self._sizes: dict[int, dict[tuple[TopicPartition, int], int]] = {}
        self._expected_topics: frozenset[str] = frozenset()
        self._expected_receivers: frozenset[int] = frozenset()
        self._live = False
        self._last_live: frozenset[int] = frozenset()  # the brokers of the last answer
        self.asked = 0  # reads that reached the cluster, for the benchmark and the tests

    def new_tick(self, topics: Iterable[str] = (), receivers: Iterable[int] = ()) -> None:
        """Forget every answer; `topics` and `receivers` are what this poll's moves will ask
        about (partitions of those topics, replica sizes on those brokers)."""
        self._forget()
        self._live = True
        self._expected_topics = frozenset(topics)
        self._expected_receivers = frozenset(receivers)

    def end_tick(self) -> None:
        """The poll is over: forget every answer and read straight through until the next."""
        self._forget()
        self._live = False

    def _forget(self) -> None:
        self._answers.clear()
        self._topics.clear()
        self._sizes.clear()

    def _once(self, key: tuple[Any, ...], read: Callable[[], T]) -> T:
        if not self._live:
            self.asked += 1
            return read()
        if key not in self._answers:
            self.asked += 1
            self._answers[key] = read()
        answer: T = self._answers[key]
        return answer

    def _batched(self, missing: set[K], expected: Iterable[K],
                 read: Callable[[list[K]], T]) -> tuple[list[K], T]:
        """What the caller is missing together with what this poll's other moves will ask;
        if that fails (a dead broker among the others), what the caller is missing alone."""
        asked = sorted(missing | set(expected))
        self.asked += 1
        try:
            return asked, read(asked)
        except ClusterError:
            if len(asked) == len(missing):
                raise
        self.asked += 1
        return sorted(missing), read(sorted(missing))

    def brokers(self) -> list[BrokerInfo]:
        return list(self._once(("brokers",), self._live_brokers))

    def _live_brokers(self) -> list[BrokerInfo]:
        """The live brokers; an answer without a broker the last one had is asked again
        once, and the second answer stands: a DescribeCluster answered while another broker
        dies can leave live brokers out (seen on the sandbox), and a throttle planned from it
        would skip the copy's real sender."""
        answer = self._admin.brokers()
        ids = frozenset(b.id for b in answer)
        if self._last_live - ids:
            self.asked += 1
            answer = self._admin.brokers()
            ids = frozenset(b.id for b in answer)
        self._last_live = ids
        return answer

    def registered_racks(self) -> dict[int, str | None]:
        return dict(self._once(("registered_racks",), self._admin.registered_racks))

    def partitions(self, topics: Iterable[str] | None = None) -> list[PartitionInfo]:
        if topics is None:
            return list(self._once(("partitions",), self._admin.partitions))
        names = set(topics)
        if not self._live:
            self.asked += 1
            return self._admin.partitions(sorted(names))
        missing = names - set(self._topics)
        if missing:
            asked, found = self._batched(missing, self._expected_topics - set(self._topics),
                                         self._admin.partitions)
            for name in asked:
                self._topics[name] = [p for p in found if p.topic == name]
        return [p for name in sorted(names) for p in self._topics[name]]

    def log_dir_sizes(self, broker_ids: Iterable[int]) -> dict[tuple[TopicPartition, int], int]:
        ids = set(broker_ids)
        if not self._live:
            self.asked += 1
            return self._admin.log_dir_sizes(sorted(ids))
        missing = ids - set(self._sizes)
        if missing:
            asked, found = self._batched(missing, self._expected_receivers - set(self._sizes),
                                         self._admin.log_dir_sizes)
            for broker in asked:
                self._sizes[broker] = {k: v for k, v in found.items() if k[1] == broker}
        return {k: v for broker in ids for k, v in self._sizes[broker].items()}

    def log_dirs(self, broker_ids: Iterable[int]) -> dict[int, BrokerLogDirs]:
        return self._admin.log_dirs(broker_ids)  # read by the log-dir stage, once a poll

    def alter_replica_log_dirs(self, targets: Mapping[ReplicaOnBroker, str]
                               ) -> dict[ReplicaOnBroker, str | None]:
        self._forget()
        return self._admin.alter_replica_log_dirs(targets)

    def list_partition_reassignments(self) -> dict[TopicPartition, ReassignmentState]:
        return dict(self._once(("reassignments",), self._admin.list_partition_reassignments))

    def broker_configs(self, broker_ids: Iterable[int], names: Sequence[str]) -> dict[
            int, dict[str, str | None]]:
        return self._admin.broker_configs(broker_ids, names)

    def topic_configs(self, topics: Iterable[str], names: Sequence[str]) -> dict[
            str, dict[str, str | None]]:
        return self._admin.topic_configs(topics, names)

    def cordoned_brokers(self, broker_ids: Iterable[int]) -> frozenset[int]:
        return self._admin.cordoned_brokers(broker_ids)

    def quota_windows(self, broker_ids: Iterable[int]) -> dict[int, float]:
        return self._admin.quota_windows(broker_ids)

    def alter_broker_configs(self, changes: Mapping[int, ConfigChanges]) -> None:
        self._forget()
        self._admin.alter_broker_configs(changes)

    def alter_topic_configs(self, changes: Mapping[str, ConfigChanges]) -> None:
        self._forget()
        self._admin.alter_topic_configs(changes)

    def alter_partition_reassignments(
            self, targets: Mapping[TopicPartition, Sequence[int] | None]) -> None:
        self._forget()
        self._admin.alter_partition_reassignments(targets)

    def elect_preferred_leaders(self, partitions: Iterable[TopicPartition]) -> None:
        self._forget()
        self._admin.elect_preferred_leaders(partitions)

    def close(self) -> None:
        self._admin.close()
