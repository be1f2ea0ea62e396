"""The execution plan value and the planner-validator preflight hook."""

from __future__ import annotations

import pytest

from executor.plan import ExecutionPlan
from executor.preflight import planner_validator
from kafka_rebalance.core.errors import PlanError
from planner.goals import Goals
from planner.result import Move
from topology.model import Broker, Capacity, Partition, Topology

A = Move("a", 0, (1, 2), (3, 2), 100)
B = Move("b", 1, (2, 3), (2, 4), 50)


def test_plan_keeps_order_and_totals() -> None:
    plan = ExecutionPlan.of([B, A], "sha256:x")
    assert [m.name for m in plan.moves] == ["b-1", "a-0"]
    assert plan.bytes_moved == 150 and plan.move("a-0") is A
    assert (plan.position("b-1"), plan.position("a-0")) == (1, 2)
    assert plan == ExecutionPlan.of([B, A], "sha256:x")  # the lookup is not part of the value


def test_plan_id_depends_on_moves_and_their_order() -> None:
    assert ExecutionPlan.of([A, B]).plan_id == ExecutionPlan.of([A, B], "other").plan_id
    assert ExecutionPlan.of([A, B]).plan_id != ExecutionPlan.of([B, A]).plan_id


def test_a_partition_moves_once() -> None:
    with pytest.raises(PlanError, match="a-0 appears in more than one move"):
        ExecutionPlan.of([A, Move("a", 0, (1, 2), (4, 2), 100)])
    with pytest.raises(PlanError, match="no move for partition z-9"):
        ExecutionPlan.of([A]).move("z-9")


def test_planner_validator_hook_reports_hard_violations() -> None:
    cap = Capacity(1e12, 1e9, 1e9)
    brokers = [Broker(1, "r1", cap), Broker(2, "r2", cap), Broker(3, "r1", cap),
               Broker(4, "r2", cap)]
    before = Topology(tuple(brokers), (Partition("a", 0, (1, 2), 100),))
    check = planner_validator(before, Goals(tolerance=0.99))
    assert check(ExecutionPlan.of([Move("a", 0, (1, 2), (3, 2), 100)])).errors == ()
    problems = check(ExecutionPlan.of([Move("a", 0, (1, 2), (1, 3), 100)])).errors
    assert problems and any("a-0" in p for p in problems)


def test_a_run_judges_the_plan_by_the_capacities_it_was_made_with() -> None:
    """Without --capacities, preflight takes each broker's capacity from the plan file; a
    broker the plan does not know gets the plan's average."""
    from kafka_rebalance.usecases.run import capacities_of_plan
    from planner.goals import Budget
    from planner.planfile import SolverInfo, make_plan_file
    from planner.result import SolverStatus

    small, large = Capacity(1e12, 1e8, 1e8), Capacity(3e12, 3e8, 3e8)
    before = Topology((Broker(1, "r1", small), Broker(2, "r2", large)),
                      (Partition("a", 0, (1, 2), 100),))
    plan = make_plan_file(before, (), Goals(), Budget(), SolverInfo(SolverStatus.OPTIMAL, 0),
                          "2026-01-01T00:00:00+00:00")
    caps = capacities_of_plan(plan)
    assert caps is not None
    assert caps.for_broker(1, "r1") == small and caps.for_broker(2, "r2") == large
    assert caps.for_broker(9, "r9") == Capacity(2e12, 2e8, 2e8)
