"""Tiered storage on a sandbox of its own (Kafka's file-system remote storage manager): a topic
whose older segments are in remote storage is snapshotted with its local and remote bytes,
planned and reviewed by its local bytes, and moved: the new replica fetches only the local
segments, and as the partition's leader it still serves every message from offset 0.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka import TopicPartition as CkTopicPartition
from confluent_kafka.admin import NewTopic

from kafka_rebalance.sandbox.state import SandboxInfo
from tests.integration.executor_support import (
    execute_args,
    make_plan,
    own_sandbox,
    rebalance,
)
from tests.integration.kafka_topics import create_topics, wait_for
from topology.kafka_admin import KafkaClusterAdmin
from topology.model import TopicPartition
from topology.prom_source import PrometheusMetrics

pytestmark = pytest.mark.integration

TOPIC = "tiered"
SEGMENT = 1_048_576
RECORDS, RECORD_BYTES = 600, 10_000  # 6 MB: five or six segments go remote, one stays local
CAPACITIES = """\
default: {disk_bytes: 1GB, net_in_bytes_per_sec: 100MB/s, net_out_bytes_per_sec: 100MB/s}
"""


@pytest.fixture(scope="module")
def tiered(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SandboxInfo]:
    with own_sandbox(tmp_path_factory, "tiered-sandbox", 27090, tiered_storage=True) as info:
        yield info


def _fill(info: SandboxInfo, leader: int, follower: int) -> None:
    create_topics(info.bootstrap, [NewTopic(
        TOPIC, 1, replica_assignment=[[leader, follower]], config={
            "remote.storage.enable": "true", "local.retention.bytes": str(SEGMENT),
            "segment.bytes": str(SEGMENT), "retention.bytes": "-1"})])
    producer = Producer({"bootstrap.servers": info.bootstrap, "linger.ms": 20, "acks": "all",
                         "compression.type": "none"})
    value = os.urandom(RECORD_BYTES)
    for _ in range(RECORDS):
        while True:
            try:
                producer.produce(TOPIC, value=value, partition=0)
                break
            except BufferError:
                producer.poll(0.1)
        producer.poll(0)
    assert producer.flush(60) == 0


def _local_sizes(admin: KafkaClusterAdmin, brokers: list[int]) -> dict[int, int]:
    return {broker: size for (tp, broker), size in admin.log_dir_sizes(brokers).items()
            if tp == TopicPartition(TOPIC, 0)}


def _remote_bytes(info: SandboxInfo) -> float:
    samples = PrometheusMetrics(info.prometheus_url).query(
        f'sum(kafka_topic_remote_log_size_bytes{{topic="{TOPIC}"}})')
    return samples[0][1] if samples else 0.0


def _messages_from_the_start(info: SandboxInfo) -> int:
    consumer = Consumer({"bootstrap.servers": info.bootstrap, "group.id": "tiered-check",
                         "enable.auto.commit": False})
    try:
        consumer.assign([CkTopicPartition(TOPIC, 0, 0)])
        seen = 0
        while seen < RECORDS:
            message = consumer.poll(10)
            if message is None:
                break
            assert message.error() is None, message.error()
            seen += 1
        return seen
    finally:
        consumer.close()


def test_a_move_copies_only_the_local_segments_and_the_new_leader_serves_them_all(
        tiered: SandboxInfo, tmp_path: Path) -> None:
    ids = sorted(b.id for b in tiered.brokers)
    rack_of = {b.id: b.rack for b in tiered.brokers}
    leader = ids[0]
    follower = next(i for i in ids if rack_of[i] != rack_of[leader])
    spare = next(i for i in ids if i not in (leader, follower) and rack_of[i] == rack_of[follower])
    _fill(tiered, leader, follower)
    admin = KafkaClusterAdmin(tiered.bootstrap)
    try:
        # older segments go remote, then local retention deletes them from the brokers' disks
        wait_for("the older segments in remote storage and off the local disks",
                 lambda: _remote_bytes(tiered) > 3 * SEGMENT
                 and max(_local_sizes(admin, ids).values()) < 2 * SEGMENT, 120, 1)

        caps, snap = tmp_path / "caps.yaml", tmp_path / "snap.json"
        caps.write_text(CAPACITIES)
        taken = rebalance("snapshot", "--bootstrap", tiered.bootstrap, "--prometheus",
                          tiered.prometheus_url, "--capacities", str(caps), "--out", str(snap))
        assert taken.returncode == 0, taken.stdout + taken.stderr
        doc = json.loads(snap.read_text())
        doc["partitions"] = [p for p in doc["partitions"] if p["topic"] == TOPIC]
        (entry,) = doc["partitions"]
        assert entry["size_bytes"] < 2 * SEGMENT < 3 * SEGMENT < entry["remote_size_bytes"]
        assert any("tiered storage" in note for note in doc["notes"])
        snap.write_text(json.dumps(doc))

        planned = rebalance("plan", "--snapshot", str(snap), "--capacities", str(caps),
                            "--remove-broker", str(follower), "--time-limit", "5",
                            "--out", str(tmp_path / "drain.json"))
        assert planned.returncode == 0, planned.stdout + planned.stderr
        written = json.loads((tmp_path / "drain.json").read_text())
        assert written["totals"]["bytes_moved"] == entry["size_bytes"]  # local bytes only
        assert written["tiered_storage"] == {"remote_bytes": entry["remote_size_bytes"],
                                             "moved_remote_bytes": entry["remote_size_bytes"]}
        assert "Tiered storage:" in " ".join(planned.stdout.split())

        # the new replica leads after the move: every message must come from it or remote
        plan = tmp_path / "move.json"
        (move,) = make_plan(tiered, plan, [(TOPIC, 0, (spare, leader))])
        assert move.size_bytes < 2 * SEGMENT
        run = rebalance(*execute_args(tiered, plan, tmp_path / "move.journal"))
        assert run.returncode == 0, run.stdout + run.stderr
        assert [p.replicas for p in admin.partitions([TOPIC])] == [(spare, leader)]
        wait_for("the new replica to lead",
                 lambda: admin.partitions([TOPIC])[0].leader == spare, 30)
        assert _local_sizes(admin, [spare])[spare] < 2 * SEGMENT  # not the 6 MB in all
        assert _messages_from_the_start(tiered) == RECORDS
    finally:
        admin.close()
