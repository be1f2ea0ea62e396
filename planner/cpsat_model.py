"""CP-SAT sub-model over a neighbourhood: a few hundred partitions, each with a pruned list of
candidate brokers, every other partition fixed. It re-chooses replicas and leaders to move
fewer bytes while every touched broker stays within its band (or no worse than now).

One function builds the variables, one adds each constraint family, one adds each objective
term; floats become integers in `scale` only. The current assignment is a complete hint.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from ortools.sat.python import cp_model

from planner.arrays import DISK, NET_IN, NET_OUT, FloatArray
from planner.state import SolverState

LOAD_STEPS = 1_000_000  # integer steps per average broker load of a resource
BYTE_STEPS = 1_000_000  # integer steps per average broker disk in the objective


@dataclass
class Neighbourhood:
    """Partitions to re-decide and their candidate brokers (current replicas included)."""

    parts: list[int]
    candidates: list[list[int]]


@dataclass
class ModelVars:
    replica: dict[tuple[int, int], cp_model.IntVar]  # (partition index in nbhd, broker)
    leader: dict[tuple[int, int], cp_model.IntVar]
    changed: list[cp_model.IntVar]


def scale(state: SolverState) -> tuple[FloatArray, float]:
    """The one float -> integer scaling: per-resource load unit and the byte unit."""
    a = state.arrays
    avg_load = state.loads.sum(axis=0) / max(int(a.eligible.sum()), 1)
    load_unit = np.maximum(avg_load / LOAD_STEPS, 1e-9)
    return load_unit, state.disk_unit / BYTE_STEPS


def variables(model: cp_model.CpModel, state: SolverState, nb: Neighbourhood) -> ModelVars:
    replica: dict[tuple[int, int], cp_model.IntVar] = {}
    leader: dict[tuple[int, int], cp_model.IntVar] = {}
    changed: list[cp_model.IntVar] = []
    for i, cands in enumerate(nb.candidates):
        for b in cands:
            replica[i, b] = model.new_bool_var(f"x{i}_{b}")
            leader[i, b] = model.new_bool_var(f"l{i}_{b}")
        changed.append(model.new_bool_var(f"c{i}"))
    return ModelVars(replica, leader, changed)


def add_replica_count(model: cp_model.CpModel, state: SolverState, nb: Neighbourhood,
                       v: ModelVars) -> None:
    """RF kept; exactly one leader, which must be one of the replicas."""
    for i, (p, cands) in enumerate(zip(nb.parts, nb.candidates, strict=True)):
        model.add(sum(v.replica[i, b] for b in cands) == int(state.arrays.rf[p]))
        model.add_exactly_one(v.leader[i, b] for b in cands)
        for b in cands:
            model.add_implication(v.leader[i, b], v.replica[i, b])


def add_rack_rule(model: cp_model.CpModel, state: SolverState, nb: Neighbourhood,
                   v: ModelVars) -> None:
    a = state.arrays
    if a.rack_count == 0:
        return
    for i, (p, cands) in enumerate(zip(nb.parts, nb.candidates, strict=True)):
        by_rack: dict[int, list[int]] = {}
        for b in cands:
            by_rack.setdefault(int(a.rack[b]), []).append(b)
        for members in by_rack.values():
            if len(members) > a.rack_limit[p]:
                model.add(sum(v.replica[i, b] for b in members) <= int(a.rack_limit[p]))


def add_changed(model: cp_model.CpModel, state: SolverState, nb: Neighbourhood,
                 v: ModelVars) -> None:
    """changed[i] is 1 when the partition leaves an original broker or changes its leader."""
    for i, (p, cands) in enumerate(zip(nb.parts, nb.candidates, strict=True)):
        orig = state.original_row(p)
        for b in cands:
            if b not in orig:
                model.add_implication(v.replica[i, b], v.changed[i])
        if not set(orig) <= set(cands):
            model.add(v.changed[i] == 1)
        else:
            model.add_implication(v.leader[i, orig[0]].Not(), v.changed[i])


@dataclass
class LoadTerms:
    """Per (broker, resource): the load of the fixed partitions (float) and the linear term of
    the free ones (integer load units); brokers are those any candidate list names."""

    fixed: dict[tuple[int, int], float]
    free: dict[tuple[int, int], list[cp_model.LinearExpr]]


def load_terms(state: SolverState, nb: Neighbourhood, v: ModelVars,
               load_unit: FloatArray) -> LoadTerms:
    a = state.arrays
    touched = sorted({b for cands in nb.candidates for b in cands})
    fixed = {(b, r): float(state.loads[b, r]) for b in touched for r in range(3)}
    free: dict[tuple[int, int], list[cp_model.LinearExpr]] = {}
    for i, (p, cands) in enumerate(zip(nb.parts, nb.candidates, strict=True)):
        row = state.replicas[p, : int(a.rf[p])].tolist()
        for b in row:
            if (b, DISK) in fixed:
                fixed[b, DISK] -= a.size[p]
                fixed[b, NET_IN] -= a.net_in[p]
        if (row[0], NET_OUT) in fixed:
            fixed[row[0], NET_OUT] -= a.leader_out[p]
        coef = (round(a.size[p] / load_unit[DISK]), round(a.net_in[p] / load_unit[NET_IN]),
                round(a.leader_out[p] / load_unit[NET_OUT]))
        for b in cands:
            free.setdefault((b, DISK), []).append(coef[DISK] * v.replica[i, b])
            free.setdefault((b, NET_IN), []).append(coef[NET_IN] * v.replica[i, b])
            free.setdefault((b, NET_OUT), []).append(coef[NET_OUT] * v.leader[i, b])
    return LoadTerms(fixed, free)


def _add_broker_bands(model: cp_model.CpModel, state: SolverState, nb: Neighbourhood,
                      v: ModelVars, load_unit: FloatArray) -> None:
    """Each touched broker's load within its band, or no worse than now when outside it."""
    terms = load_terms(state, nb, v, load_unit)
    whole = state.loads.sum(axis=0)  # no broker carries more: a higher bound never binds
    for (b, r), expr in terms.free.items():
        now = state.loads[b, r]
        low = min(state.lower[b, r], now) - terms.fixed[b, r]
        high = min(max(state.upper[b, r], now), whole[r]) - terms.fixed[b, r]
        model.add_linear_constraint(sum(expr), math.ceil(low / load_unit[r]),
                                    math.floor(high / load_unit[r]))


