"""Consolidation trades many small moves for one large one at about the same bytes, and undoes
a trade that would leave a broker further outside its band or cost too many bytes."""

from __future__ import annotations

import time

import pytest

import planner.solve
from planner.arrays import rack_ok, to_arrays
from planner.balance import achievable_targets
from planner.consolidate import consolidate_moves
from planner.goals import Budget, Goals
from planner.result import SolverStatus
from planner.solve import plan
from planner.state import SolverState
from planner.validate import validate_plan
from topology.model import Broker, Capacity, Partition, Topology
from topology.synthetic import generate_zoned

CAP = Capacity(1000, 1000, 1000)


def _state(sizes_on_1: list[int], sizes_on_2: list[int], budget: Budget = Budget()
           ) -> SolverState:
    """Brokers 1 and 2 hold the given partitions (RF 1, no racks); broker 3 is new."""
    brokers = (Broker(1, None, CAP), Broker(2, None, CAP), Broker(3, None, CAP))
    sizes = [*sizes_on_1, *sizes_on_2]
    parts = tuple(Partition("t", i, (1 if i < len(sizes_on_1) else 2,), size, size / 10,
                            size / 10) for i, size in enumerate(sizes))
    topology = Topology(brokers, parts)
    goals = Goals(tolerance=0.1)
    arrays = to_arrays(topology, goals)
    return SolverState(arrays, goals, budget, achievable_targets(arrays, goals))


def _in_band(state: SolverState) -> bool:
    return bool((state.loads >= state.lower - 1e-9).all()
                and (state.loads <= state.upper + 1e-9).all())


def test_ten_small_moves_become_the_one_large_move_of_the_same_bytes() -> None:
    # Broker 1 holds 10 + ten of 1, broker 2 ten of 1: each broker's share is 10.
    state = _state([10, *[1] * 10], [1] * 10)
    for p in range(1, 11):
        state.move_replica(p, 0, 2)  # the small ones went to broker 3 (index 2)
    assert _in_band(state) and len(state.changed) == 10 and state.bytes_moved == 10

    assert consolidate_moves(state, time.monotonic() + 60) == 1

    assert state.changed == {0}
    assert state.bytes_moved == 10
    assert _in_band(state)
    assert rack_ok(state.arrays, state.replicas).all()


def test_a_trade_that_costs_more_bytes_than_it_saves_moves_is_undone() -> None:
    # Each broker's share is 28. Broker 1 sent two partitions of 13 to broker 3; sending its
    # 30 instead is one move fewer and in band too, but 4 bytes (15%) more, far past the
    # slack (1.5%) and the price of one move.
    state = _state([30, 13, 13], [14, 14])
    state.move_replica(1, 0, 2)
    state.move_replica(2, 0, 2)
    before = state.replicas.copy()
    assert _in_band(state)

    assert consolidate_moves(state, time.monotonic() + 60) == 0

    assert (state.replicas == before).all()
    assert state.bytes_moved == 26


def test_zone_bound_cluster_moves_fewer_partitions_for_about_the_same_bytes(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Three zones of 4 plus one new broker each, RF 3: on the whole pipeline the trades cut
    the partitions moved by a tenth or more, bytes within 2%."""
    topology = generate_zoned((4, 4, 4), (1, 1, 1), 3, 1_500, seed=4)
    goals = Goals(tolerance=0.10)
    traded = plan(topology, goals, Budget(time_limit_s=8))

    monkeypatch.setattr(planner.solve, "consolidate_moves", lambda state, deadline, lower_bound: 0)
    untraded = plan(topology, goals, Budget(time_limit_s=8))

    report = validate_plan(topology, traded.moves, goals)
    assert report.valid and report.balanced, (report.errors, report.warnings)
    assert traded.status is not SolverStatus.BEST_EFFORT
    assert traded.bytes_moved <= 1.02 * untraded.bytes_moved
    assert traded.data_moves <= 0.9 * untraded.data_moves, (traded.data_moves,
                                                            untraded.data_moves)
