"""The whole-cluster model in its hard form (the aimed bands as constraints, bytes the only
cost) has the weighted form's optimum wherever a placement without excess exists, and it is
chosen only when the hint already lies inside every band."""

from __future__ import annotations

import pytest
from ortools.sat.python import cp_model

from planner import exact
from planner.arrays import to_arrays
from planner.balance import achievable_targets
from planner.cpsat_model import Neighbourhood, add_hints
from planner.goals import Budget, Goals
from planner.state import SolverState
from topology.synthetic import generate_zoned


def _state(seed: int, partitions: int = 24) -> SolverState:
    topology = generate_zoned((2, 2, 2), (1, 0, 0), 3, partitions, seed=seed, lumpy=True)
    goals = Goals(tolerance=0.10, add_brokers=frozenset({7}))
    arrays = to_arrays(topology, goals)
    return SolverState(arrays, goals, Budget(), achievable_targets(arrays, goals))


def _solve(state: SolverState, hard: bool) -> tuple[cp_model.CpSolver, cp_model.CpSolverStatus,
                                                     exact._Whole]:
    nb = Neighbourhood(list(range(state.arrays.partitions)), exact._candidates(state))
    whole = exact._whole_model(state, nb, hard)
    add_hints(whole.model, state, nb, whole.v)
    solver, status = exact._search(whole, 0, 1000.0, 120.0)
    return solver, status, whole


@pytest.mark.parametrize(("seed", "partitions", "level"), [
    (4, 30, True), (5, 30, True),  # the weighted optimum lies inside every band
    (0, 24, False),  # lumpy partitions leave some excess: no placement meets every band
])
def test_the_hard_form_has_the_weighted_forms_optimum(seed: int, partitions: int,
                                                      level: bool) -> None:
    state = _state(seed, partitions)
    weighted, status, whole = _solve(state, hard=False)
    assert status == cp_model.OPTIMAL
    assert level == (not any(weighted.value(x)
                             for x in [*whole.excess.up, *whole.excess.down]))
    hard, hard_status, _ = _solve(state, hard=True)
    if level:
        assert hard_status == cp_model.OPTIMAL
        assert hard.objective_value == weighted.objective_value  # both are then the bytes
    else:
        assert hard_status == cp_model.INFEASIBLE


def test_the_hard_form_is_chosen_only_for_a_hint_inside_every_band() -> None:
    state = _state(0, partitions=60)
    nb = Neighbourhood(list(range(state.arrays.partitions)), exact._candidates(state))
    assert not exact._hint_in_band(state, nb)  # the added broker is empty
    found = exact.solve_exact(state, 1000.0, 120.0, seed=0)
    assert found is not None and found.optimal and found.worst_excess_per_mille == 0
    for p, row in enumerate(found.rows):
        state.assign(p, row)
    assert exact._hint_in_band(state, nb)
