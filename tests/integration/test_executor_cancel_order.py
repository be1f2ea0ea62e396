"""Cancel puts back the replica order and the preferred leader, on a sandbox of this test's own.

(leader, follower) -> (follower, second broker of rack a): Kafka's KIP-455 cancel reverts to
the original replicas in the in-flight order, (follower, leader), which would hand the
preferred leadership to the follower. The executor reorders them as they were and elects the
original leader. The shared session sandbox carries what earlier tests left (large topics, an
added broker), which can make the validator judge this test-only plan a worse balance.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from executor.journal import read_journal
from executor.state import MoveState
from kafka_rebalance.sandbox.state import SandboxInfo
from tests.integration.executor_support import (
    create_topic,
    execute_args,
    layout,
    make_plan,
    move_in,
    own_sandbox,
    rebalance,
    replicas_of,
    start_rebalance,
    throttle_configs,
)
from tests.integration.kafka_topics import wait_for
from topology.kafka_admin import KafkaClusterAdmin

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def own(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SandboxInfo]:
    with own_sandbox(tmp_path_factory, "cancel-order-sandbox", 26090) as info:
        yield info


def test_cancel_puts_back_the_replica_order_and_the_preferred_leader(
        own: SandboxInfo, tmp_path: Path) -> None:
    lay = layout(own)
    topic = create_topic(own, "exec-order", 1, [lay.leader, lay.follower], 8_000_000)
    admin = KafkaClusterAdmin(own.bootstrap)
    try:
        before = throttle_configs(admin, lay.all_ids, topic)
        plan = tmp_path / "plan.json"
        move = make_plan(own, plan, [(topic, 0, (lay.follower, lay.spare_a))])[0]
        journal, log = tmp_path / "run.journal", tmp_path / "execute.log"
        proc = start_rebalance(log, *execute_args(own, plan, journal, max_mbps="0.5"))
        try:
            wait_for("the move copying", lambda: move_in(journal, move.name, MoveState.COPYING)
                     or proc.poll() is not None)
            assert proc.poll() is None, log.read_text()
            cancelled = rebalance("cancel", "--journal", str(journal), "--bootstrap",
                                  own.bootstrap)
            assert cancelled.returncode == 0, cancelled.stdout + cancelled.stderr
            code = proc.wait(120)
        finally:
            if proc.poll() is None:
                proc.kill()
        assert code == 8, log.read_text()  # cancelled as asked
        assert read_journal(journal).state_of(move.name) is MoveState.CANCELLED
        assert replicas_of(admin, topic) == {0: (lay.leader, lay.follower)}
        wait_for("the original leader to lead again",
                 lambda: next(p.leader for p in admin.partitions([topic])) == lay.leader, 30)
        assert not admin.list_partition_reassignments()
        assert throttle_configs(admin, lay.all_ids, topic) == before
    finally:
        admin.close()
