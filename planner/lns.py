"""Large-neighbourhood improvement of bytes moved with CP-SAT sub-models.

Each round picks a few brokers around one moved partition, frees the moved partitions that
touch them plus a sample of unmoved ones, and lets CP-SAT re-decide them (see cpsat_model).
A result is kept only when the exact float loads stay within the bands and bytes or moves
drop. Rounds are seeded and bounded by CP-SAT's deterministic work, so the same input gives
the same plan; the wall-clock deadline is only a safety stop.
"""

from __future__ import annotations

import time

import numpy as np

from planner.arrays import IntArray
from planner.cpsat_model import Neighbourhood, solve_neighbourhood
from planner.state import SolverState

FREE_MOVED = 60  # moved partitions freed per round at most
FREE_UNMOVED = 120  # unmoved partitions freed per round at most
EXTRA_BROKERS = 2  # random brokers added to the pivot's own
WORK_PER_ROUND = 0.1  # CP-SAT deterministic time per sub-model
STALL_ROUNDS = 12  # rounds without improvement that end the search
TARGET_GAP = 0.001  # stop once bytes moved are within 0.1% of the lower bound


def _receivers(state: SolverState) -> IntArray:
    """Eligible brokers ordered by how much they received (net bytes in), most first."""
    gained = np.where(state.arrays.eligible, state.disk_gained(), -np.inf)
    order: IntArray = np.argsort(-gained, kind="stable")
    return order[np.isfinite(gained[order])]


def _pivot_brokers(state: SolverState, rng: np.random.Generator, moved: IntArray,
                   receivers: IntArray) -> list[int]:
    """One moved partition's brokers, the top receiver in each of their racks (so a move
    between old brokers can be traded for one onto a new broker), and random others."""
    a = state.arrays
    p = int(moved[rng.integers(moved.size)])
    brokers = set(state.original_row(p)) | set(state.replicas[p, : int(a.rf[p])].tolist())
    for rack in sorted({int(a.rack[b]) for b in brokers}):
        in_rack = receivers[a.rack[receivers] == rack]
        brokers.update(int(b) for b in in_rack[:1].tolist())
    others = np.flatnonzero(a.receives)
    extra = rng.choice(others, size=min(EXTRA_BROKERS, others.size), replace=False)
    return sorted(brokers | {int(b) for b in extra.tolist()})


def _neighbourhood(state: SolverState, rng: np.random.Generator,
                   moved: IntArray, receivers: IntArray) -> Neighbourhood:
    a = state.arrays
    brokers = _pivot_brokers(state, rng, moved, receivers)
    near = sorted(set().union(*(state.hosted[b] for b in brokers)))
    near_arr = np.array(near, dtype=np.int64)
    is_moved = np.isin(near_arr, moved)
    free_moved = near_arr[is_moved]
    free_unmoved = near_arr[~is_moved]
    if free_moved.size > FREE_MOVED:
        free_moved = rng.choice(free_moved, FREE_MOVED, replace=False)
    if free_unmoved.size > FREE_UNMOVED:
        free_unmoved = rng.choice(free_unmoved, FREE_UNMOVED, replace=False)
    parts = sorted(int(p) for p in np.concatenate([free_moved, free_unmoved]).tolist())
    candidates = []
    for p in parts:
        kept = set(state.original_row(p))  # a cordoned broker may keep p, not take it
        own = kept | set(state.replicas[p, : int(a.rf[p])].tolist())
        candidates.append(sorted(b for b in own | set(brokers)
                                 if a.receives[b] or (a.eligible[b] and b in kept)))
    return Neighbourhood(parts, candidates)


def _try(state: SolverState, nb: Neighbourhood, rows: list[list[int]]) -> bool:
    """Apply rows; keep them when no broker gets worse and bytes or moves drop."""
    before_rows = [state.replicas[p, : int(state.arrays.rf[p])].tolist() for p in nb.parts]
    pen_before = state.all_penalties()
    bytes_before, moves_before = state.bytes_moved, len(state.changed)
    for p, row in zip(nb.parts, rows, strict=True):
        state.assign(p, row)
    pen_after = state.all_penalties()
    better = (state.bytes_moved < bytes_before - 0.5
              or (state.bytes_moved <= bytes_before + 0.5 and len(state.changed) < moves_before))
    within = bool(np.all(pen_after <= np.maximum(pen_before, 0.0) + 1e-9))
    if better and within:
        return True
    for p, row in zip(nb.parts, before_rows, strict=True):
        state.assign(p, row)
    return False


def rounds_for(time_limit_s: float) -> int:
    """Round budget from the time limit alone (not the clock), so plans are reproducible:
    one round per 2 s of limit (none under 2 s: a greedy plan). The clock only stops rounds
    early on a machine too slow for this budget, and then the plan may differ run to run."""
    return int(time_limit_s / 2)


def improve(state: SolverState, deadline: float, seed: int, lower_bound: int = 0,
            max_rounds: int = 100) -> bool:
    """Run LNS rounds until stalled, close to the bound, out of rounds or out of time."""
    rng = np.random.default_rng(seed)
    improved = False
    stall = 0
    stop = deadline - 1.0 - 1e-5 * state.arrays.partitions  # leave time to build the result
    for round_no in range(max_rounds):
        if stall >= STALL_ROUNDS or time.monotonic() > stop:
            break
        if lower_bound and state.bytes_moved <= lower_bound * (1 + TARGET_GAP):
            break
        moved = np.array(sorted(state.changed), dtype=np.int64)
        if moved.size == 0:
            break
        nb = _neighbourhood(state, rng, moved, _receivers(state))
        rows = solve_neighbourhood(state, nb, seed + round_no, WORK_PER_ROUND)
        if rows is not None and _try(state, nb, rows):
            improved = True
            stall = 0
        else:
            stall += 1
    return improved
