"""Capacity relief: bring every broker under `max_utilization`, a hard goal, when balancing alone
could not (a few hot partitions that no balanced placement can hold).

The balancing stages aim at the tolerance band and only take moves that leave the receiving
broker no worse; with partitions too hot for any broker to stay in band they can leave a broker
above the hard cap. This pass ignores balance and looks only at the cap: it moves leadership
first (no bytes), then single replicas to a broker that stays under the cap, and when a hot
replica fits on no broker as they are, it makes room on the largest broker that could hold it
by moving that broker's small replicas elsewhere.
"""

from __future__ import annotations

import numpy as np

from planner.arrays import NET_OUT, BoolArray, FloatArray, IntArray
from planner.state import SolverState

MAX_STEPS_PER_BROKER = 200  # moves tried per over-cap broker before giving up on it
CANDIDATES = 50  # replicas (or destinations) tried per step, best first
_EPS = 1e-9


def _limit(state: SolverState) -> FloatArray:
    return state.goals.max_utilization * state.arrays.capacity * (1 - 1e-6)


def _over(state: SolverState, limit: FloatArray) -> FloatArray:
    """Per broker and resource, load above the cap (0 where under)."""
    over = np.maximum(state.loads - limit, 0.0)
    over[~state.arrays.eligible] = 0.0
    return over


def _fits(state: SolverState, limit: FloatArray, dest: int, vec: FloatArray) -> bool:
    return bool((state.loads[dest] + vec <= limit[dest] + _EPS).all())


def _destinations(state: SolverState, p: int, source: int) -> BoolArray:
    """Mask of eligible brokers that may take p's replica from `source`: not already holding
    p, and the rack rule kept (vectorised: this pass may scan many replicas)."""
    a = state.arrays
    row = state.replicas[p, : int(a.rf[p])]
    allowed = a.receives.copy()
    allowed[row] = False
    if a.rack_count:
        others = a.rack[row[row != source]]
        counts = np.bincount(others, minlength=int(a.rack.max()) + 1)
        allowed &= counts[a.rack] < int(a.rack_limit[p])
    return allowed


def _fitting(state: SolverState, limit: FloatArray, allowed: BoolArray,
             vec: FloatArray) -> IntArray:
    """Allowed brokers that stay under the cap with `vec` added, least loaded after first."""
    after = (state.loads + vec) / np.maximum(limit, 1e-12)
    ok = allowed & (after <= 1 + _EPS).all(axis=1)
    cands = np.flatnonzero(ok)
    order = np.argsort(after[cands].max(axis=1), kind="stable")
    result: IntArray = cands[order]
    return result


def _shift_leader(state: SolverState, broker: int, limit: FloatArray) -> bool:
    """Hand leadership of one partition led by `broker` to a follower that stays under the cap;
    the largest leader load first (it relieves the most net out)."""
    a = state.arrays
    led = [p for p in state.hosted[broker] if int(state.replicas[p, 0]) == broker]
    for p in sorted(led, key=lambda q: (-a.leader_out[q], q)):
        out = np.zeros(3)
        out[NET_OUT] = a.leader_out[p]
        for col in range(1, int(a.rf[p])):
            follower = int(state.replicas[p, col])
            if a.eligible[follower] and _fits(state, limit, follower, out):
                state.set_leader(p, col)
                return True
    return False


def _move_one(state: SolverState, broker: int, limit: FloatArray, over: FloatArray,
              clearing: bool) -> bool:
    """Move one replica off `broker` to a broker that stays under the cap. With `clearing`, only
    a replica that clears the overload alone (the fewest bytes first); otherwise the one that
    relieves the most."""
    a = state.arrays
    scale = np.maximum(limit[broker], 1e-12)
    scored: list[tuple[float, int, int]] = []
    for p in sorted(state.hosted[broker]):
        col = int(np.flatnonzero(state.replicas[p] == broker)[0])
        vec = state.replica_vector(p, col == 0)
        relief = float((np.minimum(vec, over) / scale).sum())
        if relief <= 0:
            continue
        if not clearing:
            scored.append((-relief, p, col))
        elif (vec >= over - _EPS).all():
            scored.append((float(a.size[p]), p, col))
    for _, p, col in sorted(scored)[:CANDIDATES]:
        vec = state.replica_vector(p, col == 0)
        for dest in _fitting(state, limit, _destinations(state, p, broker), vec)[:3].tolist():
            if state.affordable(p, state.move_bytes_delta(p, broker, dest)):
                state.move_replica(p, col, dest)
                return True
    return False


def _make_room(state: SolverState, broker: int, limit: FloatArray) -> bool:
    """Move the hottest replica of `broker` to a broker that can hold it once some of its
    smaller replicas have moved on to brokers with room (the largest capacity first)."""
    hosted = sorted(state.hosted[broker])
    cols = {p: int(np.flatnonzero(state.replicas[p] == broker)[0]) for p in hosted}
    hot = sorted(hosted, key=lambda p: (-float((state.replica_vector(p, cols[p] == 0)
                                                / np.maximum(limit[broker], 1e-12)).max()), p))
    for p in hot[:3]:
        vec = state.replica_vector(p, cols[p] == 0)
        allowed = _destinations(state, p, broker) & (vec <= limit).all(axis=1)
        for dest in sorted(np.flatnonzero(allowed).tolist(),
                           key=lambda d: (-float(limit[d].sum()), d))[:CANDIDATES]:
            if (_evict_until_fits(state, dest, vec, limit, keep={broker})
                    and state.affordable(p, state.move_bytes_delta(p, broker, dest))):
                state.move_replica(p, cols[p], dest)
                return True
    return False


def _evict_until_fits(state: SolverState, dest: int, vec: FloatArray, limit: FloatArray,
                      keep: set[int]) -> bool:
    """Move small replicas off `dest` (never onto `keep`) until `vec` fits under its cap."""
    a = state.arrays
    for _ in range(MAX_STEPS_PER_BROKER):
        need = state.loads[dest] + vec - limit[dest]
        if (need <= _EPS).all():
            return True
        moved = False
        for q in sorted(state.hosted[dest], key=lambda q: (a.size[q], q)):
            col = int(np.flatnonzero(state.replicas[q] == dest)[0])
            qvec = state.replica_vector(q, col == 0)
            if not (np.minimum(qvec, np.maximum(need, 0.0)) > 0).any():
                continue
            allowed = _destinations(state, q, dest)
            allowed[sorted(keep)] = False
            for other in _fitting(state, limit, allowed, qvec)[:3].tolist():
                if state.affordable(q, state.move_bytes_delta(q, dest, other)):
                    state.move_replica(q, col, other)
                    moved = True
                    break
            if moved:
                break
        if not moved:
            return False
    return False


def relieve_overloads(state: SolverState) -> bool:
    """Move load off every broker above the cap; True when none is left above it."""
    limit = _limit(state)
    for _ in range(MAX_STEPS_PER_BROKER * max(1, state.arrays.brokers)):
        over = _over(state, limit)
        ratio = (over / np.maximum(limit, 1e-12)).max(axis=1)
        broker = int(np.argmax(ratio))
        if ratio[broker] <= 0:
            return True
        if over[broker, NET_OUT] > 0 and _shift_leader(state, broker, limit):
            continue
        if _move_one(state, broker, limit, over[broker], clearing=True):
            continue
        if _make_room(state, broker, limit):
            continue
        if not _move_one(state, broker, limit, over[broker], clearing=False):
            return False
    return False
