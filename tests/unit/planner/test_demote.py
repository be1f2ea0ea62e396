"""Demotion (`plan --demote-broker`): leadership off a broker, no data moved, the net out it led
spread over the other replicas; what cannot be demoted is named."""

from __future__ import annotations

from collections import Counter

import pytest

from kafka_rebalance.core.errors import InputError
from kafka_rebalance.usecases.plan import PlanSettings, build_demotion
from planner.demote import demote
from planner.goals import Budget, Goals
from planner.result import SolverStatus
from topology.load import leader_net_out
from topology.model import Broker, Capacity, Partition, Topology
from topology.synthetic import generate_cluster

CAP = Capacity(1e12, 1e9, 1e9)


def test_every_partition_the_broker_leads_gets_another_leader_and_keeps_its_replicas() -> None:
    topology = generate_cluster(brokers=9, new_brokers=0, racks=3, partitions=600, seed=3)
    led = {p.key: p for p in topology.partitions if p.replicas[0] == 4}
    demotion = demote(topology, [4])
    assert {m.key for m in demotion.moves} == set(led) and not demotion.stuck
    for move in demotion.moves:
        assert move.leadership_only and move.bytes_moved == 0
        assert sorted(move.target) == sorted(move.current) and move.target[-1] == 4
        assert move.target[0] != 4
    # the net out broker 4 led is spread, not piled on one follower: the busiest leader after
    # the demotion leads no more than after the naive one (the next replica leads)
    def busiest(new_leader: dict[object, int]) -> float:
        load = Counter[int]()
        for p in topology.partitions:
            load[new_leader.get(p.key, p.replicas[0])] += int(leader_net_out(p))
        return max(load.values())
    spread = busiest({m.key: m.target[0] for m in demotion.moves})
    naive = busiest({key: p.replicas[1] for key, p in led.items()})
    assert spread <= naive and len({m.target[0] for m in demotion.moves}) >= 4


def test_a_partition_with_no_other_live_replica_stays_and_is_named() -> None:
    brokers = (Broker(1, "a", CAP), Broker(2, "b", CAP), Broker(3, "a", CAP, alive=False))
    parts = (Partition("t", 0, (1, 2), 10, 5.0, 5.0), Partition("t", 1, (1,), 10),
             Partition("t", 2, (1, 3), 10), Partition("t", 3, (2, 1), 10))
    demotion = demote(Topology(brokers, parts), [1])
    assert [(m.name, m.target) for m in demotion.moves] == [("t-0", (2, 1))]
    assert demotion.stuck == ("t-1", "t-2")  # alone, and beside an offline broker
    plan = build_demotion(Topology(brokers, parts), [1],
                          PlanSettings(goals=Goals(), budget=Budget()))
    assert plan.solver.status is SolverStatus.LEADERS_ONLY and plan.bytes_moved == 0
    assert any("2 partition(s) stay led by the demoted broker(s)" in w for w in plan.warnings)


def test_a_partition_the_broker_leads_while_its_preferred_leader_is_offline_is_demoted_too(
) -> None:
    """Broker 3 (offline) is the preferred leader of t-0 and t-1, so broker 1, their first
    live replica, leads them: t-0 gets broker 2 as its leader, t-1 has no other live replica
    and is named (patching broker 1 would take it offline)."""
    brokers = (Broker(1, "a", CAP), Broker(2, "b", CAP), Broker(3, "a", CAP, alive=False))
    parts = (Partition("t", 0, (3, 1, 2), 10), Partition("t", 1, (3, 1), 10),
             Partition("t", 2, (3, 2, 1), 10))  # led by 2: nothing to do
    demotion = demote(Topology(brokers, parts), [1])
    assert [(m.name, m.target) for m in demotion.moves] == [("t-0", (2, 3, 1))]
    assert demotion.stuck == ("t-1",)


def test_an_unknown_broker_is_refused() -> None:
    topology = generate_cluster(brokers=3, new_brokers=0, racks=3, partitions=10)
    with pytest.raises(InputError, match="--demote-broker 9: no broker 9"):
        demote(topology, [9])
