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
