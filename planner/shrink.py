"""Fit a balanced plan into a move budget by dropping the moves whose loss hurts balance least.

Under --max-moves the greedy spends a scarce budget move by move, and a move spent early on a
small gain cannot be taken back. The other way round: plan without the move budget (the bytes
budget still holds), then put partitions back where they were, one batch at a time, always
those whose return adds least penalty (distance outside the bands over the brokers they touch),
until the plan fits the budget. A partition whose original placement breaks a hard rule (on a
removed broker, against the rack rule) is never put back.
"""

from __future__ import annotations

from planner.state import SolverState

BATCH_SHARE = 0.1  # of the moves over the budget, put back per round before costs are redone
WORST_TIE = 1e-3  # fullest brokers closer than this (weighted share of target) count as level


def shrink_to_budget(state: SolverState, max_moves: int) -> bool:
    """Put partitions back until at most `max_moves` change; False when that is impossible
    (too many changes are forced by the hard rules)."""
    while len(state.changed) > max_moves:
        movable = [p for p in sorted(state.changed) if state.original_allowed(p)]
        over = len(state.changed) - max_moves
        if len(movable) < over:
            return False
        ranked = sorted(movable, key=lambda p: (state.cost_of_return(p), p))
        for p in ranked[: max(1, int(over * BATCH_SHARE))]:
            state.assign(p, state.original_row(p))
    return True


def fuller_first(candidate: SolverState, incumbent: SolverState) -> bool:
    """True when `candidate` leaves less imbalance than `incumbent`, the fullest broker first:
    its distance above the band decides, and only when the two are level (within WORST_TIE)
    does the total distance outside the bands. A plan that empties a broker's neighbour faster
    but leaves the fullest broker fuller is the worse plan: the full disk is what an operator
    runs out of first."""
    mine, theirs = candidate.worst_over(), incumbent.worst_over()
    if abs(mine - theirs) > WORST_TIE:
        return mine < theirs
    return float(candidate.all_penalties().sum()) < float(incumbent.all_penalties().sum())
