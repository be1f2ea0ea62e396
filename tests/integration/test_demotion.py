"""Demotion on the real cluster: `plan --demote-broker` takes every preferred leadership of a
topic off a broker and `execute` applies it with no throttle and no gate; the brokers report the
new leaders, the same replicas, and no throttle config left."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kafka_rebalance.sandbox.state import SandboxInfo
from tests.integration.executor_support import (
    create_topic,
    execute_args,
    layout,
    rebalance,
    replicas_of,
    throttle_configs,
)
from topology.kafka_admin import KafkaClusterAdmin

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("drop_exec_topics")]

CAPACITIES = Path(__file__).parents[2] / "examples" / "sandbox-capacities.yaml"


def test_a_demoted_broker_leads_nothing_and_keeps_its_replicas(
        sandbox: SandboxInfo, admin: KafkaClusterAdmin, tmp_path: Path) -> None:
    lay = layout(sandbox)
    demoted = lay.leader
    topic = create_topic(sandbox, "exec-demote", 4, [demoted, lay.follower], 1_000_000)
    before = throttle_configs(admin, lay.all_ids, topic)
    snap = tmp_path / "snap.json"
    taken = rebalance("snapshot", "--bootstrap", sandbox.bootstrap, "--out", str(snap))
    assert taken.returncode == 0, taken.stdout + taken.stderr
    doc = json.loads(snap.read_text())  # this test's topic only: the shared sandbox's other
    doc["partitions"] = [p for p in doc["partitions"] if p["topic"] == topic]  # topics stay
    snap.write_text(json.dumps(doc))

    plan = tmp_path / "demote.json"
    planned = rebalance("plan", "--snapshot", str(snap), "--capacities", str(CAPACITIES),
                        "--demote-broker", str(demoted), "--out", str(plan))
    assert planned.returncode == 0, planned.stdout + planned.stderr
    moves = json.loads(plan.read_text())["moves"]
    assert len(moves) == 4 and all(m["bytes_moved"] == 0 for m in moves)

    run = rebalance(*execute_args(sandbox, plan, tmp_path / "demote.journal"))
    output = run.stdout + run.stderr
    assert run.returncode == 0, output
    assert "leadership only: it copied nothing, no gate" in output or "gate not needed" in output
    assert "gate after" not in output, output
    assert "4 leadership-only moves start together" in output, output  # one batch, no poll each
    assert replicas_of(admin, topic) == {p: (lay.follower, demoted) for p in range(4)}
    assert all(p.leader == lay.follower for p in admin.partitions([topic]))
    assert throttle_configs(admin, lay.all_ids, topic) == before


def test_leaders_levelled_with_no_byte_copied(
        sandbox: SandboxInfo, admin: KafkaClusterAdmin, tmp_path: Path) -> None:
    """`plan --max-bytes 0 --leader-balance 0`: one broker leads all six partitions of a topic
    it shares with another; the plan reorders replicas only, and after `execute` the brokers
    report three leaders each, the same replicas, and no throttle config left."""
    lay = layout(sandbox)
    topic = create_topic(sandbox, "exec-leaders", 6, [lay.leader, lay.follower], 200_000)
    before = throttle_configs(admin, lay.all_ids, topic)
    snap = tmp_path / "snap.json"
    taken = rebalance("snapshot", "--bootstrap", sandbox.bootstrap, "--out", str(snap))
    assert taken.returncode == 0, taken.stdout + taken.stderr
    doc = json.loads(snap.read_text())
    doc["partitions"] = [p for p in doc["partitions"] if p["topic"] == topic]
    snap.write_text(json.dumps(doc))

    plan = tmp_path / "leaders.json"
    planned = rebalance("plan", "--snapshot", str(snap), "--capacities", str(CAPACITIES),
                        "--max-bytes", "0", "--leader-balance", "0", "--time-limit", "5",
                        "--out", str(plan))
    assert planned.returncode == 0, planned.stdout + planned.stderr
    written = json.loads(plan.read_text())
    assert len(written["moves"]) == 3 and all(m["bytes_moved"] == 0 for m in written["moves"])
    assert written["leader_balance"]["after"]["brokers_outside"] == 0

    run = rebalance(*execute_args(sandbox, plan, tmp_path / "leaders.journal"))
    output = run.stdout + run.stderr
    assert run.returncode == 0, output
    assert "3 leadership-only moves start together" in output, output
    replicas = replicas_of(admin, topic)
    assert all(set(row) == {lay.leader, lay.follower} for row in replicas.values())
    leaders = {p.partition: p.leader for p in admin.partitions([topic])}
    assert sorted(leaders.values()) == sorted([lay.leader] * 3 + [lay.follower] * 3), leaders
    assert all(leaders[p] == replicas[p][0] for p in range(6))  # each its preferred leader
    assert throttle_configs(admin, lay.all_ids, topic) == before
