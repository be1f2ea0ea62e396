"""Plan against the real sandbox after adding a broker; Kafka's own reassign tool executes it.

Topics with data on the four session brokers, one more broker started, a snapshot of the live
cluster, `rebalance plan --add-broker`, then `ReassignPartitionsCommand --execute` with the plan
file as is, `--verify` until complete, and the replicas read back from the brokers equal the plan.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import NewTopic

from kafka_rebalance.files.planfile import read_plan
from kafka_rebalance.sandbox import cluster
from kafka_rebalance.sandbox.state import SandboxInfo
from planner.validate import validate_plan
from tests.integration import executor_support
from tests.integration.executor_support import own_sandbox as module_sandbox
from tests.integration.kafka_topics import create_topics
from topology.kafka_admin import KafkaClusterAdmin
from topology.model import TopicPartition
from topology.snapshot import read_snapshot

pytestmark = pytest.mark.integration

TOPIC = f"plan-it-{int(time.time())}"  # unique, so a reused sandbox works too
PARTITIONS = 12
CAPACITIES = """\
default: {disk_bytes: 1GB, net_in_bytes_per_sec: 100MB/s, net_out_bytes_per_sec: 100MB/s}
"""
REASSIGN = "org.apache.kafka.tools.reassign.ReassignPartitionsCommand"


def rebalance(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", "import cli; cli.main()", *args],
                          capture_output=True, text=True, timeout=300,
                          cwd=Path(__file__).resolve().parents[2])


def create_topic_with_data(info: SandboxInfo) -> None:
    """RF-2 partitions spread rack-aware over the session brokers, sizes 40-150 kB."""
    ids = sorted(b.id for b in info.brokers)[:4]
    racks = {b.id: b.rack for b in info.brokers}
    pairs = [(a, b) for a in ids for b in ids if racks[a] != racks[b]]
    assignment = [list(pairs[i % len(pairs)]) for i in range(PARTITIONS)]
    create_topics(info.bootstrap, [NewTopic(TOPIC, len(assignment),
                                            replica_assignment=assignment)])
    producer = Producer({"bootstrap.servers": info.bootstrap, "linger.ms": 20,
                         "compression.type": "none"})
    for partition in range(PARTITIONS):
        for _ in range(40 + 10 * partition):
            producer.produce(TOPIC, value=b"v" * 1000, partition=partition)
        producer.poll(0)
    assert producer.flush(60) == 0


def reassign_tool(info: SandboxInfo, plan: Path, action: str) -> str:
    result = subprocess.run(
        ["java", "-cp", f"{info.jar_dir}/*", REASSIGN, "--bootstrap-server", info.bootstrap,
         "--reassignment-json-file", str(plan), action],
        capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def live_replicas(info: SandboxInfo) -> dict[TopicPartition, tuple[int, ...]]:
    admin = KafkaClusterAdmin(info.bootstrap)
    try:
        return {p.key: p.replicas for p in admin.partitions()}
    finally:
        admin.close()


@pytest.fixture(scope="module")
def own_sandbox(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SandboxInfo]:
    """A 4-broker, 2-rack sandbox of this test's own: the session's shared one carries what
    earlier tests left (big topics, an emptied added broker), which changes what a balanced
    plan looks like and so what this test can assert."""
    with module_sandbox(tmp_path_factory, "plan-sandbox", 28090) as info:
        yield info


def test_kafka_executes_the_plan_file_as_is(own_sandbox: SandboxInfo, tmp_path: Path) -> None:
    sandbox = own_sandbox
    create_topic_with_data(sandbox)
    new = cluster.add_broker(sandbox.dir, "a")
    info = cluster.running(sandbox.dir)
    caps = tmp_path / "caps.yaml"
    caps.write_text(CAPACITIES)
    snap = tmp_path / "snap.json"
    taken = rebalance("snapshot", "--bootstrap", info.bootstrap, "--capacities", str(caps),
                      "--out", str(snap))
    assert taken.returncode == 0, taken.stderr
    topology = read_snapshot(snap)
    assert new.id in topology.broker_ids
    # each broker's quota window as it describes it (the sandbox sets 3 samples of 1 s), which
    # the plan keeps for its review's ETA
    assert {b.quota_window_seconds for b in topology.brokers} == {
        float(executor_support.QUOTA_WINDOW_SAMPLES)}

    # Offline from the snapshot, and online straight from the cluster: the same placement.
    offline = tmp_path / "offline.json"
    result = rebalance("plan", "--snapshot", str(snap), "--add-broker", str(new.id),
                       "--tolerance", "0.3", "--time-limit", "10", "--out", str(offline))
    assert result.returncode == 0, result.stdout + result.stderr
    plan_path = tmp_path / "plan.json"
    result = rebalance("plan", "--bootstrap", info.bootstrap, "--capacities", str(caps),
                       "--add-broker", str(new.id), "--tolerance", "0.3",
                       "--time-limit", "10", "--out", str(plan_path))
    assert result.returncode == 0, result.stdout + result.stderr
    plan = read_plan(plan_path)
    assert plan.fingerprint == read_plan(offline).fingerprint == topology.fingerprint()
    assert plan.moves, result.stdout
    assert any(new.id in m.target for m in plan.moves), (
        new.id, [(m.name, m.current, m.target) for m in plan.moves], result.stdout)
    assert validate_plan(topology, plan.moves, plan.goals).valid
    assert plan.quota_window_seconds() == executor_support.QUOTA_WINDOW_SAMPLES

    out = reassign_tool(info, plan_path, "--execute")
    assert "Successfully started partition reassignment" in out
    deadline = time.monotonic() + 120
    while "still in progress" in (verify := reassign_tool(info, plan_path, "--verify")):
        assert time.monotonic() < deadline, verify
        time.sleep(2)
    replicas = live_replicas(info)
    for move in plan.moves:
        assert replicas[move.key] == move.target, move.name
