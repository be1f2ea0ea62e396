"""Topic follower lists that keep a receiving broker's follower quota warm: a run is refused
(or warned, with --allow-quota-burst), because Kafka lets its first seconds pass unthrottled."""

from __future__ import annotations

import pytest

from executor.preflight import ClusterView, warm_follower_quotas
from executor.runner import Executor, preview
from executor.throttle import FOLLOWER_REPLICAS
from kafka_rebalance.core.errors import ExecutionError
from kafka_rebalance.core.ports import PartitionInfo
from planner.result import Move
from tests.unit.executor.fakes import make_world
from topology.model import TopicPartition


def view_of(*parts: tuple[str, int, tuple[int, ...]]) -> ClusterView:
    infos = [PartitionInfo(t, p, r, r, r[0]) for t, p, r in parts]
    return ClusterView((), {i.key: i for i in infos}, {})


CLUSTER = view_of(("logs", 0, (1, 2)), ("logs", 1, (2, 3)), ("audit", 0, (1, 3)))
ONTO_2_3_4 = [Move("audit", 0, (1, 3), (2, 1), 1), Move("audit", 1, (5, 6), (3, 4), 1)]


@pytest.mark.parametrize(("value", "warm"), [
    ("*", [2, 3]),
    (" * ", [2, 3]),
    ("1:3", [3]),  # broker 3 follows logs-1 and the entry names it
    ("0:3", []),  # broker 3 holds no replica of logs-0: nothing recorded
    ("0:1,0:2,1:2", [2]),
    ("", []),
])
def test_a_follower_list_naming_a_receiver_on_a_replica_it_holds_is_warm(
        value: str, warm: list[int]) -> None:
    problems = warm_follower_quotas(CLUSTER, ONTO_2_3_4, {"logs": value, "audit": None})
    if warm:
        assert len(problems) == 1
        assert problems[0].startswith(f"topic logs has {FOLLOWER_REPLICAS}=")
        assert f"broker(s) {warm}" in problems[0]
        assert "--allow-quota-burst" in problems[0] and "--delete-config" in problems[0]
    else:
        assert problems == []


def test_entries_the_run_added_itself_are_not_counted() -> None:
    onto_3 = [Move("audit", 1, (5, 6), (5, 3), 1)]
    own = frozenset({("logs", "1:3")})
    assert warm_follower_quotas(CLUSTER, onto_3, {"logs": "1:3"}, own) == []
    assert warm_follower_quotas(CLUSTER, onto_3, {"logs": "1:3", "audit": "0:3"}, own) != []


def test_a_replica_an_earlier_move_gives_the_receiver_counts() -> None:
    """Broker 4 holds nothing of "audit" now; the run's first move gives it audit-1, whose
    wildcard then keeps its quota warm for the second move onto it."""
    moves = [Move("audit", 1, (5, 6), (5, 4), 1), Move("logs", 0, (1, 2), (1, 4), 1)]
    problems = warm_follower_quotas(CLUSTER, moves, {"audit": "*", "logs": None})
    assert len(problems) == 1 and "topic audit" in problems[0] and "[4]" in problems[0]
    assert warm_follower_quotas(CLUSTER, moves[1:], {"audit": "*"}) == []


def test_a_wildcard_on_a_topic_the_target_follows_refuses_the_run_and_changes_nothing() -> None:
    world = make_world()
    world.admin.topic_cfg["other"] = {FOLLOWER_REPLICAS: "*"}  # other-0 sits on 1, 2, 3
    world.admin.calls.clear()
    with pytest.raises(ExecutionError, match="preflight refused") as info:
        Executor.start(world.plan, world.ports(), world.config, world.open_sink)
    assert "topic other has follower.replication.throttled.replicas=*" in str(info.value)
    assert "broker(s) [3]" in str(info.value)  # 3 receives orders-0; 4 holds nothing of other
    assert not [n for n, _ in world.admin.calls if n.startswith("alter")]
    assert world.sink.records == []
    assert world.admin.topic_cfg["other"] == {FOLLOWER_REPLICAS: "*"}


def test_allow_quota_burst_runs_with_a_warning_and_keeps_the_wildcard() -> None:
    world = make_world(allow_quota_burst=True)
    world.admin.topic_cfg["other"] = {FOLLOWER_REPLICAS: "*"}
    executor = Executor.start(world.plan, world.ports(), world.config, world.open_sink,
                              reporter=world.reporter)
    executor.run()
    assert any("topic other has" in e.message for e in world.events)
    assert world.admin.topic_cfg["other"] == {FOLLOWER_REPLICAS: "*"}
    assert world.admin.parts[TopicPartition("orders", 0)].replicas == (3, 2)


def test_dry_run_lists_the_warm_quota_as_a_problem() -> None:
    world = make_world()
    world.admin.topic_cfg["other"] = {FOLLOWER_REPLICAS: "0:3"}
    shown = preview(world.plan, world.ports(), world.config)
    assert any("topic other has" in p for p in shown.problems)
