"""A broker added to one zone of a three-zone cluster, RF 3: planned and executed for real.

With one replica of every partition in each zone, zone a's three brokers can only carry a third
of the replicas between them, less than the cluster average; zones b and c cannot drop below
theirs. The plan must say so (targets forced, the reason naming the zone) and fill the new
broker to its zone's level rather than to the cluster average; the executor must carry it
out: the replicas read back from the brokers equal the plan, and no
throttle is left behind.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import NewTopic

from executor.throttle import BROKER_THROTTLE_CONFIGS
from kafka_rebalance.files.planfile import read_plan
from kafka_rebalance.sandbox import cluster
from kafka_rebalance.sandbox.state import SandboxInfo
from planner.validate import validate_plan
from tests.integration.executor_support import execute_args, own_sandbox, rebalance
from tests.integration.kafka_topics import create_topics
from topology.kafka_admin import KafkaClusterAdmin
from topology.model import Resource
from topology.snapshot import read_snapshot

pytestmark = pytest.mark.integration

TOPIC = "zones"
PARTITIONS = 9
CAPACITIES = """\
default: {disk_bytes: 20MB, net_in_bytes_per_sec: 100MB/s, net_out_bytes_per_sec: 100MB/s}
"""


@pytest.fixture(scope="module")
def zoned(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SandboxInfo]:
    """Six brokers on racks a, b, c (two each) of this test's own."""
    with own_sandbox(tmp_path_factory, "zones-sandbox", 27090, brokers=6, racks=3,
                     port_room=10) as info:
        yield info


def fill_topic(info: SandboxInfo) -> None:
    """RF 3, one replica per zone, leaders rotating; 150-550 kB per partition."""
    by_rack: dict[str, list[int]] = {}
    for broker in sorted(info.brokers, key=lambda b: b.id):
        by_rack.setdefault(str(broker.rack), []).append(broker.id)
    racks = sorted(by_rack)
    assignment = []
    for p in range(PARTITIONS):
        row = [by_rack[rack][(p + i) % 2] for i, rack in enumerate(racks)]
        assignment.append(row[p % 3:] + row[: p % 3])
    create_topics(info.bootstrap, [NewTopic(TOPIC, PARTITIONS, replica_assignment=assignment)])
    producer = Producer({"bootstrap.servers": info.bootstrap, "linger.ms": 20,
                         "compression.type": "none"})
    for p in range(PARTITIONS):
        for _ in range(150 + 50 * p):
            producer.produce(TOPIC, value=b"z" * 1000, partition=p)
        producer.poll(0)
    assert producer.flush(60) == 0


def test_a_broker_added_to_one_zone_is_filled_to_its_zone_level(
        zoned: SandboxInfo, tmp_path: Path) -> None:
    fill_topic(zoned)
    new = cluster.add_broker(zoned.dir, "a")
    info = cluster.running(zoned.dir)
    caps = tmp_path / "caps.yaml"
    caps.write_text(CAPACITIES)
    snap = tmp_path / "snap.json"
    deadline = time.monotonic() + 120
    # Plan on the rates the executor's preflight will see: none, once it is quiet. A short
    # rate window (the sandbox scrapes every second) lets the produce traffic leave it soon.
    while True:
        taken = rebalance("snapshot", "--bootstrap", info.bootstrap, "--prometheus",
                          info.prometheus_url, "--capacities", str(caps), "--rate-window",
                          "10s", "--out", str(snap))
        assert taken.returncode == 0, taken.stderr
        topology = read_snapshot(snap)
        if all(p.bytes_in_per_sec == 0 for p in topology.partitions if p.topic == TOPIC):
            break
        assert time.monotonic() < deadline, "the produce traffic never left Prometheus' window"
        time.sleep(3)
    plan_path = tmp_path / "plan.json"
    made = rebalance("plan", "--snapshot", str(snap), "--add-broker", str(new.id),
                     "--time-limit", "10", "--out", str(plan_path))
    assert made.returncode == 0, made.stdout + made.stderr
    assert "holds exactly 1 replica of every partition" in made.stdout, made.stdout
    plan = read_plan(plan_path)
    report = validate_plan(topology, plan.moves, plan.goals)
    assert report.valid and report.balanced, (report.errors, report.warnings)
    assert plan.targets is not None and plan.targets.forced[0]  # disk is zone-bound
    zone_a = [b.id for b in topology.brokers if b.rack == "a"]
    others = [b.id for b in topology.brokers if b.rack != "a"]
    average = plan.after.resource(Resource.DISK).average
    target_a = plan.targets.of(new.id, Resource.DISK)
    assert target_a is not None and target_a < 0.9 * average  # a third of the data on 3 of 7
    assert all((plan.targets.of(b, Resource.DISK) or 0) > 1.1 * average for b in others)
    assert any(new.id in m.added_brokers for m in plan.moves)
    after = {b.id: b for b in plan.after.brokers}
    disk = [after[b].load.disk_bytes for b in zone_a]
    assert min(disk) > 0.6 * max(disk), disk  # the new broker is level with its zone peers
    assert json.loads(plan_path.read_text())["targets"]["forced"]["disk"] is True

    journal = tmp_path / "plan.json.journal"
    run = rebalance(*execute_args(info, plan_path, journal, "--quota-window", "0",
                                  "--concurrency", "2", max_mbps="20", hand_made=False),
                    timeout=600)
    assert run.returncode == 0, run.stdout + run.stderr
    admin = KafkaClusterAdmin(info.bootstrap)
    try:
        live = {p.key: p.replicas for p in admin.partitions([TOPIC])}
        for move in plan.moves:
            assert live[move.key] == move.target, move.name
        ids = [b.id for b in info.brokers]
        deadline = time.monotonic() + 30
        while any(value is not None for configs in
                  admin.broker_configs(ids, BROKER_THROTTLE_CONFIGS).values()
                  for value in configs.values()):
            assert time.monotonic() < deadline, "a replication throttle was left behind"
            time.sleep(1)
    finally:
        admin.close()
