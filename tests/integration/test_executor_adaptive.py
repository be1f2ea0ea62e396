"""`execute --adaptive` against the real sandbox: each broker's rate comes from its headroom
(capacity minus client traffic read from Prometheus), never above --max-mbps, and is what the
brokers report during the move."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))  # the sibling module's helpers (importlib mode)
from test_executor_run import (
    create_topic,
    drop_test_topics,
    layout,
    make_plan,
    move_in,
    start_rebalance,
    throttle_configs,
    wait_for,
)

from executor.state import MoveState
from executor.throttle import FOLLOWER_RATE, LEADER_RATE
from sandbox.state import SandboxInfo
from topology.kafka_admin import KafkaClusterAdmin

pytestmark = pytest.mark.integration


@pytest.fixture(autouse=True)
def _drop_topics(sandbox: SandboxInfo) -> Iterator[None]:
    yield
    drop_test_topics(sandbox)

CAP = 5_000_000
# The leader's broker has 2 MB/s of network out: its headroom is below the cap.
CAPACITIES = """\
default: {{disk_bytes: 1TB, net_in_bytes_per_sec: 100MB/s, net_out_bytes_per_sec: 100MB/s}}
brokers:
  {leader}: {{net_out_bytes_per_sec: 2MB/s}}
"""


def test_adaptive_rates_follow_headroom_under_the_cap(sandbox: SandboxInfo, tmp_path: Path
                                                      ) -> None:
    lay = layout(sandbox)
    topic = create_topic(sandbox, "exec-adapt", 1, [lay.leader, lay.follower], 6_000_000)
    caps = tmp_path / "caps.yaml"
    caps.write_text(CAPACITIES.format(leader=lay.leader))
    plan = tmp_path / "plan.json"
    moves = make_plan(sandbox, plan, [(topic, 0, (lay.leader, lay.spare))])
    journal = tmp_path / "run.journal"
    log = tmp_path / "execute.log"
    admin = KafkaClusterAdmin(sandbox.bootstrap)
    before = throttle_configs(admin, lay.all_ids, topic)
    proc = start_rebalance(log, "execute", str(plan), "--bootstrap", sandbox.bootstrap,
                           "--prometheus", sandbox.prometheus_url, "--max-mbps",
                           str(CAP / 1e6), "--adaptive", "--capacities", str(caps),
                           "--journal", str(journal), "--poll-seconds", "0.5")
    try:
        wait_for("move copying", lambda: move_in(journal, moves[0].name, MoveState.COPYING)
                 or proc.poll() is not None)
        during = throttle_configs(admin, lay.all_ids, topic)[0]
        assert proc.wait(240) == 0, log.read_text()
        after = throttle_configs(admin, lay.all_ids, topic)
    finally:
        if proc.poll() is None:
            proc.kill()
        admin.close()
    # The receiving broker has plenty of headroom: the cap. The leader's broker: its 2 MB/s
    # capacity minus whatever client traffic it serves, never under the 1 MB/s floor.
    assert during[lay.spare][FOLLOWER_RATE] == str(CAP), during
    leader_rate = int(during[lay.leader][LEADER_RATE] or 0)
    assert 1_000_000 <= leader_rate <= 2_000_000, during
    assert after == before
