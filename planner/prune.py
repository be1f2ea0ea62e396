"""Prune moves the plan does not need: every move costs the executor a throttle cycle, a
leader election and the operator's attention, so a partition whose change buys no balance
goes back to the replicas it has now.

For each changed partition, largest copy first: put it back as it was (replicas and leader);
keep that when no broker it touches ends further outside its aimed band. Then, for partitions
that still move data, try keeping the leader they have now where only leadership differs from
the original order. Undoing a change never costs bytes and never breaks a hard rule the
original placement kept (the rack rule and eligible brokers are checked).
"""

from __future__ import annotations

from planner.state import SolverState

_EPS = 1e-12


def _try_row(state: SolverState, p: int, row: list[int]) -> bool:
    """Give p `row` when no touched broker ends further outside its band; else keep it."""
    a = state.arrays
    now = state.replicas[p, : int(a.rf[p])].tolist()
    if state.spread is not None and state.spread.excess_change(p, now, row) > 0:
        return False  # it would crowd a topic again (--topic-spread)
    touched = sorted(set(now) | set(row))
    before = {b: state.penalty(b) for b in touched}
    state.assign(p, row)
    if all(state.penalty(b) <= before[b] + _EPS for b in touched):
        return True
    state.assign(p, now)
    return False


def prune_moves(state: SolverState) -> int:
    """Undo the changes that buy no balance (see the module docstring); returns how many
    partitions no longer move."""
    a = state.arrays
    undone = 0
    for p in sorted(state.changed, key=lambda q: (-float(a.size[q]), q)):
        if state.original_allowed(p) and _try_row(state, p, state.original_row(p)):
            undone += 1
    for p in sorted(state.changed):
        row = state.replicas[p, : int(a.rf[p])].tolist()
        orig = state.original_row(p)
        if set(row) == set(orig) or orig[0] not in row or row[0] == orig[0]:
            continue
        _try_row(state, p, [orig[0], *(b for b in row if b != orig[0])])
    return undone
