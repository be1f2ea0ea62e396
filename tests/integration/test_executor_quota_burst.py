"""An operator's `follower.replication.throttled.replicas=*` on a topic the receiving broker
follows keeps that broker's follower quota counting in-sync traffic, so Kafka would let a new
replica's first seconds copy far above the cap. The run is refused before it changes anything,
naming the topic and the fix; `--allow-quota-burst` runs it and leaves the wildcard as it was."""

from __future__ import annotations

from pathlib import Path

import pytest

from executor.throttle import FOLLOWER_REPLICAS
from kafka_rebalance.sandbox.state import SandboxInfo
from tests.integration.executor_support import (
    create_topic,
    execute_args,
    layout,
    make_plan,
    rebalance,
    replicas_of,
    throttle_configs,
)
from topology.kafka_admin import KafkaClusterAdmin

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("drop_exec_topics")]


def test_a_wildcard_follower_list_on_the_receivers_topic_refuses_then_allowed_keeps_it(
        sandbox: SandboxInfo, admin: KafkaClusterAdmin, tmp_path: Path) -> None:
    lay = layout(sandbox)
    moved = create_topic(sandbox, "exec-burst", 1, [lay.leader, lay.follower], 2_000_000)
    followed = create_topic(sandbox, "exec-burst-star", 1, [lay.spare_a, lay.spare], 0)
    admin.alter_topic_configs({followed: {FOLLOWER_REPLICAS: "*"}})
    before = (throttle_configs(admin, lay.all_ids, moved),
              admin.topic_configs([followed], [FOLLOWER_REPLICAS]))
    plan = tmp_path / "plan.json"
    make_plan(sandbox, plan, [(moved, 0, (lay.leader, lay.spare))])

    refused = rebalance(*execute_args(sandbox, plan, tmp_path / "refused.journal"))
    assert refused.returncode == 6, refused.stdout + refused.stderr
    assert f"topic {followed} has {FOLLOWER_REPLICAS}=*" in refused.stderr, refused.stderr
    assert f"broker(s) [{lay.spare}]" in refused.stderr and "--delete-config" in refused.stderr
    assert not (tmp_path / "refused.journal").exists()
    assert replicas_of(admin, moved) == {0: (lay.leader, lay.follower)}
    assert (throttle_configs(admin, lay.all_ids, moved),
            admin.topic_configs([followed], [FOLLOWER_REPLICAS])) == before

    allowed = rebalance(*execute_args(sandbox, plan, tmp_path / "allowed.journal",
                                      "--allow-quota-burst"))
    assert allowed.returncode == 0, allowed.stdout + allowed.stderr
    assert f"topic {followed} has {FOLLOWER_REPLICAS}=*" in allowed.stdout + allowed.stderr
    assert replicas_of(admin, moved) == {0: (lay.leader, lay.spare)}
    assert (throttle_configs(admin, lay.all_ids, moved),
            admin.topic_configs([followed], [FOLLOWER_REPLICAS])) == before
