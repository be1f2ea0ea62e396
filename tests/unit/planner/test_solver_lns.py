"""The CP-SAT neighbourhood search: finds a cheaper plan than a wasteful one, keeps the bands,
and repeats itself for the same seed."""

from __future__ import annotations

import time

import numpy as np

from planner.arrays import rack_ok, to_arrays
from planner.balance import achievable_targets
from planner.goals import Budget, Goals
from planner.lns import improve
from planner.state import SolverState
from topology.model import Broker, Capacity, Partition, Topology

CAP = Capacity(1000, 1000, 1000)


def _wasteful_state() -> SolverState:
    """Broker 1 holds 100 (46+20+20+14), broker 2 nothing; band [45, 55] per broker.

    Moving the 46 alone balances both; the wasteful plan moves 20+20+14 = 54 bytes.
    """
    brokers = (Broker(1, None, CAP), Broker(2, None, CAP))
    parts = tuple(Partition("t", i, (1,), size) for i, size in enumerate([46, 20, 20, 14]))
    topology = Topology(brokers, parts)
    goals = Goals(tolerance=0.1)
    arrays = to_arrays(topology, goals)
    state = SolverState(arrays, goals, Budget(), achievable_targets(arrays, goals))
    for p in (1, 2, 3):
        state.move_replica(p, 0, 1)
    return state


def _in_band(state: SolverState) -> bool:
    return bool((state.loads >= state.lower - 1e-9).all()
                and (state.loads <= state.upper + 1e-9).all())


def test_lns_finds_the_cheaper_plan_and_keeps_the_band() -> None:
    state = _wasteful_state()
    assert state.bytes_moved == 54 and _in_band(state)
    improved = improve(state, time.monotonic() + 60, seed=0, lower_bound=45, max_rounds=5)
    assert improved
    assert state.bytes_moved == 46
    assert _in_band(state)
    assert rack_ok(state.arrays, state.replicas).all()
    assert state.replicas[:, 0].tolist() == [1, 0, 0, 0]


def test_lns_is_reproducible_and_never_costs_more() -> None:
    results = []
    for _ in range(2):
        state = _wasteful_state()
        improve(state, time.monotonic() + 60, seed=3, lower_bound=0, max_rounds=3)
        assert state.bytes_moved <= 54
        results.append(state.replicas.copy())
    assert np.array_equal(results[0], results[1])
