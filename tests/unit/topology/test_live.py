"""The live reader's pure parts, and the reader itself over small in-memory fakes."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import pytest

from kafka_rebalance.core.errors import InputError
from kafka_rebalance.core.ports import (
    BrokerInfo,
    BrokerLogDirs,
    ConfigChanges,
    LogDirInfo,
    PartitionInfo,
    ReassignmentState,
)
from topology.capacities import parse_capacities
from topology.live import (
    broker_entries,
    partition_sizes,
    read_live_topology,
    split_topic_rates,
    topic_rates,
)
from topology.model import TopicPartition
from topology.snapshot import topology_from_dict, topology_to_dict

TP = TopicPartition


class FakeAdmin:
    """Answers the read-side of KafkaAdmin from fixed data; the write side is not needed."""

    def __init__(self, brokers: list[BrokerInfo], partitions: list[PartitionInfo],
                 sizes: dict[tuple[TopicPartition, int], int]) -> None:
        self._brokers, self._partitions, self._sizes = brokers, partitions, sizes
        self.log_dir_brokers: list[int] = []
        self.dirs: dict[int, tuple[str, ...]] = {}  # a broker's log dirs, when several
        self.fenced: dict[int, str | None] = {}  # registered, not alive
        self.moving: dict[TopicPartition, ReassignmentState] = {}
        self.windows: dict[int, float] = {}  # replication quota windows, seconds
        self.silent: set[int] = set()  # registered, but not answering (killed, not yet fenced)

    def brokers(self) -> list[BrokerInfo]:
        return list(self._brokers)

    def registered_racks(self) -> dict[int, str | None]:
        return {b.id: b.rack for b in self._brokers} | self.fenced

    def cordoned_brokers(self, broker_ids: Iterable[int]) -> frozenset[int]:
        return frozenset()

    def quota_windows(self, broker_ids: Iterable[int]) -> dict[int, float]:
        wanted = set(broker_ids)
        return {b: w for b, w in self.windows.items() if b in wanted}

    def partitions(self, topics: Iterable[str] | None = None) -> list[PartitionInfo]:
        return list(self._partitions)

    def log_dir_sizes(self, broker_ids: Iterable[int]) -> dict[tuple[TopicPartition, int], int]:
        self.log_dir_brokers = sorted(broker_ids)
        return {k: v for k, v in self._sizes.items() if k[1] in self.log_dir_brokers}

    def log_dirs(self, broker_ids: Iterable[int]) -> dict[int, BrokerLogDirs]:
        """One dir per broker, or `dirs`: replicas go round them in partition order."""
        sizes = self.log_dir_sizes(set(broker_ids) - self.silent)
        out = {}
        for b in self.log_dir_brokers:
            paths = self.dirs.get(b, ("/var/kafka",))
            mine = sorted(((tp, size) for (tp, broker), size in sizes.items() if broker == b),
                          key=lambda item: (item[0].topic, item[0].partition))
            out[b] = BrokerLogDirs(
                tuple(LogDirInfo(p, 1000 * (i + 1)) for i, p in enumerate(paths)),
                {tp: (paths[i % len(paths)], size) for i, (tp, size) in enumerate(mine)}, {})
        return out

    def broker_configs(self, broker_ids: Iterable[int], names: Sequence[str]) -> dict[
        int, dict[str, str | None]
    ]:
        raise NotImplementedError

    def topic_configs(self, topics: Iterable[str], names: Sequence[str]) -> dict[
        str, dict[str, str | None]
    ]:
        raise NotImplementedError

    def alter_broker_configs(self, changes: Mapping[int, ConfigChanges]) -> None:
        raise NotImplementedError

    def alter_topic_configs(self, changes: Mapping[str, ConfigChanges]) -> None:
        raise NotImplementedError

    def alter_partition_reassignments(
        self, targets: Mapping[TopicPartition, Sequence[int] | None]
    ) -> None:
        raise NotImplementedError

    def list_partition_reassignments(self) -> dict[TopicPartition, ReassignmentState]:
        return dict(self.moving)

    def elect_preferred_leaders(self, partitions: Iterable[TopicPartition]) -> None:
        raise NotImplementedError

    def close(self) -> None:
        pass


class FakeMetrics:
    """Answers PromQL by the metric name the query mentions."""

    def __init__(self, answers: dict[str, list[tuple[dict[str, str], float]]]) -> None:
        self._answers = answers
        self.queries: list[str] = []

    def query(self, promql: str) -> list[tuple[dict[str, str], float]]:
        self.queries.append(promql)
        for metric, samples in self._answers.items():
            if metric in promql:
                return samples
        return []


def _info(topic: str, partition: int, replicas: tuple[int, ...],
          isr: tuple[int, ...] | None = None, leader: int | None = -2) -> PartitionInfo:
    return PartitionInfo(topic, partition, replicas, replicas if isr is None else isr,
                         replicas[0] if leader == -2 else leader)


def _cluster() -> FakeAdmin:
    brokers = [BrokerInfo(1, "h", 9092, "a"), BrokerInfo(2, "h", 9093, "b"),
               BrokerInfo(3, "h", 9094, "a")]
    parts = [_info("orders", 0, (1, 2)), _info("orders", 1, (2, 3)),
             _info("orders", 2, (3, 1)), _info("__consumer_offsets", 0, (2,)),
             _info("idle", 0, (1, 2)), _info("idle", 1, (2, 1))]
    sizes = {(TP("orders", 0), 1): 300, (TP("orders", 0), 2): 290,
             (TP("orders", 1), 2): 100, (TP("orders", 1), 3): 100,
             (TP("orders", 2), 3): 0, (TP("orders", 2), 1): 0,
             (TP("__consumer_offsets", 0), 2): 50,
             (TP("idle", 0), 1): 0, (TP("idle", 0), 2): 0,
             (TP("idle", 1), 2): 0, (TP("idle", 1), 1): 0}
    return FakeAdmin(brokers, parts, sizes)


def test_partition_size_is_largest_assigned_replica_and_missing_ones_are_listed() -> None:
    parts = [_info("t", 0, (1, 2)), _info("t", 1, (2, 3))]
    sizes, unsized = partition_sizes(parts, {(TP("t", 0), 1): 10, (TP("t", 0), 2): 12,
                                             (TP("t", 1), 9): 99})  # broker 9 not assigned
    assert sizes == {TP("t", 0): 12, TP("t", 1): 0}
    assert unsized == [TP("t", 1)]


def test_split_is_proportional_to_size() -> None:
    sizes = {TP("t", 0): 300, TP("t", 1): 100, TP("t", 2): 0}
    split = split_topic_rates({"t": 800.0}, sizes)
    assert split == {TP("t", 0): 600.0, TP("t", 1): 200.0, TP("t", 2): 0.0}
    assert sum(split.values()) == pytest.approx(800.0)


def test_split_is_equal_when_all_sizes_are_zero_and_zero_without_a_rate() -> None:
    sizes = {TP("t", 0): 0, TP("t", 1): 0, TP("u", 0): 5}
    split = split_topic_rates({"t": 90.0, "gone": 7.0}, sizes)
    assert split == {TP("t", 0): 45.0, TP("t", 1): 45.0, TP("u", 0): 0.0}


def test_topic_rates_sum_duplicates_and_clamp_negatives() -> None:
    samples = [({"topic": "a"}, 5.0), ({"topic": "a"}, 2.5), ({"topic": "b"}, -1.0), ({}, 9.0)]
    assert topic_rates(samples) == {"a": 7.5, "b": 0.0}


def test_dead_broker_named_by_a_replica_is_listed_not_alive() -> None:
    entries = broker_entries([BrokerInfo(1, "h", 1, "a")], [_info("t", 0, (1, 4))], None)
    assert entries == [{"id": 1, "rack": "a"}, {"id": 4, "rack": None, "alive": False}]


def test_a_dead_broker_keeps_the_rack_the_controller_has_registered() -> None:
    parts = [_info("t", 0, (1, 4)), _info("t", 1, (1, 5))]
    entries = broker_entries([BrokerInfo(1, "h", 1, "a")], parts, None, {1: "a", 4: "b"})
    assert entries == [{"id": 1, "rack": "a"}, {"id": 4, "rack": "b", "alive": False},
                       {"id": 5, "rack": None, "alive": False}]  # 5: not registered any more


def test_capacities_are_resolved_per_broker_and_unknown_brokers_rejected() -> None:
    caps = parse_capacities({"default": {"disk_bytes": "1TB", "net_in_bytes_per_sec": "1MB/s",
                                         "net_out_bytes_per_sec": "1MB/s"},
                             "racks": {"b": {"disk_bytes": "2TB"}}})
    entries = broker_entries([BrokerInfo(1, "h", 1, "a"), BrokerInfo(2, "h", 2, "b")], [], caps)
    assert [e["capacity"]["disk_bytes"] for e in entries] == [10**12, 2 * 10**12]
    bad = parse_capacities({"default": {"disk_bytes": "1TB", "net_in_bytes_per_sec": "1MB/s",
                                        "net_out_bytes_per_sec": "1MB/s"}, "brokers": {7: {}}})
    with pytest.raises(InputError, match="unknown broker 7"):
        broker_entries([BrokerInfo(1, "h", 1, "a")], [], bad)


def test_reader_without_metrics_records_sizes_and_zero_rates() -> None:
    admin = _cluster()
    snap = read_live_topology(admin)
    doc = snap.document
    assert admin.log_dir_brokers == [1, 2, 3]
    assert [b["id"] for b in doc["brokers"]] == [1, 2, 3]
    assert all("capacity" not in b for b in doc["brokers"])
    by_name = {(p["topic"], p["partition"]): p for p in doc["partitions"]}
    assert by_name[("orders", 0)]["size_bytes"] == 300
    assert by_name[("orders", 0)]["replicas"] == [1, 2]
    assert by_name[("__consumer_offsets", 0)]["internal"] is True
    assert "internal" not in by_name[("orders", 0)]
    assert all(p["bytes_in_per_sec"] == 0.0 for p in doc["partitions"])
    assert any("no Prometheus" in n for n in snap.notes)
    assert doc["notes"] == list(snap.notes)
    assert (snap.broker_count, snap.partition_count, snap.topic_count) == (3, 6, 3)
    assert snap.total_size_bytes == 450


def test_a_partition_being_reassigned_is_recorded_at_its_target_replicas() -> None:
    """Kafka lists the old and new replicas together while a copy runs (RF 3 reads as 4): the
    snapshot records where the partition is going, its size from the replicas that have it."""
    admin = _cluster()
    admin._partitions[0] = _info("orders", 0, (1, 3, 2), isr=(1, 2))  # 2 -> 3 in flight
    admin.moving[TP("orders", 0)] = ReassignmentState((1, 3, 2), (3,), (2,))
    snap = read_live_topology(admin)
    by_name = {(p["topic"], p["partition"]): p for p in snap.document["partitions"]}
    assert by_name[("orders", 0)]["replicas"] == [1, 3]
    assert by_name[("orders", 0)]["size_bytes"] == 300
    assert by_name[("orders", 1)]["replicas"] == [2, 3]
    assert any("being reassigned" in n and "[1, 3, 2] -> [1, 3]" in n for n in snap.notes)


def test_reader_with_metrics_splits_topic_rates_and_says_so() -> None:
    metrics = FakeMetrics({"kafka_topic_bytes_in_total": [({"topic": "orders"}, 400.0),
                                                          ({"topic": "idle"}, 10.0)],
                           "kafka_topic_bytes_out_total": [({"topic": "orders"}, 800.0)]})
    snap = read_live_topology(_cluster(), metrics)
    by_name = {(p["topic"], p["partition"]): p for p in snap.document["partitions"]}
    assert by_name[("orders", 0)]["bytes_in_per_sec"] == pytest.approx(300.0)
    assert by_name[("orders", 1)]["bytes_in_per_sec"] == pytest.approx(100.0)
    assert by_name[("orders", 2)]["bytes_in_per_sec"] == 0.0
    assert by_name[("orders", 0)]["bytes_out_per_sec"] == pytest.approx(600.0)
    assert by_name[("idle", 0)]["bytes_in_per_sec"] == pytest.approx(5.0)  # equal split
    assert snap.total_bytes_in_per_sec == pytest.approx(410.0)
    assert any("in proportion to partition size" in n for n in snap.notes)
    assert all("[1m]" in q for q in metrics.queries if "rate(" in q)
    assert all("remote_size_bytes" not in p for p in snap.document["partitions"])


def test_remote_storage_bytes_are_split_by_local_size_and_round_trip() -> None:
    """Tiered storage: the topic's remote bytes (the brokers' RemoteLogSizeBytes, summed)
    are split over its partitions by local size; the local size stays size_bytes."""
    metrics = FakeMetrics({"kafka_topic_remote_log_size_bytes": [({"topic": "orders"}, 8000.0)]})
    caps = parse_capacities({"default": {"disk_bytes": 10**12, "net_in_bytes_per_sec": 10**8,
                                         "net_out_bytes_per_sec": 10**8}})
    snap = read_live_topology(_cluster(), metrics, caps)
    by_name = {(p["topic"], p["partition"]): p for p in snap.document["partitions"]}
    assert by_name[("orders", 0)]["size_bytes"] == 300
    assert by_name[("orders", 0)]["remote_size_bytes"] == 6000  # 300 of 400 local bytes
    assert by_name[("orders", 1)]["remote_size_bytes"] == 2000
    assert "remote_size_bytes" not in by_name[("orders", 2)]  # no local bytes, no share
    assert "remote_size_bytes" not in by_name[("idle", 0)]
    assert any("tiered storage: 1 topic(s) keep 8.00 kB in remote storage" in n
               for n in snap.notes)
    topology = topology_from_dict(snap.document)
    assert {p.name: p.remote_size_bytes for p in topology.partitions}["orders-0"] == 6000
    assert topology_from_dict(topology_to_dict(topology)) == topology


def test_reader_document_is_a_valid_snapshot_once_capacities_are_given() -> None:
    caps = parse_capacities({"default": {"disk_bytes": 10**12, "net_in_bytes_per_sec": 10**8,
                                         "net_out_bytes_per_sec": 10**8}})
    admin = _cluster()
    admin._partitions.append(_info("orders", 3, (1, 5), isr=(1,)))  # broker 5 is gone
    snap = read_live_topology(admin, capacities=caps)
    topology = topology_from_dict(snap.document)
    assert topology.broker(5).alive is False
    assert len(topology.partitions) == 7
    assert any("not alive" in n for n in snap.notes)
    assert any("under-replicated" in n for n in snap.notes)


def test_log_dirs_of_jbod_brokers_are_recorded_and_read_back() -> None:
    """Broker 1 keeps its replicas in two dirs: the snapshot lists both (with their volume's
    size) and names the dir of each of its replicas; brokers with one dir are written as
    before, and a snapshot with no JBOD broker carries no log dir at all."""
    caps = parse_capacities({"default": {"disk_bytes": 10**12, "net_in_bytes_per_sec": 10**8,
                                         "net_out_bytes_per_sec": 10**8}})
    plain = read_live_topology(_cluster(), capacities=caps).document
    assert not any("log_dirs" in entry for entry in plain["brokers"] + plain["partitions"])

    admin = _cluster()
    admin.dirs[1] = ("/d1", "/d2")
    snap = read_live_topology(admin, capacities=caps)
    brokers = {entry["id"]: entry for entry in snap.document["brokers"]}
    assert brokers[1]["log_dirs"] == [{"path": "/d1", "capacity_bytes": 1000},
                                      {"path": "/d2", "capacity_bytes": 2000}]
    assert "log_dirs" not in brokers[2]
    orders0 = next(e for e in snap.document["partitions"]
                   if (e["topic"], e["partition"]) == ("orders", 0))
    assert orders0["replicas"] == [1, 2] and orders0["log_dirs"] == ["/d1", None]

    topology = topology_from_dict(snap.document)
    assert [d.path for d in topology.broker(1).log_dirs] == ["/d1", "/d2"]
    on_1 = {f"{tp.topic}-{tp.partition}": path
            for (tp, b), path in topology.replica_dirs.items() if b == 1}
    assert on_1 == {"idle-0": "/d1", "idle-1": "/d2", "orders-0": "/d1", "orders-2": "/d2"}
    again = topology_to_dict(topology)
    assert again["brokers"][0]["log_dirs"] == brokers[1]["log_dirs"]
    assert topology_from_dict(again).replica_dirs == topology.replica_dirs


def test_log_dirs_that_do_not_match_the_replicas_are_refused() -> None:
    caps = parse_capacities({"default": {"disk_bytes": 10**12, "net_in_bytes_per_sec": 10**8,
                                         "net_out_bytes_per_sec": 10**8}})
    doc = read_live_topology(_cluster(), capacities=caps).document
    orders0 = next(e for e in doc["partitions"] if (e["topic"], e["partition"]) == ("orders", 0))
    orders0["log_dirs"] = ["/d1"]
    with pytest.raises(InputError, match="log_dirs names 1 dir"):
        topology_from_dict(doc)


def test_quota_windows_are_recorded_per_broker_and_read_back() -> None:
    """The window each live broker describes goes into the snapshot (the review's ETA waits
    it out as the run will); a broker that describes none is written without one."""
    caps = parse_capacities({"default": {"disk_bytes": 10**12, "net_in_bytes_per_sec": 10**8,
                                         "net_out_bytes_per_sec": 10**8}})
    admin = _cluster()
    admin.windows = {1: 3.0, 2: 11.0}
    doc = read_live_topology(admin, capacities=caps).document
    brokers = {entry["id"]: entry for entry in doc["brokers"]}
    assert brokers[1]["quota_window_seconds"] == 3
    assert brokers[2]["quota_window_seconds"] == 11
    assert "quota_window_seconds" not in brokers[3]
    topology = topology_from_dict(doc)
    assert [b.quota_window_seconds for b in topology.brokers] == [3.0, 11.0, None]
    assert topology_from_dict(topology_to_dict(topology)) == topology


def test_a_registered_broker_that_does_not_answer_is_recorded_as_not_alive() -> None:
    """Killed moments ago, broker 3 is still registered (the controller has not fenced it) but
    answers nothing: the snapshot says so and records it as not alive, with its rack, and
    reads nothing more from it."""
    admin = _cluster()
    admin.silent = {3}
    asked: list[list[int]] = []
    admin.quota_windows = lambda ids: asked.append(sorted(ids)) or {}  # type: ignore[method-assign]
    snap = read_live_topology(admin)
    brokers = {entry["id"]: entry for entry in snap.document["brokers"]}
    assert brokers[3].get("alive") is False and brokers[3]["rack"] == "a"
    assert brokers[1].get("alive", True) and brokers[2].get("alive", True)
    assert any("[3] are registered but did not answer" in n for n in snap.notes)
    assert asked == [[1, 2]]
