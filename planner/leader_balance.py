"""Leader balance: each broker leads about its fair share of partitions and of produce bytes
(`plan --leader-balance TOL`), reached by reordering replicas alone (no byte copied).

A broker's fair share of leaders is what it would lead if every partition's leadership were
split evenly over its replicas on brokers that may lead: the sum over the partitions it holds
of 1 / (their replicas on such brokers). Its fair share of leader bytes in (what producers
send to the leader) is the same sum weighted by each partition's bytes in. Both are reachable
by choosing leaders among the replicas each broker already holds, so this goal never moves
data: it is reached after the placement is settled, by leadership switches. A broker is in
band when its leader count lies within [floor(fair x (1 - TOL)), ceil(fair x (1 + TOL))] and
its leader bytes in within fair x (1 +/- TOL), or within 1% of its network-in capacity of its
fair share when that is wider: a few kB/s of produce traffic (a lease topic's heartbeats, a
quiet topic) is not an imbalance, and one partition's leadership cannot be split anyway.

The phase switches leaders on the broker furthest outside (relative to its fair share): a
leader it has too many of goes to the follower whose broker gains most; one it lacks comes
from a partition it follows. No switch leaves either broker further outside its net-out band
(the network goal comes first), and budgets hold; a switch on a partition that already moves
is preferred (it adds no move).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from planner.arrays import NET_IN, NET_OUT, ClusterArrays, FloatArray, IntArray
from planner.leaders import moved_bonus, switch_columns
from planner.state import SolverState, sessions_on_worst

SESSION_SWITCHES = 64
MAX_REJECTS = 40
# Leader bytes in within this share of a broker's network-in capacity of its fair share are in
# band, whatever the tolerance: immaterial traffic is no imbalance.
IMMATERIAL_BYTES_IN = 0.01


@dataclass(frozen=True)
class LeaderLevel:
    """How far leaders are from the brokers' fair shares (brokers that may lead only)."""

    count_over_fair: float  # the largest leader count / fair count
    bytes_in_over_fair: float  # the largest leader bytes in / fair bytes in (1.0: no traffic)
    brokers_outside: int  # brokers outside the band on leader count or leader bytes in


@dataclass(frozen=True)
class FairLeaders:
    """Fair leader count and leader bytes in per broker, and the bands around them."""

    count: FloatArray
    bytes_in: FloatArray
    count_low: FloatArray
    count_high: FloatArray
    bytes_low: FloatArray
    bytes_high: FloatArray

    @classmethod
    def of(cls, arrays: ClusterArrays, replicas: IntArray, tolerance: float) -> FairLeaders:
        may_lead = (replicas >= 0) & arrays.eligible[np.maximum(replicas, 0)]
        holders = np.maximum(may_lead.sum(axis=1), 1)
        share = np.where(may_lead, 1.0 / holders[:, None], 0.0)
        brokers = np.where(may_lead, replicas, 0)
        count = _floats(np.bincount(brokers.ravel(), weights=share.ravel(),
                                    minlength=arrays.brokers))
        weighted = share * arrays.net_in[:, None]
        bytes_in = _floats(np.bincount(brokers.ravel(), weights=weighted.ravel(),
                                       minlength=arrays.brokers))
        slack = np.maximum(bytes_in * tolerance, arrays.capacity[:, NET_IN] * IMMATERIAL_BYTES_IN)
        return cls(count, bytes_in, _floats(np.floor(count * (1 - tolerance) + 1e-9)),
                   _floats(np.ceil(count * (1 + tolerance) - 1e-9)),
                   _floats(np.maximum(bytes_in - slack, 0.0)), _floats(bytes_in + slack))

    def penalty(self, brokers: IntArray, count: FloatArray, bytes_in: FloatArray) -> FloatArray:
        """Distance outside both bands, relative to each broker's fair share."""
        off_count = (np.maximum(count - self.count_high[brokers], 0.0)
                     + np.maximum(self.count_low[brokers] - count, 0.0))
        off_bytes = (np.maximum(bytes_in - self.bytes_high[brokers], 0.0)
                     + np.maximum(self.bytes_low[brokers] - bytes_in, 0.0))
        res: FloatArray = (off_count / np.maximum(self.count[brokers], 1.0)
                           + off_bytes / np.maximum(self.bytes_in[brokers], 1e-9))
        return res


def led(arrays: ClusterArrays, replicas: IntArray) -> tuple[FloatArray, FloatArray]:
    """Leader count and leader bytes in per broker."""
    count = _floats(np.bincount(replicas[:, 0], minlength=arrays.brokers))
    bytes_in = _floats(np.bincount(replicas[:, 0], weights=arrays.net_in,
                                   minlength=arrays.brokers))
    return count, bytes_in


