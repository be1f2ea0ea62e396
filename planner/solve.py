"""`plan(topology, goals, budget) -> PlanResult`: the planner's pure entry point.

Pipeline: arrays -> hard-goal repair (drain removed brokers, rack rule) -> greedy replica
moves (disk, net in) -> leadership for net out -> greedy again with every resource -> capacity
relief (the max-utilization cap, where hot partitions kept a broker above it) -> CP-SAT
large-neighbourhood improvement of bytes moved -> trades of several small moves for one large
one (planner.consolidate) -> the no-worse guard (undo what left a resource outside the
tolerance and more spread than before), within the time limit. Clusters small enough take the
whole-cluster CP-SAT model (planner.exact, SCIP after it when CP-SAT proves nothing) instead of
the neighbourhoods and the trades. Under a
move budget on a larger cluster, the plan made within the budget competes with the plan made
without it and cut down to it (planner.shrink), each in half the time; the one whose fullest
broker is lower wins, and between level ones the one with less penalty outside the bands. The
best valid assignment so far is always at hand; on timeout it is returned as it stands.

Racks: no rack may hold more than ceil(RF / racks) replicas of a partition, racks counted over
the brokers that remain. When no broker has a rack the rule is off (distinct brokers only).

Determinism: the greedy stages are exact; CP-SAT runs single-threaded with a fixed seed and a
deterministic work limit per round, for a number of rounds set by the time limit alone. The
same input and time limit give the same plan unless the machine is too slow to finish those
rounds before the wall-clock limit (then fewer rounds run; the plan is still valid).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace

import numpy as np

from kafka_rebalance.core.errors import PlanError
from planner import exact
from planner.arrays import (
    DISK,
    NET_IN,
    NET_OUT,
    ClusterArrays,
    FloatArray,
    IntArray,
    broker_loads,
    rack_ok,
    to_arrays,
    to_moves,
)
from planner.balance import Targets, achievable_targets, band, deviation
from planner.bounds import lower_bounds
from planner.capacity import relieve_overloads
from planner.consolidate import consolidate_moves
from planner.goals import Budget, Goals
from planner.greedy import rebalance_replicas
from planner.guard import undo_worsening
from planner.leader_balance import leader_level, level_leaders
from planner.leaders import rebalance_leaders
from planner.lns import improve, rounds_for
from planner.log_dirs import log_dir_plan
from planner.ordering import stranded
from planner.phases import Phases
from planner.prune import prune_moves
from planner.repair import check_racks_feasible, repair
from planner.requests import level_requests, request_level
from planner.result import PlanResult, SolverStatus
from planner.shrink import fuller_first, shrink_to_budget
from planner.spread import crowding
from planner.state import BAND_MARGIN, RETRY_MARGIN, SolverState
from planner.uncrowd import uncrowd_topics
from topology.load import ROUNDING_SLACK, within_tolerance
from topology.model import TopicPartition, Topology, replace_replicas
from topology.units import size_text

_NAMES = {DISK: "disk", NET_IN: "net in", NET_OUT: "net out"}
SPREAD_SECONDS = 5.0  # the least time topic spreading (or leader levelling) gets when the
# search used it all


def _in_band(arrays: ClusterArrays, replicas: IntArray, goals: Goals, targets: Targets) -> bool:
    """True when no hard rule is broken and every eligible broker is within tolerance."""
    if not rack_ok(arrays, replicas).all():
        return False
    if (~np.append(arrays.eligible, True)[replicas]).any():
        return False
    loads = broker_loads(arrays, replicas)
    lower, upper = band(arrays, targets, goals.tolerance, goals.max_utilization)
    eps = 1e-9 * np.maximum(upper, 1.0)
    ok = (loads >= lower - eps) & (loads <= upper + eps)
    return bool(ok[arrays.eligible].all())


def _binding(state: SolverState, goals: Goals, proven: bool,
             time_limit_s: float) -> tuple[str, ...]:
    """Which constraint keeps the plan from its targets, and by how much. Without a budget
    that binds, balance is called out of reach only when the whole-cluster model proved its
    plan optimal (`proven`); otherwise it was not reached in the time the search had."""
    notes: list[str] = []
    dev = deviation(state.arrays, state.targets, state.loads)
    what = "target" if any(state.targets.forced) else "average"
    off = [f"{_NAMES[r]} {dev[r]:.1%} off its {what}" for r in range(3)
           if not within_tolerance(float(dev[r]), goals.tolerance)]
    if not off:
        return ()
    still_off = "; ".join(off)
    if "bytes" in state.budget_hit:
        notes.append(f"--max-bytes: the byte budget of {size_text(state.max_bytes)} is "
                     f"spent ({size_text(state.bytes_moved)} planned); still off: "
                     f"{still_off}")
    if "moves" in state.budget_hit:
        notes.append(f"--max-moves: the move budget of {state.max_moves} moves is spent; "
                     f"still off: {still_off}")
    if not notes and proven:
        notes.append(f"partition sizes: no rack-aware placement brings every broker within "
                     f"+/-{goals.tolerance:.0%} of its {what} (the whole-cluster model proved "
                     f"this plan optimal); still off: {still_off}")
    elif not notes:
        notes.append(f"not reached within --time-limit {time_limit_s:g} s (nothing proves it "
                     f"out of reach; a longer limit may reach it); still off: {still_off}")
    return tuple(notes)


def _balance_all(state: SolverState) -> None:
    """Leaders, then replicas with every resource, then leaders again."""
    if state.goals.balance_leaders:
        rebalance_leaders(state)
    rebalance_replicas(state)
    if state.goals.balance_leaders:
        rebalance_leaders(state)


@dataclass(frozen=True)
class _Search:
    """What the search after the greedy stages achieved."""

    improved: bool  # CP-SAT changed the greedy plan
    optimal: bool = False  # the whole-cluster model proved the plan optimal
    proven_gap: float | None = None  # CP-SAT's relative gap to its bound (whole model)


@dataclass(frozen=True)
class _Outcome:
    """What a proven plan achieved. The tidying after the search (prune, undo, relief) keeps
    the proof when it costs no bytes, no moves, and no distance outside the band at any broker
    and resource: every term of the exact model's objective is then as good or better."""

    bytes_moved: float
    moves: int
    outside: FloatArray

    @classmethod
    def of(cls, state: SolverState) -> _Outcome:
        return cls(state.bytes_moved, len(state.changed), _outside(state))

    def no_worse(self, state: SolverState, switched: int = 0) -> bool:
        """`switched`: leadership-only moves another goal (--leader-balance) added since;
        they copy nothing and are not the proven objective's to count."""
        return (state.bytes_moved <= self.bytes_moved
                and len(state.changed) <= self.moves + switched
                and bool(np.all(_outside(state) <= self.outside + ROUNDING_SLACK)))


