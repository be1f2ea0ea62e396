"""Topic spread on the real cluster: two topics of equal partitions, each on its own pair of
brokers (bytes level, every topic crowding half the brokers); `plan --topic-spread 0.5` moves
them apart with balance kept, `execute` applies it, and the assignment read back from the
brokers holds no topic above its caps."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kafka_rebalance.files.planfile import read_plan
from kafka_rebalance.sandbox.state import SandboxInfo
from planner.arrays import to_arrays
from planner.goals import Goals
from planner.spread import crowding
from tests.integration.executor_support import create_topic, execute_args, layout, rebalance
from topology.kafka_admin import KafkaClusterAdmin
from topology.model import TopicPartition, replace_replicas
from topology.snapshot import read_snapshot

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("drop_exec_topics")]

CAPACITIES = Path(__file__).parents[2] / "examples" / "sandbox-capacities.yaml"
SPREAD = 0.5


def test_crowded_topics_are_spread_and_the_brokers_report_it(
        sandbox: SandboxInfo, admin: KafkaClusterAdmin, tmp_path: Path) -> None:
    lay = layout(sandbox)
    one = create_topic(sandbox, "exec-spread-a", 4, [lay.leader, lay.follower], 300_000)
    two = create_topic(sandbox, "exec-spread-b", 4, [lay.spare_a, lay.spare], 300_000)
    snap = tmp_path / "snap.json"
    taken = rebalance("snapshot", "--bootstrap", sandbox.bootstrap, "--capacities",
                      str(CAPACITIES), "--out", str(snap))
    assert taken.returncode == 0, taken.stdout + taken.stderr
    doc = json.loads(snap.read_text())  # this test's topics only: the shared sandbox's other
    doc["partitions"] = [p for p in doc["partitions"] if p["topic"] in (one, two)]  # stay
    snap.write_text(json.dumps(doc))

    plan = tmp_path / "spread.json"
    planned = rebalance("plan", "--snapshot", str(snap), "--topic-spread", str(SPREAD),
                        "--tolerance", "0.5",
                        "--time-limit", "6", "--out", str(plan))
    assert planned.returncode == 0, planned.stdout + planned.stderr
    assert "crowd a broker before the plan" in planned.stdout, planned.stdout
    made = read_plan(plan)
    assert made.spread is not None and made.spread.before.topics == 2, made.spread
    assert made.spread.after.none, (made.spread, planned.stdout)

    run = rebalance(*execute_args(sandbox, plan, tmp_path / "spread.journal"), timeout=600)
    assert run.returncode == 0, run.stdout + run.stderr
    live = {p.key: p.replicas for p in admin.partitions([one, two])}
    for move in made.moves:
        assert live[move.key] == move.target, move.name
    topology = read_snapshot(snap)
    placed = replace_replicas(topology, {TopicPartition(p.topic, p.partition): live[p.key]
                                         for p in topology.partitions})
    goals = Goals(tolerance=0.5, topic_spread=SPREAD)
    arrays = to_arrays(placed, goals)
    assert crowding(arrays, arrays.replicas, SPREAD).none
    before = to_arrays(topology, goals)
    assert crowding(before, before.replicas, SPREAD).topics == 2
