"""Throttle policy: what one move sets, the merge with an operator's values, the exact restore."""

from __future__ import annotations

import pytest

from executor.throttle import (
    FOLLOWER_RATE,
    FOLLOWER_REPLICAS,
    LEADER_RATE,
    LEADER_REPLICAS,
    ThrottlePlan,
    ThrottlePriors,
    adaptive_rate,
    adaptive_rates,
    apply_changes,
    check_applied,
    check_restored,
    merge_entries,
    plan_from_json,
    plan_throttle,
    plan_to_json,
    remove_entries,
    restore_changes,
    uniform_rates,
)
from kafka_rebalance.core.errors import InputError
from planner.result import Move
from topology.model import Capacity

MOVE = Move("orders", 3, current=(1, 2), target=(2, 4), size_bytes=1000)
CAP = 10_000_000


def priors(brokers: dict[int, dict[str, str | None]] | None = None,
           topic: dict[str, str | None] | None = None) -> ThrottlePriors:
    return ThrottlePriors(brokers or {}, "orders", topic or {})


def test_leader_rate_on_sources_follower_rate_on_receivers() -> None:
    plan = plan_throttle(MOVE, priors(), uniform_rates(MOVE, CAP))
    assert plan.broker_rates == {1: {LEADER_RATE: CAP}, 2: {LEADER_RATE: CAP},
                                 4: {FOLLOWER_RATE: CAP}}
    assert plan.leader_entries == ("3:1", "3:2")
    assert plan.follower_entries == ("3:4",)
    assert plan.notes == ()


def test_leadership_only_move_sets_nothing() -> None:
    move = Move("orders", 0, current=(1, 2), target=(2, 1), size_bytes=10)
    plan = plan_throttle(move, priors(), uniform_rates(move, CAP))
    assert plan.empty
    assert apply_changes(plan, {}) == ({}, {})


def test_apply_merges_with_existing_topic_lists() -> None:
    operator = {LEADER_REPLICAS: "0:1,0:2", FOLLOWER_REPLICAS: "3:4"}
    plan = plan_throttle(MOVE, priors(topic=operator), uniform_rates(MOVE, CAP))
    # 3:4 was already in the operator's follower list: this move does not own it
    assert plan.follower_entries == ()
    brokers, topics = apply_changes(plan, operator)
    assert topics == {"orders": {LEADER_REPLICAS: "0:1,0:2,3:1,3:2"}}
    assert brokers[4] == {FOLLOWER_RATE: str(CAP)}


def test_wildcard_list_is_left_alone() -> None:
    plan = plan_throttle(MOVE, priors(topic={LEADER_REPLICAS: "*"}), uniform_rates(MOVE, CAP))
    assert plan.leader_entries == ()
    _, topics = apply_changes(plan, {LEADER_REPLICAS: "*"})
    assert topics == {"orders": {FOLLOWER_REPLICAS: "3:4"}}


def test_lower_operator_rate_is_kept_and_noted() -> None:
    before = {1: {LEADER_RATE: "500000"}, 4: {FOLLOWER_RATE: "99000000"}}
    plan = plan_throttle(MOVE, priors(brokers=before), uniform_rates(MOVE, CAP))
    assert plan.broker_rates[1] == {LEADER_RATE: 500_000}
    assert plan.broker_rates[4] == {FOLLOWER_RATE: CAP}  # higher operator value: capped
    assert len(plan.notes) == 1 and "broker 1" in plan.notes[0]


def test_restore_puts_back_operator_values_and_removes_only_own_entries() -> None:
    before_brokers = {1: {LEADER_RATE: "20000000"}, 2: {LEADER_RATE: None},
                      4: {FOLLOWER_RATE: None}}
    before_topic = {LEADER_REPLICAS: "0:1", FOLLOWER_REPLICAS: None}
    plan = plan_throttle(MOVE, priors(before_brokers, before_topic), uniform_rates(MOVE, CAP))
    _, topics = apply_changes(plan, before_topic)
    during = dict(topics["orders"])
    # another move on the same topic added its own entry meanwhile
    during[LEADER_REPLICAS] = f"{during[LEADER_REPLICAS]},7:5"
    brokers, restore = restore_changes(plan, during)
    assert brokers == {1: {LEADER_RATE: "20000000"}, 2: {LEADER_RATE: None},
                       4: {FOLLOWER_RATE: None}}
    assert restore == {"orders": {LEADER_REPLICAS: "0:1,7:5", FOLLOWER_REPLICAS: None}}


def test_restore_is_idempotent() -> None:
    plan = plan_throttle(MOVE, priors(), uniform_rates(MOVE, CAP))
    _, restore = restore_changes(plan, {LEADER_REPLICAS: None, FOLLOWER_REPLICAS: None})
    assert restore == {}