def _outside(state: SolverState) -> FloatArray:
    """Every broker's distance outside its band per resource, relative to the average."""
    return state.outside(np.arange(state.arrays.brokers), state.loads)


def _solve_state(state: SolverState, budget: Budget, deadline: float,
                 lower_bound: int, phases: Phases) -> _Search:
    """Run the pipeline on `state`: greedy stages, then CP-SAT on the whole cluster when it is
    small enough (exact), else CP-SAT neighbourhoods."""
    with phases("greedy"):
        _greedy(state)
    if exact.fits(state):
        with phases("exact"):
            return _solve_exact(state, budget, deadline)
    with phases("neighbourhoods"):
        improved = improve(state, deadline, budget.seed, lower_bound,
                           rounds_for(budget.time_limit_s))
        traded = consolidate_moves(state, deadline - 1.0 - 1e-5 * state.arrays.partitions,
                                   lower_bound)
    return _Search(improved or traded > 0)


def _greedy(state: SolverState) -> None:
    """The greedy stages: repair, replicas with net out damped, every resource, a retry at a
    tighter margin when out of band, then relief of overloads."""
    repair(state)
    state.resource_weight = np.array([1.0, 1.0, 0.2])
    rebalance_replicas(state)
    state.resource_weight = np.array([1.0, 1.0, 1.0])
    _balance_all(state)
    if (not _in_band(state.arrays, state.replicas, state.goals, state.targets)
            and not state.budget_hit):
        state.set_margin(RETRY_MARGIN)
        _balance_all(state)
        state.set_margin(BAND_MARGIN)
    moves_before = state.bytes_moved, len(state.changed)
    relieve_overloads(state)
    if (state.bytes_moved, len(state.changed)) != moves_before:
        _balance_all(state)  # fill what relief emptied; the greedy never pushes a broker over
        relieve_overloads(state)


