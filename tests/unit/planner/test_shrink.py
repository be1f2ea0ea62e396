"""Cutting a balanced plan down to a move budget: the moves that buy least balance go back first,
forced moves never do, and a plan under a budget keeps it and says so."""

from __future__ import annotations

from planner.arrays import to_arrays
from planner.balance import achievable_targets
from planner.goals import Budget, Goals
from planner.shrink import fuller_first, shrink_to_budget
from planner.solve import plan
from planner.state import SolverState
from topology.load import balance
from topology.model import RESOURCES, Broker, Capacity, Partition, Topology
from topology.synthetic import generate_zoned

CAP = Capacity(1000, 1000, 1000)


def _state(removed: frozenset[int] = frozenset()) -> SolverState:
    """Broker 1 holds 8, 3, 1 and 12, broker 3 holds 12 (RF 1, no racks), broker 2 is new:
    each broker's share is 12."""
    brokers = (Broker(1, None, CAP), Broker(2, None, CAP), Broker(3, None, CAP))
    parts = tuple(Partition("t", i, (1 if i < 4 else 3,), size, size / 10, size / 10)
                  for i, size in enumerate([8, 3, 1, 12, 12]))
    goals = Goals(tolerance=0.1, remove_brokers=removed)
    arrays = to_arrays(Topology(brokers, parts), goals)
    return SolverState(arrays, goals, Budget(), achievable_targets(arrays, goals))


def test_the_moves_that_buy_least_balance_go_back_first() -> None:
    state = _state()
    for p in (0, 1, 2):
        state.move_replica(p, 0, 1)  # 8, 3 and 1 to broker 2: 12 each, balanced

    assert shrink_to_budget(state, 1)

    assert state.changed == {0}  # the 8 stays moved: its return would cost the most
    assert state.replicas[:, 0].tolist() == [1, 0, 0, 0, 2]


def test_a_move_off_a_removed_broker_never_goes_back() -> None:
    state = _state(removed=frozenset({3}))
    state.move_replica(4, 0, 1)  # off the removed broker 3
    state.move_replica(0, 0, 1)

    assert not shrink_to_budget(state, 0)
    assert shrink_to_budget(state, 1)
    assert state.changed == {4}


def _spread_from_one_broker(counts: tuple[int, int, int]) -> SolverState:
    """Fourteen partitions of size 2 on broker 1 of 4 (share 7 each, band 6.3-7.7), and
    `counts` of them moved to brokers 2, 3 and 4."""
    brokers = tuple(Broker(b, None, CAP) for b in (1, 2, 3, 4))
    parts = tuple(Partition("t", i, (1,), 2, 0.2, 0.2) for i in range(14))
    goals = Goals(tolerance=0.1)
    arrays = to_arrays(Topology(brokers, parts), goals)
    state = SolverState(arrays, goals, Budget(), achievable_targets(arrays, goals))
    p = 0
    for dest, count in enumerate(counts, start=1):
        for _ in range(count):
            state.move_replica(p, 0, dest)
            p += 1
    return state


def test_under_a_budget_the_plan_with_the_lower_fullest_broker_wins() -> None:
    """(10, 10, 8, 0) leaves the fullest broker at 10; (12, 8, 6, 2) leaves it at 12 but is
    closer to the band in total. The fullest broker decides."""
    lower_top = _spread_from_one_broker((5, 4, 0))
    less_in_total = _spread_from_one_broker((4, 3, 1))
    assert lower_top.worst_over() < less_in_total.worst_over()
    assert lower_top.all_penalties().sum() > less_in_total.all_penalties().sum()

    assert fuller_first(lower_top, less_in_total)
    assert not fuller_first(less_in_total, lower_top)


def test_when_the_fullest_brokers_are_level_the_total_decides() -> None:
    """(10, 10, 4, 4) and (10, 10, 8, 0): the same fullest broker, less outside in total."""
    closer = _spread_from_one_broker((5, 2, 2))
    further = _spread_from_one_broker((5, 4, 0))
    assert fuller_first(closer, further)
    assert not fuller_first(further, closer)


def _spread(topology: Topology) -> float:
    bal = balance(topology, topology.brokers)
    return max(max(bal[r].max_over_avg - 1, 1 - bal[r].min_over_avg) for r in RESOURCES)


def test_a_move_budget_plan_keeps_the_budget_and_says_it_binds() -> None:
    """Zoned 12+3 cluster, 120 moves where a balanced plan needs more: the plan keeps the
    budget, says it is what binds, and leaves the cluster more balanced than it was."""
    topology = generate_zoned((4, 4, 4), (1, 1, 1), 3, 2_000, seed=3)
    goals = Goals(tolerance=0.10)
    result = plan(topology, goals, Budget(max_moves=120, time_limit_s=6))
    assert len(result.moves) <= 120
    assert result.binding and "--max-moves" in result.binding[0]
    assert _spread(result.after) < _spread(topology)
