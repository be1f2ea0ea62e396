"""Request balance: each broker serves about its fair share of produce and fetch requests
(`plan --request-balance TOL`), a fourth resource beside disk, net in and net out.

Many small produce and fetch requests load a broker's network and request threads while its
bytes look calm. The requests of a partition go to its leader (producers and consumers both
talk to it), so a broker's request load is the sum over the partitions it leads. Its fair
share is the cluster's requests times its share of the request capacity of the brokers that
may lead (the capacities' `requests_per_sec`; equal brokers without it). A broker is in band
within fair x (1 +/- TOL), or within 1% of its request capacity of its fair share when that is
wider (a few requests a second are no imbalance, and one partition's requests cannot be split).

The phase runs after the balance search, on the broker furthest outside its band. First
leadership switches, which copy nothing: a partition the broker leads goes to a follower on a
broker with room, or one it follows comes to it. Where no switch helps (a broker whose
partitions are all led elsewhere, or led by brokers without room) the leader replica of a
partition moves to a broker that holds none of it, the cheapest in bytes for the requests it
shifts; where that would push a broker out of a byte band (brokers level in bytes), it swaps
places with a leader of the receiving broker that has fewer requests and the most similar
bytes, so the bytes stay and the requests' difference moves. Each session first tries only
steps that take neither broker further outside its request band (a switch that overshoots is
worse than a move that lands inside), then any step that lowers the request penalty. No step
leaves any broker further outside its disk, net in or net out band, or crowds a topic more
(`--topic-spread`), nor, with `--leader-balance`, further outside its fair share of leaders
(the phase runs after leader levelling and must not undo it), and budgets hold.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from planner.arrays import NET_OUT, ClusterArrays, FloatArray, IntArray, to_arrays
from planner.goals import Goals
from planner.leader_balance import FairLeaders, led, switch_keeps_spread
from planner.state import SolverState, sessions_on_worst
from topology.model import Topology

# Requests within this share of a broker's request capacity of its fair share are in band.
IMMATERIAL_REQUESTS = 0.01
SESSION_STEPS = 64  # switches or moves one session may apply
SWITCH_TRIES = 8  # a broker's best switches tried, alone and then paired
PAIR_TRIES = 16  # leaderships tried as the second switch of a pair
SOURCES = 16  # a broker's heaviest partitions tried per session for a move
DESTINATIONS = 8  # brokers with the most room tried for each of them
SWAP_TRIES = 8  # a receiving broker's leaders most like the moving one tried for a swap


@dataclass(frozen=True)
class RequestLevel:
    """How far brokers' requests are from their fair shares (brokers that may lead)."""

    over_fair: float  # the largest broker's requests / its fair share (1.0: no requests)
    brokers_outside: int  # brokers outside the band
    total_per_sec: float  # the cluster's requests a second


@dataclass(frozen=True)
class FairRequests:
    """Fair request load per broker and the band around it."""

    fair: FloatArray
    low: FloatArray
    high: FloatArray

    @classmethod
    def of(cls, arrays: ClusterArrays, tolerance: float) -> FairRequests:
        cap = np.where(arrays.eligible, arrays.request_capacity, 0.0)
        share = cap / max(float(cap.sum()), 1e-12)
        fair: FloatArray = share * float(arrays.requests.sum())
        slack = np.maximum(fair * tolerance, arrays.request_capacity * IMMATERIAL_REQUESTS)
        low: FloatArray = np.maximum(fair - slack, 0.0)
        return cls(fair, low, fair + slack)

    def penalty(self, brokers: IntArray, load: FloatArray) -> FloatArray:
        """Distance outside the band, relative to each broker's fair share."""
        off = (np.maximum(load - self.high[brokers], 0.0)
               + np.maximum(self.low[brokers] - load, 0.0))
        res: FloatArray = off / np.maximum(self.fair[brokers], 1e-9)
        return res


def served(arrays: ClusterArrays, replicas: IntArray) -> FloatArray:
    """Requests a second each broker serves: those of the partitions it leads."""
    res: FloatArray = np.bincount(replicas[:, 0], weights=arrays.requests,
                                  minlength=arrays.brokers).astype(np.float64)
    return res


