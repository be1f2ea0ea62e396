"""Fewer, larger moves for about the same bytes: trade several small moves for one large one.

Each move costs the executor a throttle cycle and a leader election, and the operator a line to
read, so once the plan is balanced with few bytes this pass lowers the number of moves. It
takes the largest partitions the plan leaves in place, one at a time, and moves each of its
replicas to the broker of the same rack with most room below its band among those the plan
already fills (so the rack rule holds as it did). That overfills them; it then puts back the
moved partitions that land on those brokers or came from the ones it leaves, fewest bytes copied
first, each as long as the brokers it touches end no further outside their bands. The trade is
kept when fewer partitions move, no broker ends further outside its band than before, and the
plan's bytes stay within SLACK of what they were when the pass began, within BOUND_SLACK of the
lower bound (unless they were already above it: then they may not grow), within the byte budget,
and within a price per move saved. Otherwise every change of the trade is undone.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np

from planner.arrays import IntArray
from planner.state import SolverState

SLACK = 0.015  # bytes the pass may add, as a share of the plan's bytes when it starts
BOUND_SLACK = 0.01  # ... and only while the plan stays within this share above the lower bound
MOVE_PRICE = 0.1  # bytes a trade may add per move it saves, as a share of the bytes per move
CANDIDATES = 400  # largest unmoved partitions tried at most
_EPS = 1e-9


def _receivers(state: SolverState) -> IntArray:
    """Eligible brokers whose disk load the plan raises."""
    out: IntArray = np.flatnonzero(state.arrays.eligible & (state.disk_gained() > 0.5))
    return out


def _room(state: SolverState, broker: int) -> float:
    """Least room below the upper band over the resources, relative to the average."""
    return float(((state.upper[broker] - state.loads[broker]) * state.inv_norm[broker]).min())


def _target_row(state: SolverState, p: int, receivers: IntArray) -> list[int]:
    """p's replicas, each on the same-rack receiver with most room (or where it is)."""
    a = state.arrays
    row = state.original_row(p)
    new = list(row)
    for col, source in enumerate(row):
        same = receivers if a.rack_count == 0 else receivers[a.rack[receivers] == a.rack[source]]
        options = [int(b) for b in same.tolist() if int(b) not in new]
        if options:
            new[col] = max(options, key=lambda b: (_room(state, b), -b))
    return new


def _copied(state: SolverState, q: int) -> float:
    """Bytes q's move copies now."""
    orig = set(state.original_row(q))
    now = state.replicas[q, : int(state.arrays.rf[q])].tolist()
    return float(state.arrays.size[q]) * sum(b not in orig for b in now)


def _put_back(state: SolverState, q: int) -> bool:
    """Give q its original replicas when the brokers it touches end no further outside."""
    if state.cost_of_return(q) > _EPS:
        return False
    state.assign(q, state.original_row(q))
    return True


def _trade(state: SolverState, p: int, receivers: IntArray, allowed: Callable[[int], float],
           originally: list[set[int]]) -> bool:
    """Move p whole and put back the small moves that made room for it; keep it or undo it."""
    a = state.arrays
    row = state.original_row(p)
    new = _target_row(state, p, receivers)
    if new == row:
        return False
    penalties, moves = state.all_penalties(), len(state.changed)
    undo: list[tuple[int, list[int]]] = [(p, row)]
    state.assign(p, new)
    landed, left = set(new) - set(row), set(row) - set(new)
    near = set().union(*(state.hosted[b] for b in landed), *(originally[b] for b in left))
    limit = float(a.size[p]) * len(landed)
    copied = {q: _copied(state, q) for q in near & state.changed if q != p}
    smaller = sorted((q for q, c in copied.items() if c < limit), key=lambda q: (copied[q], q))
    for q in smaller:
        now = state.replicas[q, : int(a.rf[q])].tolist()
        if state.original_allowed(q) and _put_back(state, q):
            undo.append((q, now))
    after = state.all_penalties()
    if (len(state.changed) < moves and state.bytes_moved <= allowed(len(state.changed))
            and bool(np.all(after <= np.maximum(penalties, 0.0) + _EPS))):
        return True
    for q, old in reversed(undo):
        state.assign(q, old)
    return False


def consolidate_moves(state: SolverState, deadline: float, lower_bound: float = 0.0) -> int:
    """Trade small moves for large ones (see the module docstring); returns the trades kept.
    `lower_bound` is the least bytes any balanced plan moves."""
    a = state.arrays
    if not state.changed:
        return 0
    start_bytes, start_moves = state.bytes_moved, len(state.changed)
    cap = min(state.max_bytes, start_bytes * (1 + SLACK),
              max(start_bytes, lower_bound * (1 + BOUND_SLACK)))
    price = MOVE_PRICE * start_bytes / start_moves

    def allowed(moves: int) -> float:
        """Bytes the plan may copy once it has `moves` moves left."""
        return min(cap, start_bytes + (start_moves - moves) * price)

    receivers = _receivers(state)
    originally: list[set[int]] = [set() for _ in range(a.brokers)]
    for q, row in enumerate(a.replicas.tolist()):
        for b in row:
            if b >= 0:
                originally[b].add(q)
    kept = tried = 0
    for p in np.argsort(-a.size, kind="stable").tolist():
        if tried >= CANDIDATES or time.monotonic() > deadline:
            break
        if p in state.changed or not state.original_allowed(p):
            continue
        tried += 1
        if _trade(state, p, receivers, allowed, originally):
            kept += 1
    return kept
