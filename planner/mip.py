"""A second solver on the whole-cluster model: SCIP, the MIP solver that ships with OR-Tools.

CP-SAT finds good placements quickly but seldom closes its gap when partitions are lumpy: its
bound comes from the linear relaxation, and narrowing it means branching in a search built
for finding solutions. SCIP's branch-and-cut is built for the proof: on the few-hundred-
partition zone shapes it proves in seconds what CP-SAT leaves open after 30 s, and it often
improves CP-SAT's plan on the way.

There is one model. `to_mip` reads the CpModel's proto (the variables, the linear constraints
and the Boolean clauses the planner's model is made of) into a MIP, rather than the planner
writing a second formulation that could drift from the first. A model with any other kind of
constraint is not translated (None), and the caller keeps CP-SAT's result.

SCIP runs on one thread and is stopped by a node limit, so the same model gives the same
result. Its wall-clock limit is a safety stop only: a run the clock ends depends on the
machine's speed, so its result is dropped (None), and the plan stays reproducible. SCIP works
in floating point: its solution is rounded, and the caller checks it against the CP-SAT model
before using it.
"""

from __future__ import annotations

from dataclasses import dataclass

from ortools.linear_solver import pywraplp
from ortools.sat.python import cp_model

_BOOLEAN_KINDS = ("exactly_one", "at_most_one", "bool_or", "bool_and")
_INT64_EDGE = 2**62  # domain ends beyond this are CP-SAT's "unbounded"


@dataclass(frozen=True)
class MipResult:
    """SCIP's best solution (one integer per CP-SAT variable, by proto index), its objective,
    SCIP's proven bound on the objective, and whether SCIP proved the solution optimal."""

    values: list[int]
    objective: float
    bound: float
    optimal: bool


def to_mip(model: cp_model.CpModel) -> tuple[pywraplp.Solver, list[pywraplp.Variable]] | None:
    """The model as a SCIP MIP (variables in proto order), or None when it holds a constraint
    that is neither linear nor a Boolean clause, or SCIP is not in this OR-Tools build."""
    proto = model.proto
    solver = pywraplp.Solver.CreateSolver("SCIP")
    if solver is None:
        return None
    xs = []
    for i, var in enumerate(proto.variables):
        domain = list(var.domain)
        xs.append(solver.IntVar(domain[0], domain[-1], f"x{i}"))
    for c in proto.constraints:
        kind = next((k for k in ("linear", *_BOOLEAN_KINDS) if getattr(c, f"has_{k}")()), None)
        if kind is None or (c.enforcement_literal and kind != "bool_and"):
            return None
        if kind == "linear":
            d = list(c.linear.domain)
            if len(d) != 2:
                return None
            row = solver.Constraint(d[0] if d[0] > -_INT64_EDGE else -solver.infinity(),
                                    d[1] if d[1] < _INT64_EDGE else solver.infinity())
            for var, coef in zip(c.linear.vars, c.linear.coeffs, strict=True):
                row.SetCoefficient(xs[var], row.GetCoefficient(xs[var]) + coef)
        elif kind == "bool_and":
            enforcement = list(c.enforcement_literal)
            for lit in c.bool_and.literals:
                # every enforcement literal true implies lit: lit - sum(enforcement) >= 1 - k
                _clause(solver, xs, [(lit, 1)] + [(e, -1) for e in enforcement],
                        1 - len(enforcement), solver.infinity())
        else:
            lits = [(lit, 1) for lit in getattr(c, kind).literals]
            low = -solver.infinity() if kind == "at_most_one" else 1
            high = solver.infinity() if kind == "bool_or" else 1
            _clause(solver, xs, lits, low, high)
    objective = solver.Objective()
    for var, coef in zip(proto.objective.vars, proto.objective.coeffs, strict=True):
        objective.SetCoefficient(xs[var], coef)
    objective.SetOffset(proto.objective.offset)
    objective.SetMinimization()
    return solver, xs


def _clause(solver: pywraplp.Solver, xs: list[pywraplp.Variable],
            terms: list[tuple[int, int]], low: float, high: float) -> None:
    """low <= sum(sign * value(literal)) <= high, where a negative literal -i-1 stands for
    (1 - x_i)."""
    shift = 0
    coefs: dict[int, int] = {}
    for lit, sign in terms:
        var, negated = (lit, False) if lit >= 0 else (-lit - 1, True)
        coefs[var] = coefs.get(var, 0) + (-sign if negated else sign)
        shift += sign if negated else 0
    row = solver.Constraint(low - shift, high - shift)
    for var, coef in coefs.items():
        row.SetCoefficient(xs[var], coef)


def solve_mip(model: cp_model.CpModel, start: list[int], node_limit: int, seconds: float,
              relative_gap: float) -> MipResult | None:
    """SCIP on the model, started from `start` (a full solution, by proto index), within
    `node_limit` branch-and-bound nodes and `seconds`. None when the model does not translate,
    SCIP ends without a solution, or the clock stopped it before the proof or the node limit."""
    translated = to_mip(model)
    if translated is None:
        return None
    solver, xs = translated
    solver.SetHint(xs, [float(v) for v in start])
    solver.SetNumThreads(1)
    solver.SetTimeLimit(max(1, int(min(seconds, 1e6) * 1000)))
    solver.SetSolverSpecificParametersAsString(f"limits/nodes = {node_limit}\n")
    params = pywraplp.MPSolverParameters()
    params.SetDoubleParam(pywraplp.MPSolverParameters.RELATIVE_MIP_GAP, relative_gap)
    status = solver.Solve(params)
    if status not in (pywraplp.Solver.OPTIMAL, pywraplp.Solver.FEASIBLE):
        return None
    if status == pywraplp.Solver.FEASIBLE and solver.nodes() < node_limit:
        return None  # the clock, not the node limit, ended it
    values = [round(x.solution_value()) for x in xs]
    return MipResult(values, solver.Objective().Value(), solver.Objective().BestBound(),
                     status == pywraplp.Solver.OPTIMAL)
