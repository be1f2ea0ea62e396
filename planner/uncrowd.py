"""The topic-spread phase: take crowded topics' replicas and leaders off the brokers that hold
more than their cap (planner.spread), keeping every broker's balance no worse.

For a crowded (topic, broker): the cheapest single move of one of the topic's replicas there
to a broker under its cap, where neither broker ends further outside its band (cost: the
balance penalty it adds, its bytes and a charge per new move); else, where the broker cannot
give up load (a new broker the balance stages filled to its band's edge), the same move paired
with a replica of another topic brought to it from a broker that can spare one.
Crowded leaders change places with a follower of the same partition on a broker under the
topic's leader cap (no bytes; net out no worse). Budgets (bytes, moves) hold throughout.
"""

from __future__ import annotations

import time

import numpy as np

from planner.arrays import FloatArray, IntArray
from planner.spread import TopicSpread
from planner.state import SolverState

REPLACE_TRIES = 4  # a crowded topic's partitions tried for a two-move replacement
SWAP_DESTINATIONS = 8  # receivers of p tried for a swap, most room under t's cap first
THIRD_PARTY_TRIES = 2  # receivers of p tried with a replica from a third broker
CANDIDATES = 8  # a crowded topic's partitions tried per move, cheapest to copy first
ROUNDS = 4  # passes over the crowded pairs; a pass that applies nothing ends the phase


def uncrowd_topics(state: SolverState, deadline: float) -> int:
    """Moves and leader changes applied to bring each topic under its caps."""
    spread = state.spread
    if spread is None:
        return 0
    applied = 0
    for _ in range(ROUNDS):
        progress = _level_leaders(state, spread, deadline)  # no bytes: first and last
        # single moves first, over every crowded pair: they are cheap to find and to copy;
        # the pairs they leave get the costlier search for two moves
        for step in (_move_one, _replace_one):
            for t, b in spread.crowded():
                while spread.counts[t, b] > spread.caps[t, b] and time.monotonic() < deadline:
                    if not step(state, spread, t, b):
                        break
                    progress += 1
        progress += _level_leaders(state, spread, deadline)
        applied += progress
        if not progress or time.monotonic() >= deadline:
            break
    return applied


def _topic_parts(state: SolverState, t: int, broker: int) -> IntArray:
    """Topic t's partitions with a replica on `broker`, in partition order."""
    assert state.spread is not None
    members = state.spread.members[t]
    found: IntArray = members[(state.replicas[members] == broker).any(axis=1)]
    return found


def _open_to(state: SolverState, p: int, source: int, brokers: IntArray) -> IntArray:
    """Those of `brokers` that p's replica on `source` may move to: not holding p, and the
    rack rule kept."""
    a = state.arrays
    row = state.replicas[p, : int(a.rf[p])]
    ok = ~np.isin(brokers, row)
    if a.rack_count > 0:
        others = a.rack[row[row != source]]
        in_rack = (others[None, :] == a.rack[brokers][:, None]).sum(axis=1)
        ok &= in_rack < int(a.rack_limit[p])
    out: IntArray = brokers[ok]
    return out


def _cheapest(state: SolverState, parts: IntArray) -> IntArray:
    """The CANDIDATES partitions that cost least to copy (already moving first, then small)."""
    moving = np.fromiter((p in state.changed for p in parts.tolist()), dtype=np.bool_,
                         count=parts.size)
    order = np.lexsort((parts, state.arrays.size[parts], ~moving))
    out: IntArray = parts[order][:CANDIDATES]
    return out


def _column(state: SolverState, p: int, broker: int) -> int:
    return int(np.flatnonzero(state.replicas[p] == broker)[0])


def _move_cost(state: SolverState, p: int, extra_bytes: float) -> float:
    charge = 0.0 if p in state.changed else state.greedy_move_cost
    return float(extra_bytes / state.disk_unit + charge)


