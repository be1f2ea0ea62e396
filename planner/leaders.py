"""Leadership rebalancing: balance network out by choosing which replica leads (zero bytes).

Greedy sessions like the replica mover, but a candidate is "make replica c of partition p the
preferred leader": it shifts p's leader traffic from the current leader to that replica.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from planner.arrays import NET_OUT, FloatArray, IntArray
from planner.state import SolverState, sessions_on_worst

SESSION_SWITCHES = 128
MAX_REJECTS = 40
ALREADY_MOVED_BONUS = 4.0  # reordering a partition that already moves costs no extra move

Switch = tuple[float, int, int]  # (gain per move, partition, column of the new leader)


def _out_penalty(state: SolverState, brokers: IntArray, out: FloatArray) -> FloatArray:
    over = np.maximum(out - state.upper[brokers, NET_OUT], 0.0)
    under = np.maximum(state.lower[brokers, NET_OUT] - out, 0.0)
    res: FloatArray = ((over + under) * state.inv_norm[brokers, NET_OUT]
                       * state.broker_weight[brokers])
    return res


def switch_columns(state: SolverState, broker: int,
                   shed: bool) -> Iterator[tuple[int, IntArray]]:
    """For each replica column c >= 1, the partitions whose switch to the replica in column c
    takes a leadership off `broker` (shed: the partitions it leads) or gives it one (the
    partitions it follows in column c)."""
    hosted = state.hosted_array(broker)
    if hosted.size == 0:
        return
    leads = state.replicas[hosted, 0] == broker
    parts = hosted[leads] if shed else hosted[~leads]
    for col in range(1, state.replicas.shape[1]):
        yield col, (parts if shed else parts[state.replicas[parts, col] == broker])


def moved_bonus(state: SolverState, parts: IntArray) -> FloatArray:
    """ALREADY_MOVED_BONUS for each partition the plan changes already, else 1."""
    moved = np.fromiter((p in state.changed for p in parts.tolist()), dtype=np.bool_,
                        count=parts.size)
    res: FloatArray = np.where(moved, ALREADY_MOVED_BONUS, 1.0)
    return res


def _switch_gains(state: SolverState, parts: IntArray, col: int) -> FloatArray:
    """Out-penalty removed by making column `col` the leader of each partition."""
    old = state.replicas[parts, 0]
    new = state.replicas[parts, col]
    valid = (new >= 0) & state.arrays.eligible[np.maximum(new, 0)]
    new = np.where(valid, new, old)
    out = state.arrays.leader_out[parts]
    load_old = state.loads[old, NET_OUT]
    load_new = state.loads[new, NET_OUT]
    before = _out_penalty(state, old, load_old) + _out_penalty(state, new, load_new)
    after = _out_penalty(state, old, load_old - out) + _out_penalty(state, new, load_new + out)
    gain = before - after
    res: FloatArray = np.where(valid & (gain > 1e-12), gain * moved_bonus(state, parts), -np.inf)
    return res


def _switches(state: SolverState, broker: int, shed: bool) -> list[Switch]:
    """Candidate switches off `broker` (when it sends too much) or onto it (too little)."""
    found: list[Switch] = []
    for col, parts in switch_columns(state, broker, shed):
        gains = _switch_gains(state, parts, col)
        keep = np.flatnonzero(np.isfinite(gains))
        found.extend((float(gains[k]), int(parts[k]), col) for k in keep.tolist())
    found.sort(key=lambda s: (-s[0], s[1]))
    return found


def _apply(state: SolverState, switches: list[Switch]) -> int:
    applied = rejects = 0
    for _, p, col in switches:
        if applied >= SESSION_SWITCHES or rejects >= MAX_REJECTS:
            break
        ids, rows = state.switch_rows(p, col)
        gain = float(_out_penalty(state, ids, state.loads[ids, NET_OUT]).sum()
                     - _out_penalty(state, ids, rows[:, NET_OUT]).sum())
        if gain <= 1e-12 or not state.no_worse(ids, rows).all() or not state.affordable(p, 0.0):
            rejects += 1
            continue
        state.set_leader(p, col)
        applied += 1
        rejects = 0
    return applied


def rebalance_leaders(state: SolverState, max_sessions: int = 1_000_000) -> int:
    """Greedy leadership switches until network out is in band or cannot improve."""
    everyone = np.arange(state.arrays.brokers)

    def penalties() -> FloatArray:
        return _out_penalty(state, everyone, state.loads[:, NET_OUT])

    def session(worst: int) -> int:
        shed = state.loads[worst, NET_OUT] > state.upper[worst, NET_OUT]
        return _apply(state, _switches(state, worst, bool(shed)))

    return sessions_on_worst(penalties, session, max_sessions)
