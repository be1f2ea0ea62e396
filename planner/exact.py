"""The whole cluster as one CP-SAT model, for clusters small enough to solve exactly.

Every (partition, eligible broker) pair is a replica variable and a leader variable. The
objective is lexicographic, in one weighted sum: first the worst excess of any broker and
resource beyond the band the planner aims at (planner.balance.aim, in thousandths of the
target), then bytes moved plus a small cost per changed partition. So when the aimed band is
reachable the result is the fewest bytes that reach it, and when it is not, the placement
whose worst broker is as close to its target as any placement can be. CP-SAT proves either
to within PROVEN_GAP of its bound (OPTIMAL, the gap reported) or reports the gap it reached
at the time limit. The greedy plan is the hint.

Runs are reproducible: the subsolvers are interleaved deterministically on the worker threads
and stopped by a deterministic work limit; the wall-clock limit is only a safety stop.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from ortools.sat.python import cp_model

from planner.balance import aim
from planner.cpsat_model import (
    BYTE_STEPS,
    ModelVars,
    Neighbourhood,
    add_budget,
    add_changed,
    add_hints,
    add_rack_rule,
    add_replica_count,
    bytes_term,
    load_terms,
    moves_term,
    ordered_row,
    scale,
    variables,
)
from planner.state import MOVE_COST, SolverState

MAX_PAIRS = 12_000  # (partition, broker) pairs up to which the whole model is solved
PER_MILLE = 1000
MAX_EXCESS = 10 * PER_MILLE  # beyond 10x the target nothing is worth distinguishing
WORKERS = 2
DETERMINISTIC_SHARE = 0.5  # work limit per second of time limit: about half on a busy 2-core
# machine, so the deterministic limit (reproducible) stops the search before the clock does
PROVEN_GAP = 1e-3  # objective within 0.1% of CP-SAT's proven bound counts as optimal


@dataclass(frozen=True)
class ExactResult:
    """Rows (leader first) per partition, whether CP-SAT proved them optimal, and its
    relative gap between objective and bound (0 when proven)."""

    rows: list[list[int]]
    optimal: bool
    proven_gap: float
    excess_per_mille: int


def fits(state: SolverState) -> bool:
    """True when the cluster is small enough for the whole model."""
    a = state.arrays
    return a.partitions * int(a.eligible.sum()) <= MAX_PAIRS


def _add_band_excess(model: cp_model.CpModel, state: SolverState, v: ModelVars,
                     nb: Neighbourhood) -> cp_model.IntVar:
    """Every broker and resource within the aimed band widened by `excess` thousandths of its
    target, and under the utilization cap; returns `excess`."""
    a = state.arrays
    load_unit, _ = scale(state)
    excess = model.new_int_var(0, MAX_EXCESS, "excess")
    lower, upper = aim(a, state.targets, state.goals.tolerance, state.goals.max_utilization)
    target = state.targets.utilization * a.capacity
    cap = state.goals.max_utilization * a.capacity
    terms = load_terms(state, nb, v, load_unit)
    for (b, r), expr in terms.free.items():
        unit = load_unit[r]
        load = sum(expr) + round(terms.fixed[b, r] / unit)
        model.add(load <= math.floor(cap[b, r] / unit))
        t = round(target[b, r] / unit)
        if t <= 0:
            model.add(load <= math.floor(upper[b, r] / unit))
            continue
        model.add(PER_MILLE * load <= math.floor(PER_MILLE * upper[b, r] / unit) + t * excess)
        model.add(PER_MILLE * load >= math.ceil(PER_MILLE * lower[b, r] / unit) - t * excess)
    return excess


def solve_exact(state: SolverState, work: float, seconds: float,
                seed: int) -> ExactResult | None:
    """The best placement of the whole cluster within `work` (CP-SAT deterministic time) and
    `seconds` of wall clock, or None when CP-SAT found none (it is hinted with the current
    placement, so that means it ran out of time in presolve)."""
    a = state.arrays
    eligible = np.flatnonzero(a.eligible).tolist()
    nb = Neighbourhood(list(range(a.partitions)), [eligible] * a.partitions)
    model = cp_model.CpModel()
    _, byte_unit = scale(state)
    v = variables(model, state, nb)
    add_replica_count(model, state, nb, v)
    add_rack_rule(model, state, nb, v)
    add_changed(model, state, nb, v)
    add_budget(model, state, nb, v, byte_unit)
    excess = _add_band_excess(model, state, v, nb)
    moved = bytes_term(state, nb, v, byte_unit)
    move_weight = max(1, round(MOVE_COST * BYTE_STEPS))
    most_bytes = sum(round(float(a.size[p]) / byte_unit) for p in range(a.partitions))
    weight = int(most_bytes * int(a.rf.max())) + move_weight * a.partitions + 1
    model.minimize(weight * excess + moved + move_weight * moves_term(v))
    add_hints(model, state, nb, v)
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = WORKERS
    solver.parameters.interleave_search = True
    solver.parameters.random_seed = seed
    solver.parameters.max_deterministic_time = work
    solver.parameters.max_time_in_seconds = seconds
    solver.parameters.relative_gap_limit = PROVEN_GAP
    status = solver.solve(model)
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return None
    rows = []
    for i, p in enumerate(nb.parts):
        chosen = [b for b in eligible if solver.value(v.replica[i, b])]
        lead = next(b for b in eligible if solver.value(v.leader[i, b]))
        rows.append(ordered_row(state, p, chosen, lead))
    objective = solver.objective_value
    gap = (objective - solver.best_objective_bound) / max(abs(objective), 1.0)
    return ExactResult(rows, status == cp_model.OPTIMAL, max(gap, 0.0),
                       int(solver.value(excess)))