def add_budget(model: cp_model.CpModel, state: SolverState, nb: Neighbourhood, v: ModelVars,
                byte_unit: float) -> None:
    """The neighbourhood may spend what it spends now plus what the budget has left."""
    if state.max_moves < state.arrays.partitions:
        now = sum(p in state.changed for p in nb.parts)
        model.add(sum(v.changed) <= now + state.max_moves - len(state.changed))
    if math.isfinite(state.max_bytes):
        spare = state.max_bytes - state.bytes_moved
        model.add(bytes_term(state, nb, v, byte_unit)
                  <= math.floor((current_bytes(state, nb) + spare) / byte_unit))


def current_bytes(state: SolverState, nb: Neighbourhood) -> float:
    total = 0.0
    for p in nb.parts:
        orig = state.original_row(p)
        row = state.replicas[p, : int(state.arrays.rf[p])].tolist()
        total += float(state.arrays.size[p]) * sum(b not in orig for b in row)
    return total


def bytes_term(state: SolverState, nb: Neighbourhood, v: ModelVars,
                byte_unit: float) -> cp_model.LinearExpr:
    """Bytes copied: size of each replica placed on a broker that did not hold it."""
    terms: list[cp_model.LinearExpr] = []
    for i, (p, cands) in enumerate(zip(nb.parts, nb.candidates, strict=True)):
        orig = state.original_row(p)
        coef = round(float(state.arrays.size[p]) / byte_unit)
        terms.extend(coef * v.replica[i, b] for b in cands if b not in orig)
    return sum(terms, cp_model.LinearExpr.constant(0))


def moves_term(v: ModelVars) -> cp_model.LinearExpr:
    """Partitions whose replica list changes (each is one reassignment)."""
    return sum(v.changed, cp_model.LinearExpr.constant(0))


def add_hints(model: cp_model.CpModel, state: SolverState, nb: Neighbourhood, v: ModelVars) -> None:
    for i, (p, cands) in enumerate(zip(nb.parts, nb.candidates, strict=True)):
        row = state.replicas[p, : int(state.arrays.rf[p])].tolist()
        for b in cands:
            model.add_hint(v.replica[i, b], b in row)
            model.add_hint(v.leader[i, b], b == row[0])
        model.add_hint(v.changed[i], p in state.changed)


def placement_model(state: SolverState, nb: Neighbourhood) -> tuple[cp_model.CpModel,
                                                                    ModelVars]:
    """The model every CP-SAT use shares: variables, RF and leader, rack rule, changed."""
    model = cp_model.CpModel()
    v = variables(model, state, nb)
    add_replica_count(model, state, nb, v)
    add_rack_rule(model, state, nb, v)
    add_changed(model, state, nb, v)
    return model, v


def solution_rows(solver: cp_model.CpSolver, state: SolverState, nb: Neighbourhood,
                  v: ModelVars) -> list[list[int]]:
    """The solved replica rows (leader first), one per partition of the neighbourhood."""
    rows = []
    for i, (p, cands) in enumerate(zip(nb.parts, nb.candidates, strict=True)):
        chosen = [b for b in cands if solver.value(v.replica[i, b])]
        lead = next(b for b in cands if solver.value(v.leader[i, b]))
        rows.append(ordered_row(state, p, chosen, lead))
    return rows


def solve_neighbourhood(state: SolverState, nb: Neighbourhood, seed: int,
                        work_limit: float) -> list[list[int]] | None:
    """New replica rows (leader first) for the neighbourhood, or None when none is found."""
    load_unit, byte_unit = scale(state)
    model, v = placement_model(state, nb)
    _add_broker_bands(model, state, nb, v, load_unit)
    add_budget(model, state, nb, v, byte_unit)
    move_weight = max(1, round(state.move_cost * BYTE_STEPS))
    model.minimize(bytes_term(state, nb, v, byte_unit) + move_weight * moves_term(v))
    add_hints(model, state, nb, v)
    solver = cp_model.CpSolver()
    solver.parameters.catch_sigint_signal = False  # Ctrl-C is the command's (no plan)
    solver.parameters.num_workers = 1
    solver.parameters.random_seed = seed
    solver.parameters.max_deterministic_time = work_limit
    status = solver.solve(model)
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return None
    return solution_rows(solver, state, nb, v)


def ordered_row(state: SolverState, p: int, chosen: list[int], lead: int) -> list[int]:
    """Leader first, then original replicas in their original order, then the rest."""
    orig = state.original_row(p)
    rest = [b for b in orig if b in chosen and b != lead]
    rest += [b for b in state.replicas[p, : len(orig)].tolist()
             if b in chosen and b != lead and b not in rest]
    rest += [b for b in sorted(chosen) if b != lead and b not in rest]
    return [lead, *rest]
