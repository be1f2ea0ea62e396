"""Cordoned brokers (KIP-1066 `cordoned.log.dirs`): a cordoned broker gets no new replica from
the planner, whatever the balance would gain, keeps or gives up what it holds, and a plan that
adds a replica on one is refused by the validator and by the executor's preflight."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from executor.runner import Executor
from kafka_rebalance.core.errors import ExecutionError, InputError
from kafka_rebalance.usecases.plan import PlanSettings, build_plan
from planner.goals import Budget, Goals
from planner.result import Move
from planner.validate import validate_plan
from tests.unit.executor.fakes import MB, make_world
from topology.model import Topology
from topology.snapshot import topology_from_dict, topology_to_dict
from topology.synthetic import generate_cluster


def cluster(cordoned: set[int]) -> Topology:
    """9 old brokers and 3 new empty ones on 3 racks; `cordoned` marked as such."""
    topology = generate_cluster(brokers=9, new_brokers=3, racks=3, partitions=400, seed=7)
    return replace(topology, brokers=tuple(replace(b, cordoned=b.id in cordoned)
                                           for b in topology.brokers))


def plan(topology: Topology, goals: Goals) -> tuple[Move, ...]:
    built = build_plan(topology, PlanSettings(goals=goals, budget=Budget(time_limit_s=3)))
    assert built.goals.cordoned_brokers == frozenset(b.id for b in topology.brokers
                                                     if b.cordoned)
    assert validate_plan(topology, built.moves, built.goals).valid
    return built.moves


def test_an_empty_cordoned_broker_stays_empty_while_the_others_fill() -> None:
    """Brokers 10-12 are new and empty; 12 is cordoned (say, a broker being retired before
    it ever took data). The plan fills 10 and 11 and puts nothing on 12."""
    topology = cluster({12})
    moves = plan(topology, Goals(add_brokers=frozenset({10, 11})))
    assert moves and not any(12 in m.added_brokers for m in moves)
    assert {10, 11} <= {b for m in moves for b in m.added_brokers}


def test_cordoned_brokers_take_nothing_the_plan_would_have_given_them() -> None:
    """A rebalance of everything: without cordons the plan gives replicas to the new broker 12
    and to old brokers; cordoned, those brokers take none, and the others carry the load."""
    free = plan(cluster(set()), Goals())
    gained = {b for m in free for b in m.added_brokers}
    chosen = {12, min(gained - {10, 11, 12})}  # a new and an old broker the plan filled
    moves = plan(cluster(chosen), Goals())
    assert moves and not any(chosen & set(m.added_brokers) for m in moves)


def test_the_validator_and_the_goals_refuse_new_replicas_on_a_cordoned_broker() -> None:
    topology = cluster({12})
    p = topology.partitions[0]
    onto = Move(p.topic, p.partition, p.replicas, (*p.replicas[:-1], 12), p.size_bytes)
    report = validate_plan(topology, [onto], Goals(cordoned_brokers=frozenset({12})))
    assert any("adds a replica on cordoned broker 12" in e for e in report.errors)
    with pytest.raises(InputError, match="--add-broker 12: broker 12 is cordoned"):
        build_plan(topology, PlanSettings(goals=Goals(add_brokers=frozenset({12})),
                                          budget=Budget()))


def test_a_snapshot_keeps_the_cordon() -> None:
    topology = cluster({12})
    again = topology_from_dict(topology_to_dict(topology))
    assert [b.id for b in again.brokers if b.cordoned] == [12]


def test_the_executor_refuses_a_move_onto_a_broker_cordoned_since_the_plan() -> None:
    world = make_world([Move("orders", 0, (1, 2), (1, 3), 5 * MB)])
    world.admin.cordoned.add(3)
    before = world.admin.configs()
    with pytest.raises(ExecutionError, match=r"broker\(s\) \[3\] are cordoned .*\(orders-0\)"):
        Executor.start(world.plan, world.ports(), world.config, world.open_sink)
    assert world.admin.configs() == before
    assert not any(name == "alter_partition_reassignments" for name, _ in world.admin.calls)


def test_cordon_drained_needs_a_plan_that_drains(tmp_path: Path) -> None:
    """`execute --cordon-drained` of a plan made without --remove-broker is refused before
    Kafka is contacted (exit 2), naming the plan."""
    import subprocess
    import sys

    from kafka_rebalance.files.planfile import write_plan
    from planner.planfile import SolverInfo, make_plan_file
    from planner.result import SolverStatus

    topology = cluster(set())
    p = topology.partitions[0]
    rack = {b.id: b.rack for b in topology.brokers}
    spare = next(b.id for b in topology.brokers  # the last replica's rack keeps its share
                 if rack[b.id] == rack[p.replicas[-1]] and b.id not in p.replicas)
    move = Move(p.topic, p.partition, p.replicas, (*p.replicas[:-1], spare), p.size_bytes)
    path = tmp_path / "plan.json"
    write_plan(path, make_plan_file(topology, (move,), Goals(), Budget(),
                                    SolverInfo(SolverStatus.FEASIBLE, 0), "2026-01-01T00:00:00"))
    result = subprocess.run([sys.executable, "-c", "import cli; cli.main()", "execute",
                             str(path), "--bootstrap", "127.0.0.1:1", "--prometheus",
                             "http://127.0.0.1:1", "--max-mbps", "5", "--cordon-drained"],
                            capture_output=True, text=True, check=False, timeout=120)
    assert result.returncode == 2, result.stderr
    assert "--cordon-drained" in result.stderr and "drains no broker" in result.stderr
    assert not path.with_name("plan.json.journal").exists()
