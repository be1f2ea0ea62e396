"""Leadership rebalancing: balance network out by choosing which replica leads (zero bytes).

Greedy sessions like the replica mover, but a candidate is "make replica c of partition p the
preferred leader": it shifts p's leader traffic from the current leader to that replica.
"""

from __future__ import annotations

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
    moved = np.fromiter((p in state.changed for p in parts.tolist()), dtype=np.bool_,
                        count=parts.size)
    res: FloatArray = np.where(valid & (gain > 1e-12),
                               gain * np.where(moved, ALREADY_MOVED_BONUS, 1.0), -np.inf)
    return res


def _switches(state: SolverState, broker: int, shed: bool) -> list[Switch]:
    """Candidate switches off `broker` (when it sends too much) or onto it (too little)."""
    hosted = state.hosted_array(broker)
    if hosted.size == 0:
        return []
    leads = state.replicas[hosted, 0] == broker
    found: list[Switch] = []
    if shed:
        parts = hosted[leads]
        for col in range(1, state.replicas.shape[1]):
            gains = _switch_gains(state, parts, col)
            keep = np.flatnonzero(np.isfinite(gains))
            found.extend((float(gains[k]), int(parts[k]), col) for k in keep.tolist())
    else:
        parts = hosted[~leads]
        cols = np.argmax(state.replicas[parts] == broker, axis=1)
        for col in range(1, state.replicas.shape[1]):
            sel = parts[cols == col]
            gains = _switch_gains(state, sel, col)
            keep = np.flatnonzero(np.isfinite(gains))
            found.extend((float(gains[k]), int(sel[k]), col) for k in keep.tolist())
    found.sort(key=lambda s: (-s[0], s[1]))
    return found


def _apply(state: SolverState, switches: list[Switch]) -> int:
    applied = rejects = 0
    for _, p, col in switches:
        if applied >= SESSION_SWITCHES or rejects >= MAX_REJECTS:
            break
        old, new = int(state.replicas[p, 0]), int(state.replicas[p, col])
        out = float(state.arrays.leader_out[p])
        ids = np.array([old, new])
        loads = state.loads[ids, NET_OUT]
        gain = float(_out_penalty(state, ids, loads).sum()
                     - _out_penalty(state, ids, loads + np.array([-out, out])).sum())
        rows = state.loads[ids].copy()
        rows[:, NET_OUT] += np.array([-out, out])
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
