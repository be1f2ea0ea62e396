"""The whole cluster as one CP-SAT model, for clusters small enough to solve exactly.

Every (partition, eligible broker) pair is a replica variable and a leader variable. The
objective is lexicographic, in one weighted sum: first the worst excess of any broker and
resource above the band the planner aims at (planner.balance.aim, in thousandths of the
target: the fullest broker), then the total excess of all brokers above and below it (every
zone as level as it can be), then bytes moved plus a small cost per changed partition. So when
the aimed band is reachable the result is the fewest bytes that reach it, and when it is not,
the fullest broker is as low as any placement can make it and the rest as close as they can
be to their targets. CP-SAT proves either
to within PROVEN_GAP of its bound (OPTIMAL, the gap reported) or reports the gap it reached
at the time limit. The greedy plan is the hint.

Where the greedy plan (the hint) already lies inside every aimed band, the optimum of that
sum is the fewest bytes among such placements, so the model is solved in its `hard` form
instead: the bands as constraints and only the bytes (and the cost per move) to minimize.
That form is far easier to prove: on the zone benchmark's exact-sized cases it proved plans
the weighted form left 4-12% from its bound (benchmarks/README.md).

When CP-SAT has not proved its plan and time is left, SCIP (planner.mip) takes the same model,
started from CP-SAT's plan: its branch-and-cut often proves in a few seconds the bound CP-SAT
leaves open, and finds a better plan on the way. Its plan replaces CP-SAT's only when CP-SAT,
with every variable fixed to SCIP's values, accepts it and scores it lower; its bound counts
when it is higher than CP-SAT's.

Runs are reproducible: the subsolvers are interleaved deterministically on the worker threads
and stopped by a deterministic work limit; the wall-clock limit is only a safety stop.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, replace

import numpy as np
from ortools.sat.python import cp_model

from planner import mip
from planner.arrays import DISK, NET_IN, NET_OUT, broker_loads
from planner.balance import aim
from planner.cpsat_model import (
    ModelVars,
    Neighbourhood,
    add_budget,
    add_hints,
    bytes_term,
    load_terms,
    moves_term,
    placement_model,
    scale,
    solution_rows,
)
from planner.state import BAND_MARGIN, SolverState

MAX_PAIRS = 12_000  # (partition, broker) pairs up to which the whole model is solved
PER_MILLE = 1000
MAX_EXCESS = 5 * PER_MILLE  # beyond 5x its target a broker is simply far too full
WORKERS = 2
DETERMINISTIC_SHARE = 0.5  # work limit per second of time limit: about half on a busy 2-core
# machine, so the deterministic limit (reproducible) stops the search before the clock does
PROVEN_GAP = 1e-3  # objective within 0.1% of CP-SAT's proven bound counts as optimal
MIP_NODES = 50  # SCIP's branch-and-bound nodes: where it proves, it does so in the first few
SECOND_SOLVER = True  # SCIP after an unproven CP-SAT plan (benchmarks switch it off to compare)
MIP_FLOOR = 0.25  # SCIP's clock: what is left of the time limit, at least this share of it
MIP_MIN_LIMIT = 10.0  # seconds of time limit below which SCIP is not run: a clock of a quarter
# of less than that is too close to what SCIP needs even on tiny models, so whether the clock
# stopped it (and its result was dropped) would depend on the machine's load


@dataclass(frozen=True)
class ExactResult:
    """Rows (leader first) per partition, whether CP-SAT proved them optimal, and its
    relative gap between objective and bound (0 when proven)."""

    rows: list[list[int]]
    optimal: bool
    proven_gap: float
    worst_excess_per_mille: int  # of the fullest broker above its aimed band


def fits(state: SolverState) -> bool:
    """True when the cluster is small enough for the whole model."""
    a = state.arrays
    return a.partitions * int(a.eligible.sum()) <= MAX_PAIRS


@dataclass
class _Excess:
    """Thousandths of its target by which each broker and resource lies beyond the aimed
    band, above (`up`) and below (`down`), and the largest one above."""

    up: list[cp_model.IntVar]
    down: list[cp_model.IntVar]
    worst_up: cp_model.IntVar


@dataclass(frozen=True, slots=True)
class _Limits:
    """One broker and resource's limits in the model's integer units: the utilization cap
    (None: it never binds), and either the aimed band in thousandths of a unit with the
    target in units, or (no target) a plain upper limit (None: it never binds)."""

    cap: int | None
    target: int
    upper_per_mille: int = 0
    lower_per_mille: int = 0
    upper: int | None = None


def _limits(state: SolverState, keys: list[tuple[int, int]]) -> dict[tuple[int, int], _Limits]:
    """The limits of each (broker, resource) in `keys` (planner.balance.aim's band)."""
    a = state.arrays
    load_unit, _ = scale(state)
    # Aimed a hair inside the band, as the greedy aims: each partition's load is rounded to
    # a whole unit (a millionth of the average), so a broker at the band's edge in units can
    # lie a few millionths outside it in bytes.
    lower, upper = aim(a, state.targets, state.goals.tolerance, state.goals.max_utilization,
                       BAND_MARGIN)
    target = state.targets.utilization * a.capacity
    cap = state.goals.max_utilization * a.capacity
    # No broker can carry more than the whole cluster's load: a limit above it never binds,
    # and left in it could pass CP-SAT's int64 range (brokers without a capacity are unbounded).
    whole = state.loads.sum(axis=0) / load_unit + 1
    limits = {}
    for b, r in keys:
        unit = load_unit[r]
        capped = math.floor(cap[b, r] / unit) if cap[b, r] / unit < whole[r] else None
        t = round(target[b, r] / unit)
        if t <= 0:
            plain = math.floor(upper[b, r] / unit) if upper[b, r] / unit < whole[r] else None
            limits[b, r] = _Limits(capped, t, upper=plain)
        else:
            limits[b, r] = _Limits(capped, t, math.floor(PER_MILLE * upper[b, r] / unit),
                                   math.ceil(PER_MILLE * lower[b, r] / unit))
    return limits


def _add_band_excess(model: cp_model.CpModel, state: SolverState, v: ModelVars,
                     nb: Neighbourhood, hard: bool) -> _Excess:
    """Every broker and resource under the utilization cap and within the aimed band widened
    by its excess; with `hard`, within the band itself (every excess 0)."""
    load_unit, _ = scale(state)
    terms = load_terms(state, nb, v, load_unit)
    limits = _limits(state, list(terms.free))
    found = _Excess([], [], model.new_int_var(0, 0 if hard else MAX_EXCESS, "worst_up"))
    most_up, most_down = (0, 0) if hard else (MAX_EXCESS, PER_MILLE)
    for (b, r), expr in terms.free.items():
        limit = limits[b, r]
        load = sum(expr) + round(terms.fixed[b, r] / load_unit[r])
        if limit.cap is not None:
            model.add(load <= limit.cap)
        if limit.target <= 0:
            if limit.upper is not None:
                model.add(load <= limit.upper)
            continue
        up = model.new_int_var(0, most_up, f"up{b}_{r}")
        down = model.new_int_var(0, most_down, f"down{b}_{r}")
        model.add(PER_MILLE * load <= limit.upper_per_mille + limit.target * up)
        model.add(PER_MILLE * load >= limit.lower_per_mille - limit.target * down)
        model.add(found.worst_up >= up)
        found.up.append(up)
        found.down.append(down)
    return found


def _hint_in_band(state: SolverState, nb: Neighbourhood) -> bool:
    """Does the current placement (the hint) meet every limit of the model with no excess,
    counted in the model's own integer units?"""
    a = state.arrays
    load_unit, _ = scale(state)
    # each partition's load rounded to whole units, as load_terms gives it to the model
    loads = broker_loads(replace(a, size=np.rint(a.size / load_unit[DISK]),
                                 net_in=np.rint(a.net_in / load_unit[NET_IN]),
                                 leader_out=np.rint(a.leader_out / load_unit[NET_OUT])),
                         state.replicas)
    touched = sorted({b for cands in nb.candidates for b in cands})
    keys = [(b, r) for b in touched for r in range(3)]
    for (b, r), limit in _limits(state, keys).items():
        load = loads[b, r]
        if limit.cap is not None and load > limit.cap:
            return False
        if limit.target <= 0:
            if limit.upper is not None and load > limit.upper:
                return False
        elif not limit.lower_per_mille <= PER_MILLE * load <= limit.upper_per_mille:
            return False
    return True


def _move_weight(state: SolverState) -> tuple[float, int]:
    """The objective's byte unit (a millionth of all replica bytes, so that the weights above
    the bytes stay far inside 64-bit integers) and the cost of one changed partition in it."""
    a = state.arrays
    byte_unit = max(float((a.size * a.rf).sum()) / 1e6, 1e-9)
    return byte_unit, max(1, round(state.move_cost * state.disk_unit / byte_unit))


def _moved(state: SolverState, nb: Neighbourhood, v: ModelVars) -> cp_model.LinearExpr:
    """Bytes moved plus a small cost per changed partition."""
    byte_unit, move_weight = _move_weight(state)
    moved: cp_model.LinearExpr = (bytes_term(state, nb, v, byte_unit)
                                  + move_weight * moves_term(v))
    return moved


def _objective(state: SolverState, nb: Neighbourhood, v: ModelVars,
               excess: _Excess) -> cp_model.LinearExpr:
    """Lexicographic in one sum: the worst excess above the band (the fullest broker), then
    the total excess of every broker both ways (level inside each zone), then `_moved`. Its
    weights put any excess above every plan's bytes, so where a placement without excess
    exists, the optimum is the fewest bytes among those: the `hard` model's optimum."""
    a = state.arrays
    _, move_weight = _move_weight(state)
    level_weight = 2_000_000 + move_weight * a.partitions + 1
    total_excess = cp_model.LinearExpr.sum([*excess.up, *excess.down])
    most_excess = len(excess.up) * MAX_EXCESS + len(excess.down) * PER_MILLE
    worst_weight = level_weight * (most_excess + 1)
    objective: cp_model.LinearExpr = (worst_weight * excess.worst_up
                                       + level_weight * total_excess + _moved(state, nb, v))
    return objective


def _candidates(state: SolverState) -> list[list[int]]:
    """Per partition, the brokers that may hold it: every broker that receives, and a cordoned
    one only where it holds the partition already (it may keep it, not take it)."""
    a = state.arrays
    receives = np.flatnonzero(a.receives).tolist()
    if a.cordoned is None:
        return [receives] * a.partitions
    kept = np.flatnonzero(a.eligible & a.cordoned).tolist()
    return [sorted(set(receives) | {b for b in kept if b in state.original_row(p)})
            for p in range(a.partitions)]


@dataclass
class _Whole:
    """The whole-cluster model: its variables and excess terms."""

    model: cp_model.CpModel
    v: ModelVars
    excess: _Excess


def _whole_model(state: SolverState, nb: Neighbourhood, hard: bool) -> _Whole:
    """The weighted model (`_objective`), or with `hard` the same placement held inside every
    aimed band and only `_moved` to minimize: the same optimum where a placement without
    excess exists, and a far tighter model to prove it on (the bands prune the search
    instead of pricing it)."""
    _, byte_unit = scale(state)
    model, v = placement_model(state, nb)
    add_budget(model, state, nb, v, byte_unit)
    excess = _add_band_excess(model, state, v, nb, hard)
    model.minimize(_moved(state, nb, v) if hard else _objective(state, nb, v, excess))
    return _Whole(model, v, excess)


def _search(whole: _Whole, seed: int, work: float, seconds: float
            ) -> tuple[cp_model.CpSolver, cp_model.CpSolverStatus]:
    solver = cp_model.CpSolver()
    solver.parameters.catch_sigint_signal = False  # Ctrl-C is the command's (no plan)
    solver.parameters.num_workers = WORKERS
    solver.parameters.interleave_search = True
    solver.parameters.random_seed = seed
    solver.parameters.max_deterministic_time = work
    solver.parameters.max_time_in_seconds = seconds
    solver.parameters.relative_gap_limit = PROVEN_GAP
    return solver, solver.solve(whole.model)


def solve_exact(state: SolverState, work: float, seconds: float, seed: int,
                deadline: float | None = None, mip_floor: float = 0.0) -> ExactResult | None:
    """The best placement of the whole cluster within `work` (CP-SAT deterministic time) and
    `seconds` of wall clock: on the `hard` model when the current placement (the hint)
    already meets every aimed band, else on the weighted one. Then, when CP-SAT has not
    proved its plan and a `deadline` (time.monotonic()) is given, SCIP within MIP_NODES
    nodes, its clock stopping it at the deadline or after `mip_floor` seconds, whichever is
    later. Whether SCIP runs depends on CP-SAT's status alone, not on the time left, so the
    same input gives the same plan. None when CP-SAT found none (it is hinted with the
    current placement, so that means it ran out of time in presolve)."""
    a = state.arrays
    nb = Neighbourhood(list(range(a.partitions)), _candidates(state))
    whole = _whole_model(state, nb, hard=_hint_in_band(state, nb))
    add_hints(whole.model, state, nb, whole.v)
    solver, status = _search(whole, seed, work, seconds)
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return None
    objective, bound = solver.objective_value, solver.best_objective_bound
    if status != cp_model.OPTIMAL and deadline is not None and SECOND_SOLVER:
        found = _second_opinion(whole.model, solver,
                                max(deadline - time.monotonic(), mip_floor))
        if found is not None:
            solver, objective, mip_bound = found
            bound = max(bound, mip_bound)
    rows = solution_rows(solver, state, nb, whole.v)
    gap = max((objective - bound) / max(abs(objective), 1.0), 0.0)
    optimal = status == cp_model.OPTIMAL or gap <= PROVEN_GAP
    return ExactResult(rows, optimal, gap, int(solver.value(whole.excess.worst_up)))


def _second_opinion(model: cp_model.CpModel, solver: cp_model.CpSolver,
                    seconds: float) -> tuple[cp_model.CpSolver, float, float] | None:
    """SCIP on the model from CP-SAT's solution: the solver holding the better of the two
    plans (CP-SAT's own, or CP-SAT fixed to SCIP's values when it accepts them), that plan's
    objective, and SCIP's bound. None when SCIP gives no result that does not depend on the
    clock."""
    size = len(model.proto.variables)
    start = [solver.value(model.get_int_var_from_proto_index(i)) for i in range(size)]
    found = mip.solve_mip(model, start, MIP_NODES, seconds, PROVEN_GAP)
    if found is None:
        return None
    bound = math.ceil(found.bound - 1e-6)  # the objective is integral
    if found.objective >= solver.objective_value:
        return solver, solver.objective_value, bound
    checked = _fixed_to(model, found.values)
    if checked is None or checked.objective_value >= solver.objective_value:
        return solver, solver.objective_value, bound
    return checked, checked.objective_value, bound


def _fixed_to(model: cp_model.CpModel, values: list[int]) -> cp_model.CpSolver | None:
    """CP-SAT's own check of a solution found elsewhere: every variable fixed to its value.
    None when the values break a constraint (SCIP's floating point rounded one wrong)."""
    model.proto.clear_solution_hint()
    for i, value in enumerate(values):
        model.add_hint(model.get_int_var_from_proto_index(i), value)
    solver = cp_model.CpSolver()
    solver.parameters.catch_sigint_signal = False  # Ctrl-C is the command's (no plan)
    solver.parameters.num_workers = 1
    solver.parameters.fix_variables_to_their_hinted_value = True
    solver.parameters.max_time_in_seconds = 10.0
    if solver.solve(model) not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return None
    return solver
