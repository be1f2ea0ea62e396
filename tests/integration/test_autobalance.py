"""`rebalance auto --once` against the real sandbox: a broker that holds nothing joins a cluster
with data; outside the window nothing changes, inside it the replicas move to the new broker,
no throttle is left on any broker or topic, and the state directory holds the plan and its
completed journal.
"""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from autobalance.imbalance import imbalance_verdict
from executor.journal import RunOutcome, read_journal
from executor.state import MoveState
from executor.throttle import BROKER_THROTTLE_CONFIGS, TOPIC_THROTTLE_CONFIGS
from planner.goals import Goals
from planner.planfile import read_plan
from sandbox import cluster
from sandbox.state import BrokerInfo, SandboxInfo
from topology.capacities import CAPACITY_KEYS, Capacities
from topology.kafka_admin import KafkaClusterAdmin
from topology.live import read_live_topology
from topology.model import TopicPartition
from topology.snapshot import topology_from_dict

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
PREFIX = "auto-it"
PARTITIONS = 6
PARTITION_BYTES = 1_500_000  # ~0.75 s per replica copy at 2 MB/s
RECORD_BYTES = 10_000
TOLERANCE = "0.3"
EQUAL = Capacities(default={k: 1e15 for k in CAPACITY_KEYS})


def rebalance(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", "import cli; cli.main()", *args],
                          capture_output=True, text=True, timeout=240, cwd=ROOT)


def create_topic(info: SandboxInfo) -> str:
    """RF-2 partitions, one replica on each rack, over the four session brokers, with data."""
    a = sorted(b.id for b in info.brokers if b.rack == "a")[:2]
    b = sorted(b.id for b in info.brokers if b.rack == "b")[:2]
    pairs = [[a[0], b[0]], [b[1], a[1]], [a[1], b[0]], [b[1], a[0]]]
    topic = f"{PREFIX}-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": info.bootstrap})
    admin.create_topics([NewTopic(topic, PARTITIONS, replica_assignment=[
        pairs[i % len(pairs)] for i in range(PARTITIONS)])])[topic].result(timeout=30)
    producer = Producer({"bootstrap.servers": info.bootstrap, "linger.ms": 50,
                         "compression.type": "none", "acks": "all"})
    payload = os.urandom(RECORD_BYTES)
    for partition in range(PARTITIONS):
        for _ in range(PARTITION_BYTES // RECORD_BYTES):
            producer.produce(topic, value=payload, partition=partition)
            producer.poll(0)
    assert producer.flush(120) == 0
    return topic


@dataclass(frozen=True)
class Grown:
    info: SandboxInfo
    new: BrokerInfo
    topic: str


@pytest.fixture(scope="module")
def grown(sandbox: SandboxInfo) -> Iterator[Grown]:
    """The sandbox with a topic of data on the session brokers and one more, empty broker."""
    topic = create_topic(sandbox)
    new = cluster.add_broker(sandbox.dir, "a")
    info = cluster.running(sandbox.dir)
    yield Grown(info, new, topic)
    admin = AdminClient({"bootstrap.servers": info.bootstrap})
    admin.delete_topics([topic])[topic].result(60)


def hhmm(at: datetime) -> str:
    return f"{at:%H:%M}"


def auto_args(info: SandboxInfo, state: Path, window: str) -> list[str]:
    return ["auto", "--once", "--bootstrap", info.bootstrap, "--prometheus",
            info.prometheus_url, "--max-mbps", "2", "--window", window, "--timezone", "UTC",
            "--state-dir", str(state), "--tolerance", TOLERANCE, "--time-limit", "20",
            "--quota-window", "2", "--poll-seconds", "0.5"]


def live(info: SandboxInfo) -> tuple[dict[TopicPartition, tuple[int, ...]],
                                     dict[int, dict[str, str | None]],
                                     dict[str, dict[str, str | None]]]:
    """Replicas of every partition and every throttle config, read back from the brokers."""
    admin = KafkaClusterAdmin(info.bootstrap)
    try:
        parts = admin.partitions()
        replicas = {p.key: p.replicas for p in parts}
        brokers = admin.broker_configs([b.id for b in info.brokers], BROKER_THROTTLE_CONFIGS)
        topics = admin.topic_configs({p.key.topic for p in parts}, TOPIC_THROTTLE_CONFIGS)
    finally:
        admin.close()
    return replicas, brokers, topics


def no_throttles(brokers: dict[int, dict[str, str | None]],
                 topics: dict[str, dict[str, str | None]]) -> bool:
    return (all(v is None for c in brokers.values() for v in c.values())
            and all(not v for c in topics.values() for v in c.values()))


def test_outside_the_window_nothing_changes(grown: Grown, tmp_path: Path) -> None:
    info, new = grown.info, grown.new
    admin = KafkaClusterAdmin(info.bootstrap)
    try:
        topology = topology_from_dict(read_live_topology(admin, None, EQUAL).document, EQUAL,
                                      "sandbox")
    finally:
        admin.close()
    assert imbalance_verdict(topology, Goals(float(TOLERANCE))).due  # there is work to do
    before = live(info)
    now = datetime.now(UTC)
    window = f"daily {hhmm(now + timedelta(hours=3))}-{hhmm(now + timedelta(hours=4))}"
    state = tmp_path / "state"
    result = rebalance(*auto_args(info, state, window))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "sleep: outside the windows" in result.stdout, result.stdout
    assert live(info) == before
    assert all(new.id not in r for r in before[0].values())
    assert not list(state.glob("plan-*"))


def test_inside_the_window_replicas_move_to_the_new_broker(grown: Grown,
                                                          tmp_path: Path) -> None:
    info, new = grown.info, grown.new
    _, brokers_before, topics_before = live(info)
    assert no_throttles({new.id: brokers_before[new.id]}, {grown.topic: topics_before[grown.topic]})
    now = datetime.now(UTC)
    window = f"daily {hhmm(now - timedelta(minutes=30))}-{hhmm(now + timedelta(hours=2))}"
    state = tmp_path / "state"
    result = rebalance(*auto_args(info, state, window))
    log = result.stdout + result.stderr
    assert result.returncode == 0, log
    assert "rebalance: rebalance due" in result.stdout, log

    plans = sorted(state.glob("plan-*.json"))
    assert len(plans) == 1, log
    plan = read_plan(plans[0])
    journal = read_journal(plans[0].with_name(plans[0].name + ".journal"))
    assert journal.outcome is RunOutcome.COMPLETED, log
    assert all(journal.state_of(m.name) is MoveState.DONE for m in plan.moves)
    assert plan.budget.max_bytes is not None and plan.budget.max_bytes > 0

    replicas, brokers, topics = live(info)
    assert any(new.id in m.target for m in plan.moves), log
    for move in plan.moves:
        assert replicas[move.key] == move.target, move.name
    assert sum(new.id in r for r in replicas.values()) > 0
    # every throttle config is as it was (the run's own removed, any other left alone) ...
    assert (brokers, topics) == (brokers_before, topics_before)
    # ... and none is set on the new broker or the test topic
    assert no_throttles({new.id: brokers[new.id]}, {grown.topic: topics[grown.topic]})