def request_level(arrays: ClusterArrays, replicas: IntArray, tolerance: float) -> RequestLevel:
    """The request balance of `replicas` at `tolerance`."""
    total = float(arrays.requests.sum())
    fair = FairRequests.of(arrays, tolerance)
    lead = np.flatnonzero(arrays.eligible & (fair.fair > 0))
    load = served(arrays, replicas)
    # a broker that may not lead (dead, drained) is outside while it serves any requests
    stranded = int((~arrays.eligible & (load > 0)).sum())
    if lead.size == 0 or total <= 0:
        return RequestLevel(1.0, stranded, total)
    outside = int((fair.penalty(lead, load[lead]) > 1e-9).sum()) + stranded
    return RequestLevel(float((load[lead] / fair.fair[lead]).max()), outside, total)


class _Requests:
    """Request loads of the solver's assignment, kept in step by this phase."""

    def __init__(self, state: SolverState, tolerance: float) -> None:
        self.state = state
        self.fair = FairRequests.of(state.arrays, tolerance)
        self.load = served(state.arrays, state.replicas)
        self.everyone = np.arange(state.arrays.brokers)
        self.total = max(float(state.arrays.requests.sum()), 1e-9)
        self._hosted: dict[int, IntArray] = {}
        # True: a step may not take either broker further outside its band (the first pass
        # of a session, so that a switch does not overshoot where a move would land inside)
        self.kept_only = False
        # with --leader-balance too: leader counts and leader bytes in, kept in step, so that
        # no step takes a broker further outside its fair share of leaders
        tolerance_leaders = state.goals.leader_balance
        self.leaders: FairLeaders | None = None
        if tolerance_leaders is not None:
            self.leaders = FairLeaders.of(state.arrays, state.replicas, tolerance_leaders)
            self.lead_count, self.lead_bytes = led(state.arrays, state.replicas)

    def penalties(self) -> FloatArray:
        return self.at(self.everyone, self.load)

    def at(self, brokers: IntArray, load: FloatArray) -> FloatArray:
        """Penalty of each broker at the given request loads; requests still on a broker that
        may not lead count in full (they must leave it)."""
        pen = self.fair.penalty(brokers, load)
        res: FloatArray = np.where(self.state.arrays.eligible[brokers], pen, load / self.total)
        return res

    def gains(self, old: IntArray, new: IntArray, amount: FloatArray) -> FloatArray:
        """Penalty removed by shifting each `amount` of requests a second from `old` to `new`."""
        old_before, new_before = self.at(old, self.load[old]), self.at(new, self.load[new])
        old_after = self.at(old, self.load[old] - amount)
        new_after = self.at(new, self.load[new] + amount)
        res: FloatArray = old_before + new_before - old_after - new_after
        if self.kept_only:
            kept = (old_after <= old_before + 1e-12) & (new_after <= new_before + 1e-12)
            res = np.where(kept, res, 0.0)
        return res

    def shift(self, p: int, old: int, new: int) -> None:
        """Keep the loads in step with p's lead going from `old` to `new`, which the caller
        makes in the state right after."""
        amount = float(self.state.arrays.requests[p])
        self.load[old] -= amount
        self.load[new] += amount
        if self.leaders is not None:
            size = float(self.state.arrays.net_in[p])
            self.lead_count[old] -= 1
            self.lead_count[new] += 1
            self.lead_bytes[old] -= size
            self.lead_bytes[new] += size
        self._hosted.clear()

    def leaders_kept(self, leads: list[tuple[int, int, int]]) -> bool:
        """With --leader-balance: the changes of lead (partition, old, new) together leave no
        broker further outside its fair share of leaders (counts and bytes in) than now."""
        if self.leaders is None:
            return True
        a = self.state.arrays
        count: dict[int, float] = {}
        size: dict[int, float] = {}
        for p, old, new in leads:
            for broker, sign in ((old, -1.0), (new, 1.0)):
                count[broker] = count.get(broker, 0.0) + sign
                size[broker] = size.get(broker, 0.0) + sign * float(a.net_in[p])
        ids = np.array(sorted(count), dtype=np.int64)
        now = self.leaders.penalty(ids, self.lead_count[ids], self.lead_bytes[ids])
        then = self.leaders.penalty(ids, self.lead_count[ids] + [count[b] for b in ids.tolist()],
                                    self.lead_bytes[ids] + [size[b] for b in ids.tolist()])
        return bool((then <= now + 1e-12).all())

    def hosted(self, broker: int) -> IntArray:
        """state.hosted_array, kept until the next change (a session asks it many times)."""
        found = self._hosted.get(broker)
        if found is None:
            found = self._hosted[broker] = self.state.hosted_array(broker)
        return found


