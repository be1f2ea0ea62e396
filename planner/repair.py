"""Hard-goal repair before balancing: drain removed or offline brokers and fix rack violations.

Every replica that must move goes to the allowed broker that needs load most; when the budget
cannot pay for these moves the plan cannot meet its hard goals, which is a PlanError.
"""

from __future__ import annotations

import math
from collections import Counter

import numpy as np

from kafka_rebalance.core.errors import InputError, PlanError
from planner.arrays import NO_RACK, ClusterArrays, rack_ok
from planner.state import SolverState


def check_racks_feasible(arrays: ClusterArrays) -> None:
    """Raise when the brokers that remain cannot hold some partition rack-aware.

    Removing a rack's last broker is refused when partitions then span fewer racks than they
    need (min(RF, racks before)), or when the remaining racks cannot seat RF replicas at all.
    """
    if arrays.rack_count == 0:
        return
    remaining = Counter(arrays.rack[arrays.eligible].tolist())
    # A dead broker whose rack is unknown (no longer registered) names no rack of its own:
    # the 'None' rack counts only where a broker that stays has no rack either.
    racks = {r for r in set(arrays.rack.tolist())
             if arrays.rack_names[r] != "None" or r in remaining}
    all_racks = len(racks)
    for rf in sorted(set(arrays.rf.tolist())):
        if arrays.rack_count < min(rf, all_racks):
            gone = sorted(racks - set(remaining))
            names = ", ".join(arrays.rack_names[r] for r in gone)
            raise InputError(
                f"without the removed and dead brokers, no broker is left in rack {names}: "
                f"{arrays.rack_count} of {all_racks} racks remain, so partitions with RF {rf} "
                f"could no longer span {min(rf, all_racks)} racks; keep a broker in rack "
                f"{names} or add one there first")
        limit = math.ceil(rf / arrays.rack_count)
        seats = sum(min(limit, n) for n in remaining.values())
        if seats < rf:
            raise InputError(f"the remaining brokers cannot hold RF {rf} rack-aware: "
                             f"{seats} seats with at most {limit} replica(s) per rack")


def _best_destination(state: SolverState, p: int, source: int) -> int:
    """The allowed broker with the lowest relative load for partition p, or -1."""
    a = state.arrays
    rel = ((state.loads - state.lower) * state.inv_norm).max(axis=1)
    row = state.replicas[p]
    allowed = a.receives.copy()
    allowed[row[row >= 0]] = False
    if a.rack_count:
        racks = a.rack_of(row)
        counts = Counter(racks[(row != source) & (racks != NO_RACK)].tolist())
        full = [r for r, n in counts.items() if n >= a.rack_limit[p]]
        allowed &= ~np.isin(a.rack, full)
    if not allowed.any():
        return -1
    return int(np.flatnonzero(allowed)[np.argmin(rel[allowed])])


def _misplaced_columns(state: SolverState, p: int) -> list[int]:
    """Columns of p whose replica must move: on an ineligible broker or crowding a rack."""
    a = state.arrays
    row = state.replicas[p]
    cols = [c for c in range(int(a.rf[p])) if not a.eligible[row[c]]]
    if a.rack_count and not cols:
        racks = a.rack_of(row).tolist()
        counts = Counter(racks[: int(a.rf[p])])
        for c in range(int(a.rf[p]) - 1, -1, -1):
            if counts[racks[c]] > a.rack_limit[p]:
                counts[racks[c]] -= 1
                cols.append(c)
    return cols


def repair(state: SolverState) -> int:
    """Move every replica that breaks a hard placement rule; returns the moves made."""
    a = state.arrays
    on_ineligible = (~np.append(a.eligible, True)[state.replicas]).any(axis=1)
    broken = np.flatnonzero(on_ineligible | ~rack_ok(a, state.replicas))
    moves = 0
    for p in sorted(broken.tolist(), key=lambda i: (-a.size[i], i)):
        for col in _misplaced_columns(state, p):
            source = int(state.replicas[p, col])
            dest = _best_destination(state, p, source)
            if dest < 0:
                raise PlanError(f"no broker can take replica {col + 1} of partition index {p} "
                                "without breaking the rack rule; add brokers or racks")
            if not state.affordable(p, state.move_bytes_delta(p, source, dest)):
                raise PlanError("the budget (--max-bytes / --max-moves) is too small to drain "
                                "removed brokers and fix rack violations; raise it")
            state.move_replica(p, col, dest)
            moves += 1
    return moves
