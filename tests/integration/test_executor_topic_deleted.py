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