def test_merge_and_remove_entries() -> None:
    assert merge_entries(None, ("1:2",)) == "1:2"
    assert merge_entries("1:2, 1:3", ("1:3", "1:4")) == "1:2,1:3,1:4"
    assert merge_entries("*", ("1:2",)) == "*"
    assert remove_entries("1:2,1:3", ("1:3",), None) == "1:2"
    assert remove_entries("1:3", ("1:3",), None) is None
    assert remove_entries("1:3", ("1:3",), "") == ""
    assert remove_entries("*", ("1:3",), None) == "*"
    # the prior entries were removed by someone else meanwhile: not resurrected
    assert remove_entries("1:3", ("1:3",), "5:5") is None


def test_concurrent_moves_on_one_topic_restore_in_any_order() -> None:
    first = Move("orders", 1, current=(1,), target=(2,), size_bytes=1)
    second = Move("orders", 2, current=(3,), target=(4,), size_bytes=1)
    topic: dict[str, str | None] = {LEADER_REPLICAS: None, FOLLOWER_REPLICAS: None}

    def apply(plan: ThrottlePlan) -> None:
        topic.update(apply_changes(plan, topic)[1].get("orders", {}))

    def restore(plan: ThrottlePlan) -> None:
        topic.update(restore_changes(plan, topic)[1].get("orders", {}))
    p1 = plan_throttle(first, priors(topic=dict(topic)), uniform_rates(first, CAP))
    apply(p1)
    p2 = plan_throttle(second, priors(topic=dict(topic)), uniform_rates(second, CAP))
    apply(p2)
    assert topic == {LEADER_REPLICAS: "1:1,2:3", FOLLOWER_REPLICAS: "1:2,2:4"}
    restore(p1)
    assert topic == {LEADER_REPLICAS: "2:3", FOLLOWER_REPLICAS: "2:4"}
    restore(p2)
    assert topic == {LEADER_REPLICAS: None, FOLLOWER_REPLICAS: None}


def test_check_applied_and_restored() -> None:
    plan = plan_throttle(MOVE, priors(topic={LEADER_REPLICAS: "0:1"}), uniform_rates(MOVE, CAP))
    good_brokers = {1: {LEADER_RATE: str(CAP)}, 2: {LEADER_RATE: str(CAP)},
                    4: {FOLLOWER_RATE: str(CAP)}}
    good_topic = {LEADER_REPLICAS: "0:1,3:1,3:2", FOLLOWER_REPLICAS: "3:4"}
    assert check_applied(plan, good_brokers, good_topic) == []
    bad = check_applied(plan, {**good_brokers, 4: {FOLLOWER_RATE: None}},
                        {LEADER_REPLICAS: "0:1,3:1", FOLLOWER_REPLICAS: "3:4"})
    assert bad == ["broker 4 follower.replication.throttled.rate is None, expected 10000000",
                   "topic orders leader.replication.throttled.replicas lacks 3:2"]
    assert check_restored(plan, {}, {LEADER_REPLICAS: "0:1"}) == []
    left = check_restored(plan, {1: {LEADER_RATE: "5"}}, {FOLLOWER_REPLICAS: "3:4"})
    assert len(left) == 2


def test_adaptive_rate_clamps_headroom() -> None:
    assert adaptive_rate(100.0, 30.0, floor=10, cap=50) == 50
    assert adaptive_rate(100.0, 70.0, floor=10, cap=50) == 30
    assert adaptive_rate(100.0, 99.0, floor=10, cap=50) == 10
    assert adaptive_rate(100.0, 500.0, floor=10, cap=50) == 10
    with pytest.raises(InputError):
        adaptive_rate(100.0, 0.0, floor=60, cap=50)


def test_adaptive_rates_use_out_for_sources_in_for_receivers() -> None:
    caps = {b: Capacity(1e12, net_in_bytes_per_sec=100e6, net_out_bytes_per_sec=80e6)
            for b in (1, 2, 4)}
    rates = adaptive_rates(MOVE, cap=50_000_000, floor=5_000_000, capacities=caps,
                           traffic_in={4: 70e6}, traffic_out={1: 60e6, 2: 10e6})
    assert rates.leader == {1: 20_000_000, 2: 50_000_000}
    assert rates.follower == {4: 30_000_000}


def test_adaptive_rates_without_capacity_use_cap() -> None:
    rates = adaptive_rates(MOVE, cap=7, floor=1, capacities={}, traffic_in={}, traffic_out={})
    assert rates.leader == {1: 7, 2: 7} and rates.follower == {4: 7}


def test_json_round_trip() -> None:
    before = priors({1: {LEADER_RATE: "1"}, 4: {FOLLOWER_RATE: None}}, {LEADER_REPLICAS: "0:1"})
    plan = plan_throttle(MOVE, before, uniform_rates(MOVE, CAP))
    back = plan_from_json(plan_to_json(plan))
    assert isinstance(back, ThrottlePlan)
    assert back == plan
