"""JBOD brokers (KIP-858) on a sandbox of their own, two log dirs each: a broker whose replicas
all sit in one dir is snapshotted with its dirs, planned, and levelled by moves between its own
dirs; the replicas are read back from the broker in their new dirs, every message is still
there, and the log-dir throttle the run set is gone."""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import NewTopic

from executor.dirs import DIR_RATE
from executor.journal import read_journal
from executor.records import RunOutcome
from kafka_rebalance.core.errors import TopicGone
from kafka_rebalance.sandbox.state import SandboxInfo
from planner.log_dirs import DirMove
from tests.integration.executor_support import (
    execute_args,
    make_plan,
    own_sandbox,
    rebalance,
    start_rebalance,
)
from tests.integration.kafka_topics import create_topics, wait_for
from topology.kafka_admin import KafkaClusterAdmin
from topology.model import TopicPartition

pytestmark = pytest.mark.integration

TOPIC = "disks"
PARTITIONS, RECORDS, RECORD_BYTES = 6, 50, 10_000  # 0.5 MB a partition
CAPACITIES = """\
default: {disk_bytes: 1GB, net_in_bytes_per_sec: 100MB/s, net_out_bytes_per_sec: 100MB/s}
"""


@pytest.fixture(scope="module")
def jbod(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SandboxInfo]:
    with own_sandbox(tmp_path_factory, "jbod-sandbox", 27190, brokers=3, racks=3,
                     log_dirs=2) as info:
        yield info


def _fill(info: SandboxInfo) -> None:
    create_topics(info.bootstrap, [NewTopic(TOPIC, PARTITIONS, 3)])
    producer = Producer({"bootstrap.servers": info.bootstrap, "acks": "all",
                         "compression.type": "none"})
    value = os.urandom(RECORD_BYTES)
    for partition in range(PARTITIONS):
        for _ in range(RECORDS):
            producer.produce(TOPIC, value=value, partition=partition)
            producer.poll(0)
    assert producer.flush(60) == 0


def _dirs_of(admin: KafkaClusterAdmin, broker: int) -> dict[int, tuple[str, int]]:
    """Partition -> (dir, size) of the topic's replicas on `broker`, once none is moving."""
    seen = admin.log_dirs([broker])[broker]
    assert not any(tp.topic == TOPIC for tp in seen.futures)
    return {tp.partition: held for tp, held in seen.replicas.items() if tp.topic == TOPIC}


def test_a_broker_with_every_replica_in_one_dir_is_levelled_between_its_dirs(
        jbod: SandboxInfo, tmp_path: Path) -> None:
    broker = jbod.brokers[0].id
    first, second = (str(d) for d in jbod.data_dirs(broker))
    _fill(jbod)
    admin = KafkaClusterAdmin(jbod.bootstrap)
    try:
        # every replica of broker 1 into its first dir
        asked = admin.alter_replica_log_dirs(
            {(TopicPartition(TOPIC, p), broker): first for p in range(PARTITIONS)})
        assert set(asked.values()) == {None}
        wait_for("every replica in the first dir", lambda: not admin.log_dirs(
            [broker])[broker].futures and {d for d, _ in _dirs_of(admin, broker).values()}
            == {first}, 60, 1)
        sizes_before = _sizes(admin, broker)

        caps, snap, plan = tmp_path / "caps.yaml", tmp_path / "snap.json", tmp_path / "plan.json"
        caps.write_text(CAPACITIES)
        taken = rebalance("snapshot", "--bootstrap", jbod.bootstrap, "--prometheus",
                          jbod.prometheus_url, "--capacities", str(caps), "--out", str(snap))
        assert taken.returncode == 0, taken.stdout + taken.stderr
        doc = json.loads(snap.read_text())
        listed = next(b for b in doc["brokers"] if b["id"] == broker)
        assert [d["path"] for d in listed["log_dirs"]] == [first, second]

        planned = rebalance("plan", "--snapshot", str(snap), "--capacities", str(caps),
                            "--time-limit", "5", "--out", str(plan))
        assert planned.returncode == 0, planned.stdout + planned.stderr
        assert "Log dirs (JBOD):" in " ".join(planned.stdout.split())
        written = json.loads(plan.read_text())
        assert written["moves"] == []  # every broker holds every partition: nothing to copy
        ours = [m for m in written["log_dirs"]["moves"] if m["broker"] == broker]
        assert ours and {(m["source"], m["target"]) for m in ours} == {(first, second)}

        run = rebalance(*execute_args(jbod, plan, tmp_path / "plan.journal"))
        assert run.returncode == 0, run.stdout + run.stderr

        placed = _dirs_of(admin, broker)
        moved = {m["partition"] for m in ours if m["topic"] == TOPIC}
        assert {p for p, (d, _) in placed.items() if d == second} == moved
        held = {d: sum(size for dd, size in placed.values() if dd == d) for d in (first, second)}
        assert min(held.values()) > 0  # both dirs hold part of the topic now
        assert _sizes(admin, broker) == sizes_before  # every byte of every replica moved
        assert admin.broker_configs([broker], [DIR_RATE])[broker][DIR_RATE] is None
    finally:
        admin.close()


