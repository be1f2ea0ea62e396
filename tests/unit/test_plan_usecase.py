"""Making a plan without the CLI (`kafka_rebalance.usecases.plan`): a stand-in solver, real
validation and ordering; the cluster read from a snapshot with its notes; a saved plan rechecked."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kafka_rebalance.core.errors import InputError, PlanError
from kafka_rebalance.usecases.plan import (
    PlanInputs,
    PlanSettings,
    build_plan,
    read_cluster,
    recheck,
)
from planner.goals import Budget, Goals
from planner.ordering import MoveOrder
from planner.result import Move, PlanResult, SolverStatus
from planner.validate import validate_plan
from topology.model import Topology, replace_replicas
from topology.snapshot import topology_from_dict

CAP = {"disk_bytes": 1000, "net_in_bytes_per_sec": 1000, "net_out_bytes_per_sec": 1000}
# Brokers 1, 3 on rack a and 2, 4 on rack b; broker 4 holds nothing.
UNBALANCED = {0: [1, 2], 1: [3, 2], 2: [2, 1], 3: [2, 3]}
BALANCED = {0: [1, 2], 1: [3, 4], 2: [2, 1], 3: [4, 3]}
BIG_THEN_SMALL = (Move("t", 1, (3, 2), (3, 4), 300), Move("t", 3, (2, 3), (4, 3), 100))
FILL_BROKER_4 = (Move("t", 1, (3, 2), (3, 4), 100), Move("t", 3, (2, 3), (4, 3), 100))
SETTINGS = PlanSettings(goals=Goals(add_brokers=frozenset({4})), budget=Budget())


def snapshot_doc(replicas: dict[int, list[int]], sizes: dict[int, int]) -> dict[str, Any]:
    return {"version": 1,
            "brokers": [{"id": i, "rack": "a" if i % 2 else "b", "capacity": CAP}
                        for i in (1, 2, 3, 4)],
            "partitions": [{"topic": "t", "partition": n, "replicas": r,
                            "size_bytes": sizes.get(n, 100)} for n, r in replicas.items()]}


def topology_of(replicas: dict[int, list[int]], sizes: dict[int, int] | None = None) -> Topology:
    return topology_from_dict(snapshot_doc(replicas, sizes or {}), None, "test")


class Solver:
    """Returns fixed moves and counts its calls."""

    def __init__(self, moves: tuple[Move, ...]) -> None:
        self.moves, self.calls = moves, 0

    def __call__(self, topology: Topology, goals: Goals, budget: Budget) -> PlanResult:
        self.calls += 1
        after = replace_replicas(topology, {m.key: m.target for m in self.moves})
        return PlanResult(topology, after, self.moves, SolverStatus.OPTIMAL, 400, 0.0, (), 0.1)


def test_the_plan_is_validated_and_ordered_as_asked() -> None:
    topology = topology_of(UNBALANCED, {1: 300})
    solver = Solver(BIG_THEN_SMALL)
    plan = build_plan(topology, SETTINGS, created_at="2026-01-01T00:00:00+00:00", solver=solver)
    assert [m.name for m in plan.moves] == ["t-3", "t-1"]  # smallest first, by default
    assert (solver.calls, plan.created_at) == (1, "2026-01-01T00:00:00+00:00")
    assert plan.fingerprint == topology.fingerprint()
    assert validate_plan(topology, plan.moves, plan.goals).valid
    largest = PlanSettings(goals=SETTINGS.goals, budget=Budget(),
                           order=MoveOrder.LARGEST_FIRST)
    assert [m.name for m in build_plan(topology, largest, solver=solver).moves] == ["t-1", "t-3"]


def test_a_balanced_cluster_gets_an_empty_plan_without_solving() -> None:
    solver = Solver(BIG_THEN_SMALL)
    plan = build_plan(topology_of(BALANCED), SETTINGS, solver=solver)
    assert (plan.moves, plan.solver.status, solver.calls) == (
        (), SolverStatus.ALREADY_BALANCED, 0)


def test_a_plan_the_validator_rejects_is_refused() -> None:
    same_rack = (Move("t", 1, (3, 2), (3, 1), 100),)
    with pytest.raises(PlanError, match="rack a holds 2"):
        build_plan(topology_of(UNBALANCED), SETTINGS, solver=Solver(same_rack))


def test_the_cluster_is_read_with_its_notes_and_the_brokers_checked(tmp_path: Path) -> None:
    doc = snapshot_doc(UNBALANCED, {})
    doc["notes"] = ["sizes are estimates"]
    snapshot = tmp_path / "snap.json"
    snapshot.write_text(json.dumps(doc))
    noted: list[str] = []
    topology = read_cluster(PlanInputs(snapshot=snapshot, add_brokers=(4,)), note=noted.append)
    assert (topology.fingerprint(), noted) == (topology_of(UNBALANCED).fingerprint(),
                                               ["sizes are estimates"])
    with pytest.raises(InputError, match="--remove-broker 9: no broker 9"):
        read_cluster(PlanInputs(snapshot=snapshot, remove_brokers=(9,)), note=noted.append)
    with pytest.raises(InputError, match="exactly one of --snapshot"):
        read_cluster(PlanInputs(), note=noted.append)
    with pytest.raises(InputError, match="--horizon needs --weights"):
        read_cluster(PlanInputs(snapshot=snapshot, horizon_days=30), note=noted.append)


def test_recheck_warns_when_the_placement_differs_and_refuses_a_stale_plan() -> None:
    plan = build_plan(topology_of(UNBALANCED), SETTINGS, solver=Solver(FILL_BROKER_4))
    warned: list[str] = []
    assert recheck(plan, topology_of(UNBALANCED), warn=warned.append).moves == plan.moves
    assert warned == []
    moved_on = topology_of({**UNBALANCED, 0: [2, 1]})
    rechecked = recheck(plan, moved_on, warn=warned.append)
    assert rechecked.fingerprint == moved_on.fingerprint() != plan.fingerprint
    assert warned == ["the snapshot's replica placement differs from the one the plan was "
                      "made against (fingerprint mismatch)"]
    with pytest.raises(PlanError, match=r"^this plan was made against another replica "
                                        r"placement .*the first: .*stale"):
        recheck(plan, topology_of(BALANCED), warn=warned.append)


def test_recheck_of_a_plan_made_from_other_sizes_says_whose_numbers_are_whose() -> None:
    """A plan made with --weights (sizes other than the snapshot's): the review recomputed on
    the snapshot keeps the plan's moves, and says the two sources differ."""
    plan = build_plan(topology_of(UNBALANCED), SETTINGS, solver=Solver(FILL_BROKER_4))
    warned: list[str] = []
    recheck(plan, topology_of(UNBALANCED, {1: 150}), warn=warned.append)
    assert warned == ["1 move(s) have another partition size in the plan than in this snapshot "
                      "(e.g. t-1: 100 B in the plan, 150 B here): the plan was made from "
                      "other data (--weights, or an older snapshot); its moves, ETA and solver "
                      "status are the plan's, the balance tables this snapshot's"]


def test_a_plan_reports_where_its_time_went() -> None:
    """The planner's phases and the use case's (validate, order), each timed once or summed:
    together never more than the whole, and the plan file keeps them."""
    import time as clock

    from kafka_rebalance.files.planfile import plan_from_dict, plan_to_dict
    from topology.synthetic import generate_cluster

    topology = generate_cluster(brokers=6, new_brokers=2, racks=3, partitions=300, seed=5)
    start = clock.monotonic()
    plan = build_plan(topology, PlanSettings(goals=Goals(add_brokers=frozenset({7, 8})),
                                             budget=Budget(time_limit_s=5)))
    took = clock.monotonic() - start
    phases = dict(plan.solver.phase_seconds)
    assert {"arrays", "targets", "bounds", "greedy", "polish", "validate", "order"} <= set(phases)
    assert {"exact", "neighbourhoods"} & set(phases)
    assert all(seconds >= 0 for seconds in phases.values())
    assert sum(phases.values()) <= took
    assert dict(plan_from_dict(plan_to_dict(plan)).solver.phase_seconds) == phases