def _move_one(state: SolverState, spread: TopicSpread, t: int, source: int) -> bool:
    """The cheapest balance-keeping move of one of topic t's replicas off `source`."""
    a = state.arrays
    room = np.flatnonzero(a.receives & (spread.counts[t] < spread.caps[t]))
    if room.size == 0:
        return False
    best: tuple[float, int, int, int] | None = None
    for p in _cheapest(state, _topic_parts(state, t, source)).tolist():
        col = _column(state, p, source)
        dests = _open_to(state, p, source, room)
        if dests.size == 0:
            continue
        vec = state.replica_vector(p, col == 0)
        at_source = (state.loads[source] - vec)[None, :]
        if not state.no_worse(np.array([source]), at_source, strict=True)[0]:
            continue
        rows = state.loads[dests] + vec
        ok = state.no_worse(dests, rows, strict=True)
        dests, rows = dests[ok], rows[ok]
        gained = (state.penalty_rows(dests, rows) - state.penalty_rows(dests, state.loads[dests])
                  + state.penalty(source, -vec) - state.penalty(source))
        for d, gain in zip(dests.tolist(), gained.tolist(), strict=True):
            extra = state.move_bytes_delta(p, source, d)
            cost = gain + _move_cost(state, p, extra)
            if (best is None or cost < best[0]) and state.affordable(p, extra):
                best = (cost, p, col, d)
    if best is None:
        return False
    _, p, col, d = best
    state.move_replica(p, col, d)
    return True


def _replace_one(state: SolverState, spread: TopicSpread, t: int, source: int) -> bool:
    """Where the source cannot give up load (a new broker filled to its band's edge, or a
    level cluster): move one of topic t's replicas to a broker under t's cap and bring
    `source` a replica of another topic it has room for, so that every broker touched stays
    within its band: a swap with the receiving broker, or a replica from a third broker that
    can spare one (tried for the receivers that can take p's load as it is). The cheapest
    pair wins."""
    a = state.arrays
    if not a.receives[source]:
        return False
    room = np.flatnonzero(a.receives & (spread.counts[t] < spread.caps[t]))
    best: tuple[float, int, int, int, int, int] | None = None
    for p in _cheapest(state, _topic_parts(state, t, source))[:REPLACE_TRIES].tolist():
        col = _column(state, p, source)
        vec_p = state.replica_vector(p, col == 0)
        dests = _open_to(state, p, source, room)
        if dests.size == 0:
            continue
        rows = state.loads[dests] + vec_p
        gains = state.penalty_rows(dests, rows) - state.penalty_rows(dests, state.loads[dests])
        takes = state.no_worse(dests, rows, strict=True)
        roomiest = dests[np.argsort(spread.counts[t, dests] - spread.caps[t, dests],
                                    kind="stable")][:SWAP_DESTINATIONS]
        tries = [(int(d), True, 0.0) for d in roomiest.tolist()]
        tries += [(int(dests[k]), False, float(gains[k]))
                  for k in np.flatnonzero(takes)[np.argsort(gains[takes])][:THIRD_PARTY_TRIES]]
        for d, swap, gain in tries:
            found = _incoming(state, spread, p, vec_p, source, d, swap)
            if found is None:
                continue
            cost = gain + found[0] + _move_cost(state, p, state.move_bytes_delta(p, source, d))
            if best is None or cost < best[0]:
                best = (cost, p, col, d, found[1], found[2])
    if best is None:
        return False
    _, p, col, d, q, q_col = best
    giver = int(state.replicas[q, q_col])
    if not state.affordable(p, state.move_bytes_delta(p, source, d)):
        return False
    state.move_replica(p, col, d)
    if not state.affordable(q, state.move_bytes_delta(q, giver, source)):
        state.move_replica(p, col, source)
        return False
    state.move_replica(q, q_col, source)
    return True