def _move_keeps_spread(state: SolverState, p: int, source: int, dest: int) -> bool:
    """With --topic-spread: moving p's replica from `source` to `dest` crowds no topic more
    than now."""
    if state.spread is None:
        return True
    now = state.replicas[p, : int(state.arrays.rf[p])].tolist()
    return state.spread.excess_change(p, now, [dest if b == source else b for b in now]) <= 0


def _switches(req: _Requests, broker: int) -> list[tuple[float, int, int]]:
    """(gain, partition, column of the new leader) for leadership switches off `broker` (when
    it serves more than its fair share) or onto it (when less), best first."""
    state = req.state
    a = state.arrays
    shed = req.load[broker] > req.fair.fair[broker]
    hosted = req.hosted(broker)
    hosted = hosted[a.requests[hosted] > 0]
    found: list[tuple[float, int, int]] = []
    for col in range(1, state.replicas.shape[1]):
        if shed:
            parts = hosted[state.replicas[hosted, 0] == broker]
            other = state.replicas[parts, col]
        else:
            parts = hosted[state.replicas[hosted, col] == broker]
            other = state.replicas[parts, 0]
        valid = (other >= 0) & a.eligible[np.maximum(other, 0)]
        parts, other = parts[valid], other[valid]
        mine = np.full(parts.size, broker)
        old, new = (mine, other) if shed else (other, mine)
        gains = req.gains(old, new, a.requests[parts])
        keep = np.flatnonzero(gains > 1e-12)
        found.extend((float(gains[k]), int(parts[k]), col) for k in keep.tolist())
    found.sort(key=lambda s: (-s[0], s[1], s[2]))
    return found


def _switch(req: _Requests, p: int, col: int) -> bool:
    """Make the replica in `col` lead p when net out, topic spread and budgets allow."""
    state = req.state
    ids, rows = state.switch_rows(p, col)
    old, new = int(ids[0]), int(ids[1])
    if (not state.no_worse(ids, rows, strict=True).all() or not switch_keeps_spread(state, p, col)
            or not req.leaders_kept([(p, old, new)]) or not state.affordable(p, 0.0)):
        return False
    req.shift(p, old, new)
    state.set_leader(p, col)
    return True


def _pair(req: _Requests, p: int, col: int) -> bool:
    """Make the switch of p's lead to the replica in `col` together with a second switch that
    takes net out back off its new leader: one of the new leader's own leaderships, with few
    requests and much net out, goes to one of that partition's followers. For a new leader at
    the edge of its net-out band (a broker the balance filled to its band). The best second
    switch that keeps every broker's bands and the spread and lowers the request penalty."""
    state = req.state
    a = state.arrays
    old, new = int(state.replicas[p, 0]), int(state.replicas[p, col])
    out_p, req_p = float(a.leader_out[p]), float(a.requests[p])
    led = req.hosted(new)
    led = led[(state.replicas[led, 0] == new) & (led != p) & (a.leader_out[led] > 0)]
    if led.size == 0:
        return False
    # the most net out per request first: they give back net out at the least request cost
    led = led[np.argsort(-(a.leader_out[led] / (a.requests[led] + 1.0)), kind="stable")]
    led = led[:PAIR_TRIES]
    best: tuple[float, int, int] | None = None
    for col2 in range(1, state.replicas.shape[1]):
        third = state.replicas[led, col2]
        valid = (third >= 0) & a.eligible[np.maximum(third, 0)]
        for q, z in zip(led[valid].tolist(), third[valid].tolist(), strict=True):
            out_q, req_q = float(a.leader_out[q]), float(a.requests[q])
            touched = sorted({old, new, z})
            ids = np.array(touched)
            rows = state.loads[ids].copy()
            load = req.load[ids].copy()
            for broker, d_out, d_req in ((old, -out_p, -req_p), (new, out_p - out_q,
                                                                  req_p - req_q),
                                         (z, out_q, req_q)):
                k = touched.index(broker)
                rows[k, NET_OUT] += d_out
                load[k] += d_req
            now, then = req.at(ids, req.load[ids]), req.at(ids, load)
            gain = float(now.sum() - then.sum())
            if (gain <= 1e-12 or (best is not None and gain <= best[0])
                    or (req.kept_only and bool((then > now + 1e-12).any()))):
                continue
            if not state.no_worse(ids, rows, strict=True).all():
                continue
            if (switch_keeps_spread(state, q, col2)
                    and req.leaders_kept([(p, old, new), (q, new, z)])):
                best = (gain, q, col2)
    if (best is None or not switch_keeps_spread(state, p, col)
            or not state.pair_affordable(p, best[1])):
        return False
    _, q, col2 = best
    req.shift(p, old, new)
    state.set_leader(p, col)
    req.shift(q, new, int(state.replicas[q, col2]))
    state.set_leader(q, col2)
    return True