def _floats(values: object) -> FloatArray:
    return np.asarray(values, dtype=np.float64)


def leader_level(arrays: ClusterArrays, replicas: IntArray, tolerance: float) -> LeaderLevel:
    """The leader balance of `replicas` against fair shares of its own placement."""
    fair = FairLeaders.of(arrays, replicas, tolerance)
    count, bytes_in = led(arrays, replicas)
    lead = np.flatnonzero(arrays.eligible & (fair.count > 0))
    if lead.size == 0:
        return LeaderLevel(1.0, 1.0, 0)
    outside = fair.penalty(lead, count[lead], bytes_in[lead]) > 1e-9
    ratio = count[lead] / fair.count[lead]
    has_bytes = fair.bytes_in[lead] > 0
    byte_ratio = (float((bytes_in[lead][has_bytes] / fair.bytes_in[lead][has_bytes]).max())
                  if has_bytes.any() else 1.0)
    return LeaderLevel(float(ratio.max()), byte_ratio, int(outside.sum()))


class _Leaders:
    """Leader counts and bytes of the solver's assignment, kept in step by this phase."""

    def __init__(self, state: SolverState, tolerance: float) -> None:
        self.state = state
        self.fair = FairLeaders.of(state.arrays, state.replicas, tolerance)
        self.count, self.bytes_in = led(state.arrays, state.replicas)
        self.everyone = np.arange(state.arrays.brokers)

    def penalties(self) -> FloatArray:
        pen = self.fair.penalty(self.everyone, self.count, self.bytes_in)
        res: FloatArray = np.where(self.state.arrays.eligible, pen, 0.0)
        return res

    def gains(self, parts: IntArray, old: IntArray, new: IntArray) -> FloatArray:
        """Penalty removed by moving each partition's leadership from `old` to `new`."""
        size = self.state.arrays.net_in[parts]
        before = (self.fair.penalty(old, self.count[old], self.bytes_in[old])
                  + self.fair.penalty(new, self.count[new], self.bytes_in[new]))
        after = (self.fair.penalty(old, self.count[old] - 1, self.bytes_in[old] - size)
                 + self.fair.penalty(new, self.count[new] + 1, self.bytes_in[new] + size))
        res: FloatArray = before - after
        return res

    def switch(self, p: int, col: int) -> None:
        state = self.state
        old, new = int(state.replicas[p, 0]), int(state.replicas[p, col])
        size = float(state.arrays.net_in[p])
        self.count[old] -= 1
        self.count[new] += 1
        self.bytes_in[old] -= size
        self.bytes_in[new] += size
        state.set_leader(p, col)


def _candidates(leaders: _Leaders, broker: int) -> list[tuple[float, int, int]]:
    """(gain, partition, column of the new leader) for switches off or onto `broker`."""
    state = leaders.state
    a = state.arrays
    fair = leaders.fair
    shed = bool(leaders.count[broker] > fair.count_high[broker]
                or leaders.bytes_in[broker] > fair.bytes_high[broker])
    found: list[tuple[float, int, int]] = []
    for col, parts in switch_columns(state, broker, shed):
        new = state.replicas[parts, col]
        valid = (new >= 0) & a.eligible[np.maximum(new, 0)]
        sel, new = parts[valid], new[valid]
        gains = leaders.gains(sel, state.replicas[sel, 0], new)
        score = gains * moved_bonus(state, sel)
        keep = np.flatnonzero(gains > 1e-12)
        found.extend((float(score[k]), int(sel[k]), col) for k in keep.tolist())
    found.sort(key=lambda s: (-s[0], s[1], s[2]))
    return found


def _net_out_kept(state: SolverState, p: int, col: int) -> bool:
    """The switch leaves neither broker further outside its net-out band than now."""
    ids, rows = state.switch_rows(p, col)
    return bool(state.no_worse(ids, rows, strict=True).all())


def _session(leaders: _Leaders, broker: int) -> int:
    state = leaders.state
    applied = rejects = 0
    for _, p, col in _candidates(leaders, broker):
        if applied >= SESSION_SWITCHES or rejects >= MAX_REJECTS:
            break
        old, new = state.replicas[p, 0:1], state.replicas[p, col:col + 1]
        gain = float(leaders.gains(np.array([p]), old, new)[0])
        if gain <= 1e-12 or not switch_keeps_spread(state, p, col) or not state.affordable(p, 0.0):
            rejects += 1
            continue
        if _net_out_kept(state, p, col):
            leaders.switch(p, col)
            applied += 1
        elif _relay(leaders, p, col, broker):
            applied += 2
        else:
            rejects += 1
            continue
        rejects = 0
    return applied


