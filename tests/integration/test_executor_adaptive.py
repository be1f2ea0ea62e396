"""`execute --adaptive` against the real sandbox: each broker's rate comes from its headroom
(capacity minus client traffic read from Prometheus), never above --max-mbps, and is what the
brokers report during the move."""

from __future__ import annotations

from pathlib import Path

import pytest

from executor.state import MoveState
from executor.throttle import FOLLOWER_RATE, LEADER_RATE
from kafka_rebalance.sandbox.state import SandboxInfo
from tests.integration.executor_support import (
    create_topic,
    execute_args,
    layout,
    make_plan,
    move_in,
    start_rebalance,
    throttle_configs,
)
from tests.integration.kafka_topics import wait_for
from topology.kafka_admin import KafkaClusterAdmin

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("drop_exec_topics")]

CAP = 5_000_000
# The leader's broker has 2 MB/s of network out: its headroom is below the cap.
CAPACITIES = """\
default: {{disk_bytes: 1TB, net_in_bytes_per_sec: 100MB/s, net_out_bytes_per_sec: 100MB/s}}
brokers:
  {leader}: {{net_out_bytes_per_sec: 2MB/s}}
"""


def test_adaptive_rates_follow_headroom_under_the_cap(
        sandbox: SandboxInfo, admin: KafkaClusterAdmin, tmp_path: Path) -> None:
    lay = layout(sandbox)
    topic = create_topic(sandbox, "exec-adapt", 1, [lay.leader, lay.follower], 6_000_000)
    caps = tmp_path / "caps.yaml"
    caps.write_text(CAPACITIES.format(leader=lay.leader))
    plan = tmp_path / "plan.json"
    moves = make_plan(sandbox, plan, [(topic, 0, (lay.leader, lay.spare))])
    journal = tmp_path / "run.journal"
    log = tmp_path / "execute.log"
    before = throttle_configs(admin, lay.all_ids, topic)
    proc = start_rebalance(log, *execute_args(sandbox, plan, journal, "--adaptive",
                                              "--capacities", str(caps),
                                              max_mbps=str(CAP / 1e6)))
    try:
        wait_for("move copying", lambda: move_in(journal, moves[0].name, MoveState.COPYING)
                 or proc.poll() is not None)
        during = throttle_configs(admin, lay.all_ids, topic)[0]
        assert proc.wait(240) == 0, log.read_text()
        after = throttle_configs(admin, lay.all_ids, topic)
    finally:
        if proc.poll() is None:
            proc.kill()
    # The receiving broker has plenty of headroom: the cap. The leader's broker: its 2 MB/s
    # capacity minus whatever client traffic it serves, never under the 1 MB/s floor.
    assert during[lay.spare][FOLLOWER_RATE] == str(CAP), during
    leader_rate = int(during[lay.leader][LEADER_RATE] or 0)
    assert 1_000_000 <= leader_rate <= 2_000_000, during
    assert after == before