def _ends(req: _Requests, broker: int) -> tuple[list[int], list[int]]:
    """Brokers a leader replica may leave and brokers it may go to, for a step on `broker`:
    off it to the brokers with most room when it is over its fair share, else onto it from
    the brokers furthest above theirs."""
    a = req.state.arrays
    if req.load[broker] > req.fair.fair[broker]:
        room = req.fair.high - req.load
        return [broker], [int(b) for b in np.argsort(-room, kind="stable")
                          if a.receives[b] and b != broker and room[b] > 0][:DESTINATIONS]
    excess = req.load - req.fair.fair  # above its fair share: it may give some
    sources = [int(b) for b in np.argsort(-excess, kind="stable")
               if excess[b] > 0 and b != broker][:DESTINATIONS]
    return sources, [broker] if a.receives[broker] else []


def _heaviest_led(req: _Requests, broker: int) -> IntArray:
    """The partitions `broker` leads that have requests, the most first (at most SOURCES)."""
    state = req.state
    a = state.arrays
    led = req.hosted(broker)
    led = led[(state.replicas[led, 0] == broker) & (a.requests[led] > 0)]
    out: IntArray = led[np.argsort(-a.requests[led], kind="stable")][:SOURCES]
    return out


def _move_leader(req: _Requests, broker: int) -> bool:
    """Move the leader replica of one partition off an over broker (or onto an under one,
    from the broker furthest over) to a broker holding none of it: the move that removes the
    most request penalty per byte copied, keeping every balance band and budget."""
    state = req.state
    a = state.arrays
    sources, dests = _ends(req, broker)
    best: tuple[float, int, int] | None = None
    to = np.array(dests, dtype=np.int64)
    for source in sources:
        for p in _heaviest_led(req, source).tolist():
            if to.size == 0:
                break
            vec = state.replica_vector(p, True)
            gains = req.gains(np.full(to.size, source), to, np.full(to.size, a.requests[p]))
            for k in np.flatnonzero(gains > 1e-12).tolist():
                dest = int(to[k])
                if p in state.hosted[dest] or not state.rack_allows(p, source, dest):
                    continue
                cost = max(state.move_bytes_delta(p, source, dest), 0.0) + state.disk_unit * 1e-3
                score = float(gains[k]) / cost
                if best is not None and score <= best[0]:
                    continue
                rows = np.stack([state.loads[source] - vec, state.loads[dest] + vec])
                if (state.no_worse(np.array([source, dest]), rows, strict=True).all()
                        and _move_keeps_spread(state, p, source, dest)
                        and req.leaders_kept([(p, source, dest)])
                        and state.affordable(p, state.move_bytes_delta(p, source, dest))):
                    best = (score, p, dest)
    if best is None:
        return False
    _, p, dest = best
    req.shift(p, int(state.replicas[p, 0]), dest)
    state.move_replica(p, 0, dest)
    return True


