"""The no-worse guard: a plan must not leave a resource outside the tolerance of its targets
*and* further from them than it was (the validator's hard rule), even when trading it for
another resource lowered the solver's total penalty.

The balancing stages minimise a weighted sum over resources, so on lumpy clusters a last move can
fix disk while pushing network out just past the band. The guard undoes changed partitions, one
at a time, choosing the undo that removes most of the excess, until the rule holds; undoing
everything gives the starting placement, which always holds, so the guard always ends.
"""

from __future__ import annotations

import numpy as np

from planner.arrays import FloatArray, broker_loads
from planner.balance import WORSE_MARGIN
from planner.balance import deviation as balance_deviation
from planner.state import SolverState

_SLACK = WORSE_MARGIN / 2  # inside the validator's "worse" margin, so its float sums agree


def deviation(state: SolverState, loads: FloatArray) -> FloatArray:
    """Per resource: the largest relative distance of an eligible broker from its target."""
    return balance_deviation(state.arrays, state.targets, loads)


def _excess(state: SolverState, loads: FloatArray, allowed: FloatArray) -> float:
    return float(np.maximum(deviation(state, loads) - allowed, 0.0).sum())


def _extremes(state: SolverState, allowed: FloatArray) -> set[int]:
    """Brokers at the top or bottom of each resource that exceeds its allowance: only undoing a
    partition on one of them (now or originally) can narrow that resource's spread."""
    a = state.arrays
    eligible = np.flatnonzero(a.eligible)
    util = (state.loads[eligible] / np.maximum(a.capacity[eligible], 1e-12)
            / np.maximum(state.targets.utilization[eligible], 1e-12))
    over = deviation(state, state.loads) > allowed
    found: set[int] = set()
    for r in np.flatnonzero(over).tolist():
        found.update((int(eligible[np.argmax(util[:, r])]), int(eligible[np.argmin(util[:, r])])))
    return found


def _candidates(state: SolverState, brokers: set[int]) -> list[int]:
    a = state.arrays
    near = set().union(*(state.hosted[b] for b in brokers))
    near.update(np.flatnonzero(np.isin(a.replicas, sorted(brokers)).any(axis=1)).tolist())
    return sorted(near & state.changed)


def _undone_loads(state: SolverState, p: int) -> FloatArray:
    """The loads if partition p went back to its original replicas."""
    a = state.arrays
    trial = state.loads.copy()
    row = state.replicas[p, : int(a.rf[p])]
    orig = a.replicas[p, : int(a.rf[p])]
    trial[row, 0] -= a.size[p]
    trial[row, 1] -= a.net_in[p]
    trial[row[0], 2] -= a.leader_out[p]
    trial[orig, 0] += a.size[p]
    trial[orig, 1] += a.net_in[p]
    trial[orig[0], 2] += a.leader_out[p]
    return trial


def undo_worsening(state: SolverState) -> int:
    """Undo changed partitions until no resource is both outside the tolerance and worse than
    before; returns how many were undone. Not applied when brokers are removed or offline
    (draining them may force a worse spread, which the validator only warns about)."""
    a = state.arrays
    if state.goals.remove_brokers or not a.eligible.all():
        return 0
    before = deviation(state, broker_loads(a, a.replicas))
    allowed = np.maximum(before + _SLACK, state.goals.tolerance)
    undone = 0
    while state.changed and _excess(state, state.loads, allowed) > 0:
        # a partition whose original replicas break a hard rule (a replica on an offline
        # broker, a crowded rack) is never put back: its move is forced
        candidates = ([q for q in _candidates(state, _extremes(state, allowed))
                       if state.original_allowed(q)]
                      or [q for q in sorted(state.changed) if state.original_allowed(q)])
        if not candidates:
            break
        p = min(candidates, key=lambda q: (_excess(state, _undone_loads(state, q), allowed),
                                           float(a.size[q]), q))
        state.assign(p, state.original_row(p))
        undone += 1
    return undone