def switch_keeps_spread(state: SolverState, p: int, col: int) -> bool:
    """With --topic-spread: the switch crowds no topic's leaders more than now."""
    if state.spread is None:
        return True
    row = state.replicas[p, : int(state.arrays.rf[p])].tolist()
    switched = list(row)
    switched[0], switched[col] = row[col], row[0]
    return state.spread.excess_change(p, row, switched) <= 0


def _relay(leaders: _Leaders, p: int, col: int, broker: int) -> bool:
    """Make the switch of p (to or from `broker`) together with a second one through its other
    end, the relay, so that the relay's leader count stays and its net out moves back: when
    `broker` sheds p, the relay passes one of its own leaderships on to a third broker; when
    `broker` takes p, the relay takes one back from a third broker. For a relay at the edge of
    its net-out band. The best pair that keeps every net out and lowers the leader penalty."""
    state = leaders.state
    a = state.arrays
    old, new = int(state.replicas[p, 0]), int(state.replicas[p, col])
    sign = 1.0 if old == broker else -1.0  # +1: broker sheds p, the relay gives one on
    relay = new if sign > 0 else old
    if not a.eligible[relay]:  # a broker being drained takes no leadership back
        return False
    out_p, in_p = float(a.leader_out[p]), float(a.net_in[p])
    own = state.loads[broker].copy()
    own[NET_OUT] -= sign * out_p
    if not state.no_worse(np.array([broker]), own[None, :], strict=True)[0]:
        return False
    hosted = state.hosted_array(relay)
    hosted = hosted[hosted != p]
    leads = state.replicas[hosted, 0] == relay
    mine = hosted[leads] if sign > 0 else hosted[~leads]
    best: tuple[float, int, int] | None = None
    for col2 in range(1, state.replicas.shape[1]):
        sel = mine if sign > 0 else mine[state.replicas[mine, col2] == relay]
        third = state.replicas[sel, col2] if sign > 0 else state.replicas[sel, 0]
        valid = ((third >= 0) & a.eligible[np.maximum(third, 0)] & (third != old)
                 & (third != new))
        sel, third = sel[valid], third[valid]
        if sel.size == 0:
            continue
        out_q, in_q = a.leader_out[sel], a.net_in[sel]
        relay_rows = np.repeat(state.loads[relay][None, :], sel.size, axis=0)
        relay_rows[:, NET_OUT] += sign * (out_p - out_q)
        third_rows = state.loads[third].copy()
        third_rows[:, NET_OUT] += sign * out_q
        ok = (state.no_worse(np.full(sel.size, relay), relay_rows, strict=True)
              & state.no_worse(third, third_rows, strict=True))
        gain = _pair_gain(leaders, broker, relay, third, sign, in_p, in_q)
        good = np.flatnonzero(ok & (gain > 1e-12))
        for k in good[np.argsort(-gain[good], kind="stable")].tolist():
            if best is not None and float(gain[k]) <= best[0]:
                break
            if switch_keeps_spread(state, int(sel[k]), col2):
                best = (float(gain[k]), int(sel[k]), col2)
                break
    if best is None or not state.pair_affordable(p, best[1]):
        return False
    leaders.switch(p, col)
    leaders.switch(best[1], best[2])
    return True


def _pair_gain(leaders: _Leaders, broker: int, relay: int, third: IntArray, sign: float,
               in_p: float, in_q: FloatArray) -> FloatArray:
    """Leader penalty removed by a relayed pair (see _relay) for each candidate third broker."""
    fair, count, bytes_in = leaders.fair, leaders.count, leaders.bytes_in
    one = np.array([broker])
    at_relay = np.array([relay])
    before = (fair.penalty(one, count[one], bytes_in[one])
              + fair.penalty(at_relay, count[at_relay], bytes_in[at_relay])
              + fair.penalty(third, count[third], bytes_in[third]))
    after = (fair.penalty(one, count[one] - sign, bytes_in[one] - sign * in_p)
             + fair.penalty(at_relay, count[at_relay],
                            bytes_in[at_relay] + sign * (in_p - in_q))
             + fair.penalty(third, count[third] + sign, bytes_in[third] + sign * in_q))
    res: FloatArray = before - after
    return res


def level_leaders(state: SolverState, tolerance: float, deadline: float,
                  max_sessions: int = 100_000) -> int:
    """Leadership switches towards every broker's fair share until `deadline` (monotonic
    clock); returns how many were made."""
    leaders = _Leaders(state, tolerance)

    def session(broker: int) -> int:
        return _session(leaders, broker) if time.monotonic() < deadline else 0

    return sessions_on_worst(leaders.penalties, session, max_sessions)