def test_a_replica_arriving_on_a_jbod_broker_is_created_in_the_dir_the_plan_chose(
        jbod: SandboxInfo, tmp_path: Path) -> None:
    """Broker 1's first dir holds many empty partitions, its second a few full ones: Kafka
    alone would create a new replica in the dir with fewer partitions (the second); the plan
    chooses the dir with fewer bytes (the first), and the broker creates it there."""
    broker, other = jbod.brokers[0].id, jbod.brokers[1].id
    first, second = (str(d) for d in jbod.data_dirs(broker))
    admin = KafkaClusterAdmin(jbod.bootstrap)
    try:
        create_topics(jbod.bootstrap, [NewTopic("tiny", 20, replica_assignment=[[broker]] * 20),
                                       NewTopic("heavy", 4, replica_assignment=[[broker]] * 4),
                                       NewTopic("arrive", 1, replica_assignment=[[other]])])
        wait_for("the new topics", lambda: _partitions(admin, ["tiny", "heavy", "arrive"]) == 25,
                 30)
        producer = Producer({"bootstrap.servers": jbod.bootstrap, "acks": "all"})
        for _ in range(20):
            producer.produce("arrive", value=os.urandom(RECORD_BYTES), partition=0)
            for p in range(4):
                producer.produce("heavy", value=os.urandom(RECORD_BYTES), partition=p)
        assert producer.flush(30) == 0
        placed = {(TopicPartition("tiny", p), broker): first for p in range(20)}
        placed |= {(TopicPartition("heavy", p), broker): second for p in range(4)}
        assert set(admin.alter_replica_log_dirs(placed).values()) == {None}
        wait_for("tiny in the first dir and the topic in the second", lambda: _where(
            admin, broker, placed) == placed, 60, 1)

        plan = tmp_path / "arrive.json"
        make_plan(jbod, plan, [("arrive", 0, (broker,))], place_in_dirs=True)
        chosen = json.loads(plan.read_text())["log_dirs"]["placements"]
        assert chosen == [{"topic": "arrive", "partition": 0, "broker": broker,
                           "log_dir": first}]
        run = rebalance(*execute_args(jbod, plan, tmp_path / "arrive.journal"))
        assert run.returncode == 0, run.stdout + run.stderr
        seen = admin.log_dirs([broker])[broker]
        where, size = seen.replicas[TopicPartition("arrive", 0)]
        assert where == first and size >= 20 * RECORD_BYTES  # all copied, in the chosen dir
        assert TopicPartition("arrive", 0) not in seen.futures
    finally:
        admin.close()