def _solve_exact(state: SolverState, budget: Budget, deadline: float) -> _Search:
    """Replace the greedy plan by the whole-cluster CP-SAT solution (hinted with it). Its
    work limit follows from the time limit alone, so the same input gives the same plan."""
    work = max(budget.time_limit_s - 1.0, 0.5) * exact.DETERMINISTIC_SHARE
    # The clock is a safety stop: if it ends the search the plan depends on the machine's load.
    # With short limits it is given 4x the work, which a loaded 2-core machine still finishes.
    wall = max(deadline - time.monotonic() - 0.5, 4 * work)
    mip = budget.time_limit_s >= exact.MIP_MIN_LIMIT  # by the input alone, not the time left
    found = exact.solve_exact(state, work, wall, budget.seed, deadline - 0.5 if mip else None,
                              budget.time_limit_s * exact.MIP_FLOOR)
    if found is None:
        return _Search(False)
    before = state.replicas.copy()
    was_in_band = _in_band(state.arrays, before, state.goals, state.targets)
    for p, row in enumerate(found.rows):
        state.assign(p, row)
    if was_in_band and not _in_band(state.arrays, state.replicas, state.goals, state.targets):
        # CP-SAT's whole-unit loads let a broker slip out of the band by a rounding hair:
        # the greedy plan it started from was balanced, so that one stays.
        for p, row in enumerate(before.tolist()):
            state.assign(p, [b for b in row if b >= 0])
        return _Search(False)
    return _Search(not np.array_equal(before, state.replicas), found.optimal,
                   found.proven_gap)


def _fewer_of(state: SolverState, search: _Search, budget: Budget, deadline: float,
              lower_bound: int, phases: Phases) -> tuple[SolverState, _Search]:
    """Under a move budget, the better of the plan made within it and the plan made without it
    then cut down to it (planner.shrink): whichever leaves the fullest broker lower, then less
    penalty outside the bands (planner.shrink.fuller_first)."""
    assert budget.max_moves is not None
    free_budget = replace(budget, max_moves=None)
    free = SolverState(state.arrays, state.goals, free_budget, state.targets)
    free_search = _solve_state(free, free_budget, deadline, lower_bound, phases)
    free.max_moves = budget.max_moves
    cut = len(free.changed) > budget.max_moves
    if not shrink_to_budget(free, budget.max_moves):
        return state, search
    if cut:
        free.budget_hit.add("moves")
    if fuller_first(free, state):
        return free, free_search
    return state, search


def plan(topology: Topology, goals: Goals, budget: Budget) -> PlanResult:
    """A valid plan towards balance with the fewest bytes moved (see module docstring), and
    on JBOD brokers the log dir of each arriving replica and the moves that level their dirs
    (planner.log_dirs; with --max-bytes 0 or --no-log-dir-moves, placements only)."""
    stuck = stranded(topology)
    if stuck:  # no leader to copy from: they stay (validate.stranded_warning tells it)
        solvable = replace(topology, partitions=tuple(p for p in topology.partitions
                                                      if p.key not in stuck))
        result = _plan_brokers(solvable, goals, budget)
        result = replace(result, before=topology, after=replace_replicas(
            topology, {m.key: m.target for m in result.moves}))
    else:
        result = _plan_brokers(topology, goals, budget)
    start = time.monotonic()
    dirs = log_dir_plan(topology, result.moves, goals, budget)
    if dirs is None:
        return result
    return replace(result, log_dirs=dirs,
                   phase_seconds=(*result.phase_seconds, ("log dirs", time.monotonic() - start)))


