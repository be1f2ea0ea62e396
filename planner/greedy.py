"""Fast greedy replica mover: always yields a valid assignment, close to the fewest bytes.

It repeatedly takes the broker furthest outside its band. An overloaded broker sends replicas
to the brokers that need load most; an underloaded one pulls from the most overloaded. Each
candidate move is scored by penalty removed per byte moved (so moves that overshoot a band,
or land where no load is needed, lose), checked against racks and the budget, then applied.
"""

from __future__ import annotations

import numpy as np

from planner.arrays import NO_RACK, FloatArray, IntArray
from planner.state import SolverState, sessions_on_worst

PARTNERS = 6  # brokers scored as partners of the worst broker per session
SESSION_MOVES = 64  # moves applied per session at most before picking the worst broker again
MAX_REJECTS = 40  # consecutive rejected candidates that end a session
EFFICIENCY_FLOOR = 0.5  # a move must reach this share of the session's best efficiency

Candidate = tuple[float, int, int, int]  # (efficiency, partition, column, destination)


def _columns_of(state: SolverState, parts: IntArray, broker: int) -> IntArray:
    cols: IntArray = np.argmax(state.replicas[parts] == broker, axis=1)
    return cols


def _score_moves(state: SolverState, source: int, dest: int,
                 parts: IntArray, cols: IntArray) -> FloatArray:
    """Efficiency (penalty removed per unit of cost) of moving each part from source to dest;
    -inf where the destination already holds the partition or racks forbid it."""
    a = state.arrays
    rows = state.replicas[parts]
    valid = ~(rows == dest).any(axis=1)
    if a.rack_count:
        racks = a.rack_of(rows)
        same = ((racks == a.rack[dest]) & (rows != source) & (racks != NO_RACK)).sum(axis=1)
        valid &= same < a.rack_limit[parts]
    vec = np.stack([a.size[parts], a.net_in[parts],
                    np.where(cols == 0, a.leader_out[parts], 0.0)], axis=1)
    before = state.penalty(source) + state.penalty(dest)
    src_loads, dst_loads = state.loads[source] - vec, state.loads[dest] + vec
    valid &= state.no_worse_at(source, src_loads) & state.no_worse_at(dest, dst_loads)
    after = state.penalty_at(source, src_loads) + state.penalty_at(dest, dst_loads)
    cost = a.size[parts] / state.disk_unit + state.greedy_move_cost
    eff = (before - after) / cost
    out: FloatArray = np.where(valid & (before - after > 1e-12), eff, -np.inf)
    return out


def _candidates(state: SolverState, source: int, dests: list[int]) -> list[Candidate]:
    parts = state.hosted_array(source)
    if parts.size == 0:
        return []
    cols = _columns_of(state, parts, source)
    found: list[Candidate] = []
    cordoned = state.arrays.cordoned  # a cordoned destination takes no new replica
    for dest in (d for d in dests if cordoned is None or not cordoned[d]):
        eff = _score_moves(state, source, dest, parts, cols)
        keep = np.flatnonzero(np.isfinite(eff))
        if keep.size > 4 * SESSION_MOVES:
            keep = keep[np.argsort(-eff[keep], kind="stable")[: 4 * SESSION_MOVES]]
        found.extend((float(eff[k]), int(parts[k]), int(cols[k]), dest) for k in keep.tolist())
    found.sort(key=lambda c: (-c[0], c[1], c[3]))
    return found


def _apply_session(state: SolverState, candidates: list[Candidate]) -> int:
    """Apply candidates in order of efficiency while each still pays off; returns moves."""
    if not candidates:
        return 0
    floor = candidates[0][0] * EFFICIENCY_FLOOR
    applied = rejects = 0
    a = state.arrays
    for _, p, col, dest in candidates:
        if applied >= SESSION_MOVES or rejects >= MAX_REJECTS:
            break
        source = int(state.replicas[p, col])
        if (state.replicas[p] == dest).any() or not state.rack_allows(p, source, dest):
            rejects += 1
            continue
        vec = state.replica_vector(p, col == 0)
        pair = np.array([source, dest])
        if not state.no_worse(pair, state.loads[pair] + np.stack([-vec, vec])).all():
            rejects += 1
            continue
        gain = (state.penalty(source) + state.penalty(dest)
                - state.penalty(source, -vec) - state.penalty(dest, vec))
        cost = float(a.size[p]) / state.disk_unit + state.greedy_move_cost
        extra = state.move_bytes_delta(p, source, dest)
        if gain <= 1e-12 or gain / cost < floor or not state.affordable(p, extra):
            rejects += 1
            continue
        state.move_replica(p, col, dest)
        applied += 1
        rejects = 0
    return applied


def _partners(state: SolverState, broker: int, need_load: bool) -> list[int]:
    """Brokers to pair with `broker`: those needing load most (for a source) or with most to
    shed (for a destination), eligible only as destinations."""
    a = state.arrays
    rel = (state.loads - (state.lower + state.upper) / 2) * state.inv_norm
    rel = (rel * state.resource_weight).sum(axis=1)
    if need_load:
        rel = np.where(a.receives, rel, np.inf)
        order = np.argsort(rel, kind="stable")
    else:
        rel = np.where(a.eligible, rel, rel + 1e6)
        order = np.argsort(-rel, kind="stable")
    ranked = [int(b) for b in order.tolist() if b != broker]
    same_rack = [b for b in ranked if a.rack[b] == a.rack[broker]]
    chosen = ranked[:PARTNERS] + same_rack[:PARTNERS]
    return sorted(set(chosen), key=chosen.index)


def _session(state: SolverState, broker: int) -> int:
    over, under = state.over_under(broker)
    if over >= under:
        return _apply_session(state, _candidates(state, broker, _partners(state, broker, True)))
    found: list[Candidate] = []
    for source in _partners(state, broker, False):
        found.extend(_candidates(state, source, [broker]))
    found.sort(key=lambda c: (-c[0], c[1], c[3]))
    return _apply_session(state, found)


def rebalance_replicas(state: SolverState, max_sessions: int = 1_000_000) -> int:
    """Greedy sessions on the worst broker until every broker is in band or none can improve.

    Returns the number of replica moves applied.
    """
    return sessions_on_worst(state.all_penalties, lambda worst: _session(state, worst),
                             max_sessions)