def test_a_run_killed_while_replicas_move_between_dirs_resumes_and_restores_the_throttle(
        jbod: SandboxInfo, tmp_path: Path) -> None:
    """Two 4 MB replicas of broker 3 move to its other dir at 1 MB/s: the run is killed
    with the copy under way, its throttle still on the broker; resume finishes both moves
    and puts the throttle back as it was (unset)."""
    broker = jbod.brokers[2].id
    first, second = (str(d) for d in jbod.data_dirs(broker))
    admin = KafkaClusterAdmin(jbod.bootstrap)
    proc = None
    try:
        create_topics(jbod.bootstrap, [NewTopic("slow", 2, replica_assignment=[[broker]] * 2)])
        wait_for("the new topic", lambda: _partitions(admin, ["slow"]) == 2, 30)
        producer = Producer({"bootstrap.servers": jbod.bootstrap, "acks": "all",
                             "compression.type": "none"})
        for _ in range(400):  # 4 MB a partition
            for p in range(2):
                while True:
                    try:
                        producer.produce("slow", value=os.urandom(RECORD_BYTES), partition=p)
                        break
                    except BufferError:
                        producer.poll(0.1)
            producer.poll(0)
        assert producer.flush(60) == 0
        replicas = {(TopicPartition("slow", p), broker): first for p in range(2)}
        assert set(admin.alter_replica_log_dirs(replicas).values()) == {None}
        wait_for("both replicas in the first dir", lambda: _where(
            admin, broker, replicas) == replicas, 60, 1)
        sizes = {p: admin.log_dirs([broker])[broker].replicas[TopicPartition("slow", p)][1]
                 for p in range(2)}

        plan, journal = tmp_path / "slow.json", tmp_path / "slow.journal"
        make_plan(jbod, plan, [], dir_moves=tuple(
            DirMove("slow", p, broker, first, second, sizes[p]) for p in range(2)))
        proc = start_rebalance(tmp_path / "slow.log", *execute_args(
            jbod, plan, journal, max_mbps="1"))
        wait_for("a replica part-copied to the other dir", lambda: _copying(admin, broker),
                 60, 0.2)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(30)
        assert admin.broker_configs([broker], [DIR_RATE])[broker][DIR_RATE] == "1000000"
        left = read_journal(journal)
        assert left.dir_throttles == {broker: None} and left.outcome is None

        resumed = rebalance("resume", "--journal", str(journal), "--bootstrap",
                            jbod.bootstrap, "--prometheus", jbod.prometheus_url)
        assert resumed.returncode == 0, resumed.stdout + resumed.stderr
        seen = admin.log_dirs([broker])[broker]
        assert {p: seen.replicas[TopicPartition("slow", p)] for p in range(2)} == {
            p: (second, sizes[p]) for p in range(2)}
        assert not seen.futures
        assert admin.broker_configs([broker], [DIR_RATE])[broker][DIR_RATE] is None
        done = read_journal(journal)
        assert done.outcome is RunOutcome.COMPLETED and not done.dir_throttles
        assert done.dirs_ended == {f"slow-{p}@{broker}" for p in range(2)}
    finally:
        if proc is not None and proc.poll() is None:
            proc.kill()
        admin.close()


def _copying(admin: KafkaClusterAdmin, broker: int) -> bool:
    """A replica of `slow` has a future copy in another dir with some bytes in it."""
    seen = admin.log_dirs([broker])[broker]
    return any(tp.topic == "slow" and size > 0 for tp, (_, size) in seen.futures.items())


def _partitions(admin: KafkaClusterAdmin, topics: list[str]) -> int:
    """How many partitions `topics` have, 0 while one is not known to the brokers yet."""
    try:
        return len(admin.partitions(topics))
    except TopicGone:
        return 0


def _where(admin: KafkaClusterAdmin, broker: int,
           wanted: dict[tuple[TopicPartition, int], str]) -> dict[tuple[TopicPartition, int], str]:
    seen = admin.log_dirs([broker])[broker]
    if seen.futures:
        return {}
    return {(tp, b): seen.replicas[tp][0] for tp, b in wanted if tp in seen.replicas}


def _sizes(admin: KafkaClusterAdmin, broker: int) -> dict[int, int]:
    return {p: size for p, (_, size) in _dirs_of(admin, broker).items()}