def _plan_brokers(topology: Topology, goals: Goals, budget: Budget) -> PlanResult:
    """The broker-level plan."""
    start = time.monotonic()
    phases = Phases()
    with phases("arrays"):
        arrays = to_arrays(topology, goals)
        check_racks_feasible(arrays)
    with phases("targets"):
        targets = achievable_targets(arrays, goals)
    with phases("bounds"):
        bounds = lower_bounds(arrays, goals, targets)
    lower_bound = bounds.combined
    if (_in_band(arrays, arrays.replicas, goals, targets)
            and (goals.topic_spread is None
                 or crowding(arrays, arrays.replicas, goals.topic_spread).none)
            and (goals.leader_balance is None
                 or not leader_level(arrays, arrays.replicas, goals.leader_balance)
                 .brokers_outside)
            and (goals.request_balance is None
                 or not request_level(arrays, arrays.replicas, goals.request_balance)
                 .brokers_outside)):
        return PlanResult(topology, topology, (), SolverStatus.ALREADY_BALANCED, lower_bound,
                          0.0, (), time.monotonic() - start, targets, None, bounds.disk,
                          phases.items())
    state = SolverState(arrays, goals, budget, targets)
    state.price_moves(lower_bound)
    deadline = start + budget.time_limit_s
    # with --topic-spread, spreading gets the second half of the time
    searched_by = deadline if state.spread is None else start + budget.time_limit_s / 2
    shrinkable = (budget.max_moves is not None and budget.max_moves < arrays.partitions
                  and not exact.fits(state))
    search = _solve_state(state, budget, (start + searched_by) / 2 if shrinkable
                          else searched_by, lower_bound, phases)
    if shrinkable:
        state, search = _fewer_of(state, search, budget, searched_by, lower_bound, phases)
    searched = _Outcome.of(state)
    if state.spread is not None:
        with phases("spread"):
            uncrowd_topics(state, max(deadline, time.monotonic() + SPREAD_SECONDS))
    with phases("polish"):
        prune_moves(state)
        moves_before = len(state.changed)
        if goals.leader_balance is not None:  # after pruning, which keeps only what balances
            level_leaders(state, goals.leader_balance,
                          max(deadline, time.monotonic() + SPREAD_SECONDS))
        requested = 0
        if goals.request_balance is not None:  # last: it keeps every band and the spread
            requested = level_requests(state, goals.request_balance,
                                       max(deadline, time.monotonic() + SPREAD_SECONDS))
        switched = len(state.changed) - moves_before  # leadership moves the goals asked for
        undo_worsening(state)
        if not relieve_overloads(state):
            raise PlanError("no plan keeps every broker under the maximum utilization "
                            f"{goals.max_utilization:.0%} within this budget; raise the budget "
                            "or add brokers")
        moves = to_moves(topology, arrays, state.replicas)
        after = replace_replicas(topology, {TopicPartition(m.topic, m.partition): m.target
                                            for m in moves})
    # the exact search does not count requests: a plan the request phase changed is not proven
    proven = search.optimal and not requested and searched.no_worse(state, max(switched, 0))
    binding = _binding(state, goals, proven, budget.time_limit_s)
    moved = sum(m.bytes_moved for m in moves)
    if proven:
        status = SolverStatus.OPTIMAL
    elif binding:
        status = SolverStatus.BEST_EFFORT
    else:
        status = SolverStatus.FEASIBLE if search.improved else SolverStatus.GREEDY
    return PlanResult(topology, after, moves, status, lower_bound,
                      excess_over_bound(moved, lower_bound), binding, time.monotonic() - start,
                      targets, search.proven_gap, bounds.disk, phases.items())


def excess_over_bound(moved: int, lower_bound: int) -> float | None:
    """Bytes moved over the lower bound, minus one: how much more than the least any balanced
    plan must move. None when the bound is 0, or when the plan moved less (it stopped short of
    balance, under a budget, so the bound says nothing about it)."""
    if lower_bound <= 0 or moved < lower_bound:
        return None
    return moved / lower_bound - 1.0
