"""A topic deleted while the run copies one of its partitions, on the real cluster: that move
ends cancelled with the reason, the run's other move (another topic, the same brokers) still
completes, and no throttle is left on any broker, read back from the brokers."""

from __future__ import annotations

from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient

from executor.journal import read_journal
from executor.state import MoveState
from executor.throttle import BROKER_THROTTLE_CONFIGS
from kafka_rebalance.sandbox.state import SandboxInfo
from tests.integration.executor_support import (
    create_topic,
    execute_args,
    layout,
    make_plan,
    move_in,
    rebalance,
    replicas_of,
    start_rebalance,
)
from tests.integration.kafka_topics import wait_for
from topology.kafka_admin import KafkaClusterAdmin

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("drop_exec_topics")]


def test_a_topic_deleted_mid_copy_ends_its_move_and_the_run_goes_on(
        sandbox: SandboxInfo, admin: KafkaClusterAdmin, tmp_path: Path) -> None:
    lay = layout(sandbox)
    doomed = create_topic(sandbox, "exec-gone", 1, [lay.leader, lay.follower], 8_000_000)
    kept = create_topic(sandbox, "exec-kept", 1, [lay.leader, lay.follower], 1_000_000)
    before = admin.broker_configs(lay.all_ids, BROKER_THROTTLE_CONFIGS)
    plan = tmp_path / "plan.json"
    moves = make_plan(sandbox, plan, [(doomed, 0, (lay.leader, lay.spare)),
                                      (kept, 0, (lay.leader, lay.spare))])
    journal, log = tmp_path / "run.journal", tmp_path / "execute.log"
    proc = start_rebalance(log, *execute_args(sandbox, plan, journal, max_mbps="0.5"))
    try:
        wait_for("the doomed move copying",
                 lambda: move_in(journal, moves[0].name, MoveState.COPYING))
        client = AdminClient({"bootstrap.servers": sandbox.bootstrap})
        client.delete_topics([doomed])[doomed].result(60)
        code = proc.wait(300)
    finally:
        if proc.poll() is None:
            proc.kill()
    text = log.read_text()
    assert "Traceback" not in text and "retrying next poll" not in text, text
    assert code == 6, text  # a move cancelled: the run stopped short of its plan
    state = read_journal(journal)
    assert state.state_of(moves[0].name) is MoveState.CANCELLED, text
    assert f"topic {doomed} was deleted during the run" in state.moves[moves[0].name].reason
    assert state.state_of(moves[1].name) is MoveState.DONE, text
    assert replicas_of(admin, kept) == {0: (lay.leader, lay.spare)}
    assert not admin.list_partition_reassignments()
    wait_for("the brokers' throttles restored",
             lambda: admin.broker_configs(lay.all_ids, BROKER_THROTTLE_CONFIGS) == before)


def test_a_plan_whose_topic_was_deleted_since_is_refused_as_stale(
        sandbox: SandboxInfo, admin: KafkaClusterAdmin, tmp_path: Path) -> None:
    """Deleted after the plan was reviewed: the dry run and the run say the plan is stale
    (exit 6, "make a new plan"), not that Kafka cannot describe a topic (exit 3); nothing is
    written or changed."""
    lay = layout(sandbox)
    gone = create_topic(sandbox, "exec-stale", 1, [lay.leader, lay.follower], 100_000)
    kept = create_topic(sandbox, "exec-fresh", 1, [lay.leader, lay.follower], 100_000)
    plan = tmp_path / "plan.json"
    make_plan(sandbox, plan, [(gone, 0, (lay.leader, lay.spare)),
                              (kept, 0, (lay.leader, lay.spare))])
    client = AdminClient({"bootstrap.servers": sandbox.bootstrap})
    client.delete_topics([gone])[gone].result(60)
    wait_for("the topic gone from the metadata",
             lambda: all(p.topic != gone for p in admin.partitions()))
    before = admin.broker_configs(lay.all_ids, BROKER_THROTTLE_CONFIGS)
    journal = tmp_path / "run.journal"
    for extra in (["--dry-run"], []):
        done = rebalance(*execute_args(sandbox, plan, journal, *extra))
        said = done.stdout + done.stderr
        assert done.returncode == 6, said
        assert f"the cluster no longer matches the plan: {gone}-0 (no longer exists)" in said
        assert "make a new plan" in said and "Traceback" not in said
    assert not journal.exists()
    assert admin.broker_configs(lay.all_ids, BROKER_THROTTLE_CONFIGS) == before
    assert replicas_of(admin, kept) == {0: (lay.leader, lay.follower)}


def test_a_drain_that_completes_tells_what_its_broker_still_holds(
        sandbox: SandboxInfo, admin: KafkaClusterAdmin, tmp_path: Path) -> None:
    """A topic made on the drained broker after the drain was planned: the run completes
    (exit 0) and then says the broker still holds it, with its only replica there."""
    lay = layout(sandbox)
    drained = lay.spare
    topic = create_topic(sandbox, "exec-drained", 1, [lay.leader, drained], 100_000)
    plan = tmp_path / "plan.json"
    make_plan(sandbox, plan, [(topic, 0, (lay.leader, lay.follower))],
              remove=frozenset({drained}))
    late = create_topic(sandbox, "exec-late", 1, [drained], 10_000)
    journal = tmp_path / "run.journal"
    done = rebalance(*execute_args(sandbox, plan, journal))
    said = " ".join((done.stdout + done.stderr).split())
    assert done.returncode == 0, said
    assert replicas_of(admin, topic) == {0: (lay.leader, lay.follower)}
    # (the hand-made plan leaves the internal topics' replicas there too)
    assert f"warning: broker(s) [{drained}] still hold " in said, said
    assert f"1 have every replica there ({late}-0) and would be lost" in said, said
