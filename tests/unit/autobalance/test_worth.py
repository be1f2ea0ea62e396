"""Is a plan worth its bytes? The rule over the plan file's before/after statistics and the
hard-goal violations before and after."""

from __future__ import annotations

import pytest

from kafka_rebalance.autobalance.worth import deviation, gains, judge_plan
from kafka_rebalance.core.errors import InputError
from planner.goals import Budget, Goals
from planner.planfile import ClusterStats, PlanFile, ResourceStats, SolverInfo, make_plan_file
from planner.result import Move, SolverStatus
from topology.model import RESOURCES, Broker, Capacity, Partition, Resource, Topology

GOALS = Goals(tolerance=0.10)
MOVE = Move("t", 0, (1, 2), (3, 2), 5_000_000)
BALANCED = (1.05, 0.95)


def stats(spread: dict[Resource, tuple[float, float]]) -> ClusterStats:
    """Per-resource (max/avg, min/avg); resources not given are balanced."""
    return ClusterStats((), tuple(
        ResourceStats(r, 1.0, *spread.get(r, BALANCED), within_tolerance=False)
        for r in RESOURCES))


def plan(before: dict[Resource, tuple[float, float]], after: dict[Resource, tuple[float, float]],
         status: SolverStatus = SolverStatus.BEST_EFFORT) -> PlanFile:
    return PlanFile((MOVE,), "fp", GOALS, Budget(), stats(before), stats(after),
                    SolverInfo(status, 0), "2026-11-23T01:00:00+00:00")


def test_deviation_is_the_farthest_broker_from_the_average() -> None:
    assert deviation(ResourceStats(Resource.DISK, 1.0, 1.25, 0.9, False)) == pytest.approx(0.25)
    assert deviation(ResourceStats(Resource.DISK, 1.0, 1.05, 0.6, False)) == pytest.approx(0.4)
    assert deviation(ResourceStats(Resource.DISK, 1.0, 1.0, 1.0, True)) == 0.0


def test_a_best_effort_plan_that_hardly_improves_is_not_worth_it() -> None:
    stuck = plan({Resource.DISK: (1.40, 0.80)}, {Resource.DISK: (1.39, 0.80)})
    verdict = judge_plan(stuck, 0, 0, min_improvement=0.02)
    assert not verdict.worth
    assert "disk: worst broker 40.0% -> 39.0% from its target (+1.0 points)" in verdict.reason
    assert "less than --min-improvement 2.0 points" in verdict.reason
    assert "1 move(s), 5.00 MB (best_effort)" in verdict.reason


def test_the_same_plan_is_worth_it_at_a_lower_threshold_or_with_a_bigger_gain() -> None:
    stuck = plan({Resource.DISK: (1.40, 0.80)}, {Resource.DISK: (1.39, 0.80)})
    assert judge_plan(stuck, 0, 0, min_improvement=0.01).worth
    better = plan({Resource.DISK: (1.40, 0.80)}, {Resource.DISK: (1.30, 0.85)})
    verdict = judge_plan(better, 0, 0, min_improvement=0.02)
    assert verdict.worth and "40.0% -> 30.0%" in verdict.reason


def test_reaching_the_tolerance_is_worth_it_however_small_the_step() -> None:
    edge = plan({Resource.NET_IN: (1.105, 0.95)}, {Resource.NET_IN: (1.099, 0.95)},
                SolverStatus.FEASIBLE)
    verdict = judge_plan(edge, 0, 0, min_improvement=0.05)
    assert verdict.worth and "brings net_in within +/-10%" in verdict.reason


def test_fixing_a_hard_violation_is_worth_it_without_a_balance_gain() -> None:
    same = plan({Resource.DISK: (1.40, 0.80)}, {Resource.DISK: (1.40, 0.80)})
    assert not judge_plan(same, 2, 2).worth
    verdict = judge_plan(same, 2, 1)
    assert verdict.worth and "fixes 1 of 2 hard-goal violation(s)" in verdict.reason
    assert "none of 2 hard-goal violation(s) fixed" in judge_plan(same, 2, 2).reason


def test_resources_already_balanced_do_not_count() -> None:
    # disk (in the band) gains a lot, net_out (outside) nothing: the run would not fix it
    mixed = plan({Resource.DISK: (1.09, 0.92), Resource.NET_OUT: (1.8, 0.5)},
                 {Resource.DISK: (1.01, 0.99), Resource.NET_OUT: (1.8, 0.5)})
    verdict = judge_plan(mixed, 0, 0)
    assert not verdict.worth
    assert "net_out: worst broker 80.0% -> 80.0%" in verdict.reason
    assert "disk" not in verdict.reason.split(";")[0]


def test_a_plan_that_changes_nothing_is_not_worth_it_even_at_zero() -> None:
    same = plan({Resource.DISK: (1.40, 0.80)}, {Resource.DISK: (1.40, 0.80)})
    assert not judge_plan(same, 0, 0, min_improvement=0.0).worth
    tiny = plan({Resource.DISK: (1.40, 0.80)}, {Resource.DISK: (1.399, 0.80)})
    assert judge_plan(tiny, 0, 0, min_improvement=0.0).worth


@pytest.mark.parametrize("bad", [-0.01, 1.0, 2.0])
def test_a_bad_threshold_is_refused(bad: float) -> None:
    with pytest.raises(InputError, match="--min-improvement"):
        judge_plan(plan({}, {}), 0, 0, min_improvement=bad)


def test_the_rule_reads_real_plan_statistics() -> None:
    """An empty new broker: moving one replica onto it is a big gain; its gain is measured
    from the plan file make_plan_file builds."""
    cap = Capacity(1000, 1000, 1000)
    brokers = tuple(Broker(i, None, cap) for i in (1, 2, 3))
    parts = tuple(Partition("t", i, (1, 2), 100, 0.0, 0.0) for i in range(4))
    topology = Topology(brokers, parts)
    moves = [Move("t", 0, (1, 2), (3, 2), 100), Move("t", 1, (1, 2), (1, 3), 100)]
    made = make_plan_file(topology, moves, GOALS, Budget(), SolverInfo(SolverStatus.FEASIBLE, 0),
                          "2026-11-23T01:00:00+00:00")
    disk = next(g for g in gains(made) if g.resource is Resource.DISK)
    # before 400/400/0 of avg 266.7 (deviation 1.0); after 300/300/200 (deviation 0.25)
    assert disk.before == pytest.approx(1.0) and disk.after == pytest.approx(0.25)
    assert judge_plan(made, 0, 0, min_improvement=0.5).worth
    assert not judge_plan(made, 0, 0, min_improvement=0.8).worth