def _incoming(state: SolverState, spread: TopicSpread, p: int, vec_p: FloatArray,
              source: int, dest: int, swap: bool) -> tuple[float, int, int] | None:
    """The replica (partition, column) `source` takes in place of p's: from `dest` itself
    (swap), else from any other broker; of another topic with room on `source`, not there
    already, the rack rule kept, giver and `source` within their bands after. Its cost: the
    balance penalty added on `source` and the giver (with p's load on `dest` when swapping),
    its bytes and a charge when it is a new move."""
    a = state.arrays
    if swap:
        rows = state.hosted_array(dest)
        cols = np.argmax(state.replicas[rows] == dest, axis=1)
    else:
        held = (state.replicas >= 0) & (state.replicas != source) & (state.replicas != dest)
        rows, cols = np.nonzero(held)
    keep = (rows != p) & ~(state.replicas[rows] == source).any(axis=1)
    topics = a.topic[rows]
    keep &= spread.counts[topics, source] < spread.caps[topics, source]
    if a.rack_count > 0:
        racks = a.rack_of(state.replicas[rows])
        same = racks == a.rack[source]
        others = same.sum(axis=1) - same[np.arange(rows.size), cols]
        keep &= others < a.rack_limit[rows]
    rows, cols = rows[keep], cols[keep]
    if rows.size == 0:
        return None
    givers = state.replicas[rows, cols]
    vec = np.stack([a.size[rows], a.net_in[rows], np.where(cols == 0, a.leader_out[rows], 0.0)],
                   axis=1)
    at_source = state.loads[source] - vec_p + vec
    at_giver = state.loads[givers] - vec + (vec_p if swap else 0.0)
    sources = np.full(rows.size, source)
    keep = (state.no_worse(sources, at_source, strict=True)
            & state.no_worse(givers, at_giver, strict=True))
    if not keep.any():
        return None
    rows, cols, givers = rows[keep], cols[keep], givers[keep]
    at_source, at_giver = at_source[keep], at_giver[keep]
    gains = (state.penalty_rows(sources[keep], at_source) - state.penalty(source)
             + state.penalty_rows(givers, at_giver)
             - state.penalty_rows(givers, state.loads[givers]))
    original = a.replicas[rows]
    copied = np.where((original == source).any(axis=1), 0.0, a.size[rows])
    copied -= np.where((original == givers[:, None]).any(axis=1), 0.0, a.size[rows])
    moving = np.fromiter((q in state.changed for q in rows.tolist()), dtype=np.bool_,
                         count=rows.size)
    cost = gains + copied / state.disk_unit + np.where(moving, 0.0, state.greedy_move_cost)
    k = int(np.argmin(cost))
    return float(cost[k]), int(rows[k]), int(cols[k])


def _level_leaders(state: SolverState, spread: TopicSpread, deadline: float) -> int:
    """Hand crowded leaderships to a follower of the same partition under the leader cap."""
    a = state.arrays
    applied = 0
    for t, b in spread.crowded_leaders():
        for p in _topic_parts(state, t, b).tolist():
            if (spread.leads[t, b] <= spread.leader_caps[t, b]
                    or time.monotonic() >= deadline):
                break
            if int(state.replicas[p, 0]) != b:
                continue
            best: tuple[float, int] | None = None
            for col in range(1, int(a.rf[p])):
                d = int(state.replicas[p, col])
                if not a.eligible[d] or spread.leads[t, d] >= spread.leader_caps[t, d]:
                    continue
                ids, rows = state.switch_rows(p, col)
                if not state.no_worse(ids, rows, strict=True).all():
                    continue
                gained = float(state.penalty_rows(ids, rows).sum()
                               - state.penalty_rows(ids, state.loads[ids]).sum())
                cost = gained + _move_cost(state, p, 0.0)
                if best is None or cost < best[0]:
                    best = (cost, col)
            if best is not None and state.affordable(p, 0.0):
                state.set_leader(p, best[1])
                applied += 1
    return applied
