"""Topic spread (`plan --topic-spread TOL`): caps from fair shares (the rack rule's forced
share included), a level cluster whose topics crowd brokers gets spread with balance kept,
and without the goal plans are what they were."""

from __future__ import annotations

import numpy as np
import pytest

from kafka_rebalance.core.errors import InputError
from kafka_rebalance.files.planfile import plan_from_dict, plan_to_dict
from kafka_rebalance.usecases.plan import PlanSettings, build_plan
from planner.arrays import to_arrays
from planner.goals import Budget, Goals
from planner.result import SolverStatus
from planner.solve import plan
from planner.spread import crowding, spread_caps, topic_counts
from planner.validate import validate_plan
from topology.model import Broker, Capacity, Partition, Topology
from topology.synthetic import generate_cluster

CAP = Capacity(disk_bytes=10_000_000, net_in_bytes_per_sec=1_000_000,
               net_out_bytes_per_sec=1_000_000)


def level_but_crowded() -> Topology:
    """Four brokers on two racks; topic a on brokers 1 and 3, topic b on 2 and 4, every
    partition the same size: the bytes are level, each topic sits on half the brokers."""
    brokers = tuple(Broker(i, "r1" if i <= 2 else "r2", CAP) for i in (1, 2, 3, 4))
    parts = [Partition(topic, n, (lead, follow), 200_000)
             for topic, (lead, follow) in (("a", (1, 3)), ("b", (2, 4))) for n in range(8)]
    return Topology(brokers, tuple(parts))


def test_caps_follow_capacity_and_the_racks_forced_share() -> None:
    """Three racks of 2, 2 and 1 brokers, RF 3: every rack holds one replica of each
    partition, so the lone broker of rack c must hold all 6 of the topic's partitions
    whatever its fair share of the cluster (18 / 5 = 3.6)."""
    brokers = tuple(Broker(i, rack, CAP) for i, rack in
                    ((1, "a"), (2, "a"), (3, "b"), (4, "b"), (5, "c")))
    parts = tuple(Partition("t", n, (1 + n % 2, 3 + n % 2, 5), 1000) for n in range(6))
    arrays = to_arrays(Topology(brokers, parts), Goals())
    caps, leader_caps = spread_caps(arrays, 0.0)
    assert caps[0].tolist() == [4, 4, 4, 4, 6]  # 3 each in a and b (ceil 3.6 = 4); 6 in c
    assert leader_caps[0].tolist() == [2, 2, 2, 2, 2]  # 6 leaders / 5 brokers, rounded up
    counts, leads = topic_counts(arrays, arrays.replicas)
    assert counts[0].tolist() == [3, 3, 3, 3, 6] and leads[0].tolist() == [3, 3, 0, 0, 0]
    assert crowding(arrays, arrays.replicas, 0.0).leaders == 2


def test_a_level_cluster_whose_topics_crowd_brokers_is_spread_with_balance_kept() -> None:
    topology = level_but_crowded()
    plain = plan(topology, Goals(), Budget(time_limit_s=3))
    assert plain.status is SolverStatus.ALREADY_BALANCED and not plain.moves
    goals = Goals(topic_spread=0.5)
    spread = plan(topology, goals, Budget(time_limit_s=3))
    report = validate_plan(topology, spread.moves, goals)
    assert report.valid and report.balanced, (report.errors, report.warnings)
    arrays = to_arrays(topology, goals)
    before = crowding(arrays, arrays.replicas, 0.5)
    assert (before.replicas, before.leaders, before.topics) == (8, 10, 2)
    after_arrays = to_arrays(spread.after, goals)
    assert crowding(after_arrays, after_arrays.replicas, 0.5).none
    counts, leads = topic_counts(after_arrays, after_arrays.replicas)
    assert counts.max() <= 6 and leads.max() <= 3  # caps: 16 x 1/4 x 1.5, 8 x 1/4 x 1.5


def test_the_plan_file_carries_the_goal_and_its_outcome() -> None:
    topology = level_but_crowded()
    settings = PlanSettings(goals=Goals(topic_spread=0.5), budget=Budget(time_limit_s=3))
    plan_file = build_plan(topology, settings)
    assert plan_file.spread is not None and plan_file.spread.after.none
    assert plan_file.spread.before.topics == 2
    again = plan_from_dict(plan_to_dict(plan_file))
    assert again.goals.topic_spread == 0.5 and again.spread == plan_file.spread


def test_without_the_goal_a_generated_cluster_plans_as_before() -> None:
    """The goal off, the solver keeps no topic counts and the plan ignores topics."""
    topology = generate_cluster(brokers=9, new_brokers=3, racks=3, partitions=300, seed=3)
    goals = Goals(add_brokers=frozenset({10, 11, 12}))
    first = plan(topology, goals, Budget(time_limit_s=2))
    arrays = to_arrays(first.after, goals)
    assert first.moves and crowding(arrays, arrays.replicas, 0.5).topics > 0
    spread = plan(topology, Goals(add_brokers=goals.add_brokers, topic_spread=0.5),
                  Budget(time_limit_s=4))
    spread_arrays = to_arrays(spread.after, goals)
    assert (crowding(spread_arrays, spread_arrays.replicas, 0.5).replicas
            < crowding(arrays, arrays.replicas, 0.5).replicas)
    assert validate_plan(topology, spread.moves, goals).balanced


@pytest.mark.parametrize("value", [-0.1, 11.0, float("nan")])
def test_a_tolerance_out_of_range_is_refused(value: float) -> None:
    with pytest.raises(InputError, match="--topic-spread must be between 0 and 10"):
        Goals(topic_spread=value)


def test_topic_indexes_follow_the_sorted_names() -> None:
    arrays = to_arrays(level_but_crowded(), Goals())
    assert arrays.topic_names == ("a", "b")
    assert np.array_equal(arrays.topic, [0] * 8 + [1] * 8)


def test_the_review_and_the_page_say_how_many_topics_crowd_a_broker() -> None:
    from kafka_rebalance.report.plan_view import headline
    from kafka_rebalance.report.review import spread_text

    settings = PlanSettings(goals=Goals(topic_spread=0.5), budget=Budget(time_limit_s=3))
    plan_file = build_plan(level_but_crowded(), settings)
    text = spread_text(plan_file)
    assert text is not None and "+50%" in text
    assert "2 topic(s) crowd a broker before the plan (8 replica(s) and 10 leader(s)" in text
    assert text.endswith(", 0 after")
    assert ("topic spread (+50%)", "2 topic(s) crowd a broker before, 0 after") in \
        headline(plan_file, 1e6)
    plain = build_plan(level_but_crowded(),
                       PlanSettings(goals=Goals(), budget=Budget(time_limit_s=3)))
    assert spread_text(plain) is None and plain.spread is None