def _swap_leaders(req: _Requests, broker: int) -> bool:
    """Where moving a leader alone would push a broker out of a byte band (brokers level in
    bytes, each at its band's edge): swap it for a leader of the receiving broker with fewer
    requests and the most similar bytes, each replica moving to the other's broker. Bytes stay
    about where they were; the requests' difference moves. The swap that removes the most
    request penalty per byte copied, keeping every band, the spread and the budgets."""
    state = req.state
    a = state.arrays
    sources, dests = _ends(req, broker)
    best: tuple[float, int, int, int, int] | None = None  # score, p, q, source, dest
    scale = np.maximum(state.loads.mean(axis=0), 1e-9)  # a broker's mean load per resource
    for source in sources:
        for p in _heaviest_led(req, source).tolist():
            vec_p = state.replica_vector(p, True)
            for dest in dests:
                if p in state.hosted[dest] or not state.rack_allows(p, source, dest):
                    continue
                theirs = req.hosted(dest)
                theirs = theirs[(state.replicas[theirs, 0] == dest)
                                & (a.requests[theirs] < a.requests[p])]
                if theirs.size == 0:
                    continue
                vecs = np.stack([a.size[theirs], a.net_in[theirs], a.leader_out[theirs]], axis=1)
                likest = np.argsort((np.abs(vecs - vec_p) / scale).sum(axis=1),
                                    kind="stable")[:SWAP_TRIES]
                theirs, vecs = theirs[likest], vecs[likest]
                shifted = a.requests[p] - a.requests[theirs]
                gains = req.gains(np.full(theirs.size, source), np.full(theirs.size, dest),
                                  shifted)
                rows_s = state.loads[source] - vec_p + vecs
                rows_d = state.loads[dest] + vec_p - vecs
                ok = (state.no_worse(np.full(theirs.size, source), rows_s, strict=True)
                      & state.no_worse(np.full(theirs.size, dest), rows_d, strict=True)
                      & (gains > 1e-12))
                for k in np.flatnonzero(ok).tolist():
                    q = int(theirs[k])
                    if q in state.hosted[source] or not state.rack_allows(q, dest, source):
                        continue
                    cost = (max(state.move_bytes_delta(p, source, dest), 0.0)
                            + max(state.move_bytes_delta(q, dest, source), 0.0)
                            + state.disk_unit * 1e-3)
                    score = float(gains[k]) / cost
                    if best is None or score > best[0]:
                        best = (score, p, q, source, dest)
    if best is None:
        return False
    _, p, q, source, dest = best
    if (not _move_keeps_spread(state, p, source, dest)
            or not _move_keeps_spread(state, q, dest, source)
            or not req.leaders_kept([(p, source, dest), (q, dest, source)])
            or not state.pair_affordable(p, q)
            or not state.affordable(p, state.move_bytes_delta(p, source, dest)
                                    + state.move_bytes_delta(q, dest, source))):
        return False
    req.shift(p, source, dest)
    req.shift(q, dest, source)
    state.move_replica(p, 0, dest)
    state.move_replica(q, 0, source)
    return True


def _session(req: _Requests, broker: int, deadline: float) -> int:
    applied = 0
    while applied < SESSION_STEPS and time.monotonic() < deadline:
        if float(req.penalties()[broker]) <= 1e-12:
            break
        # first only steps that leave both brokers no further outside, then any that gains
        if not any(_step(req, broker, kept_only) for kept_only in (True, False)):
            break
        applied += 1
    return applied


def _step(req: _Requests, broker: int, kept_only: bool) -> bool:
    """One switch, paired switch, leader move or swap for `broker`, the cheapest kind first."""
    req.kept_only = kept_only
    switches = _switches(req, broker)[:SWITCH_TRIES]
    return (any(_switch(req, p, col) for _, p, col in switches)
            or any(_pair(req, p, col) for _, p, col in switches)
            or _move_leader(req, broker) or _swap_leaders(req, broker))


def level_requests(state: SolverState, tolerance: float, deadline: float,
                   max_sessions: int = 100_000) -> int:
    """Leadership switches, then leader moves, towards every broker's fair share of requests
    until `deadline` (monotonic clock); returns how many were made."""
    if float(state.arrays.requests.sum()) <= 0:
        return 0
    req = _Requests(state, tolerance)

    def session(broker: int) -> int:
        return _session(req, broker, deadline) if time.monotonic() < deadline else 0

    return sessions_on_worst(req.penalties, session, max_sessions)


def request_spread(topology: Topology) -> tuple[float, float] | None:
    """Max and min over the fair share (by request capacity) of the requests the brokers that
    may lead serve; None when the snapshot has no request rates."""
    if not any(p.requests_per_sec for p in topology.partitions):
        return None
    arrays = to_arrays(topology, Goals(rack_aware=False))
    fair = FairRequests.of(arrays, 0.0).fair
    lead = arrays.eligible & (fair > 0)
    ratio = served(arrays, arrays.replicas)[lead] / fair[lead]
    return float(ratio.max()), float(ratio.min())
