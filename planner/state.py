"""The solver's working state: a copy of the assignment with loads, bands and budget kept in
step as replicas move or leaders change. Inputs are never edited.

Penalty of a broker = sum over resources of weight * distance outside its band / (avg * cap):
0 when balanced, in units of utilization relative to the average.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import numpy.typing as npt

from planner.arrays import (
    DISK,
    NET_IN,
    NET_OUT,
    NO_RACK,
    ClusterArrays,
    FloatArray,
    IntArray,
    broker_loads,
)
from planner.balance import Targets, aim, averages
from planner.goals import Budget, Goals
from planner.spread import TopicSpread

INELIGIBLE_WEIGHT = 20.0  # removed / offline brokers drain before anything else
BAND_MARGIN = 1e-4  # aim a hair inside the tolerance so float rounding never breaks it
RETRY_MARGIN = 0.004  # aim further inside when lumpy partitions left a broker just outside
MOVE_COST = 1e-4  # one move costs as much as 0.01% of an average broker's disk
GREEDY_MOVE_COST = 0.03
"""What the greedy charges a move on top of its bytes, as a share of an average broker's disk.

The greedy ranks moves by penalty removed per cost. With a tiny charge every move that does
not overshoot ranks alike, and many small partitions with a high traffic-to-size ratio win:
1,000 moves where 250 carry the same bytes. Charged 3%, a large partition that fits the
excess outranks several small ones; on the benchmark clusters this cut data moves 2-4x for
the same bytes (within 1% of the bound). The exact models keep MOVE_COST: their objective
adds the charge to the bytes, so a large one would buy fewer moves with more bytes."""


class SolverState:
    """Mutable assignment with incremental loads; owned by one solver run."""

    def __init__(self, arrays: ClusterArrays, goals: Goals, budget: Budget,
                 targets: Targets) -> None:
        self.arrays = arrays
        self.goals = goals
        self.targets = targets
        self.replicas: IntArray = arrays.replicas.copy()
        self.loads: FloatArray = broker_loads(arrays, self.replicas)
        self._start_disk: FloatArray = self.loads[:, DISK].copy()
        self.lower, self.upper = aim(arrays, targets, goals.tolerance, goals.max_utilization,
                                     BAND_MARGIN)
        avg = averages(arrays, self.loads)
        norm = np.maximum(avg[None, :] * arrays.capacity, 1e-12)
        self.inv_norm: FloatArray = 1.0 / norm
        self.broker_weight: FloatArray = np.where(arrays.eligible, 1.0, INELIGIBLE_WEIGHT)
        self.resource_weight: FloatArray = np.array([1.0, 1.0, 1.0])
        eligible_disk = float(arrays.capacity[arrays.eligible, DISK].sum())
        self.disk_unit = max(float(avg[DISK]) * eligible_disk / arrays.eligible.sum(), 1.0)
        # A budget above every replica's bytes cannot bind: it is no budget (and would
        # overflow the solver's 64-bit integers).
        most = float((arrays.size * arrays.rf).sum())
        self.max_bytes = (float("inf") if budget.max_bytes is None or budget.max_bytes >= most
                          else float(budget.max_bytes))
        self.max_moves = arrays.partitions if budget.max_moves is None else budget.max_moves
        self.move_cost = MOVE_COST
        self.greedy_move_cost = GREEDY_MOVE_COST
        self.bytes_moved = 0.0
        self.changed: set[int] = set()
        self.budget_hit: set[str] = set()
        self.hosted: list[set[int]] = [set() for _ in range(arrays.brokers)]
        for col in range(self.replicas.shape[1]):
            column = self.replicas[:, col]
            for p, b in zip(np.flatnonzero(column >= 0).tolist(),
                            column[column >= 0].tolist(), strict=True):
                self.hosted[b].add(p)
        everyone = np.flatnonzero(arrays.eligible)
        self.allowance: FloatArray = self.outside(everyone, self.loads[everyone]).max(axis=0)
        self._orig_sets = [frozenset(row[row >= 0].tolist()) for row in arrays.replicas]
        self.spread = TopicSpread.of(arrays, self.replicas, goals)

    def price_moves(self, bytes_needed: float) -> None:
        """Under a move budget, charge each move the bytes every allowed move must carry on
        average to move `bytes_needed`, so the stages spend scarce moves on large partitions
        instead of many small ones."""
        if self.max_moves < self.arrays.partitions and self.max_moves > 0:
            per_move = bytes_needed / self.max_moves / self.disk_unit
            self.move_cost = max(MOVE_COST, per_move)
            self.greedy_move_cost = max(GREEDY_MOVE_COST, per_move)

    def set_margin(self, margin: float) -> None:
        """Aim `margin` (fraction of the average) inside the tolerance band from now on."""
        self.lower, self.upper = aim(self.arrays, self.targets, self.goals.tolerance,
                                     self.goals.max_utilization, margin)

    def hosted_array(self, broker: int) -> IntArray:
        """Partitions with a replica on `broker`, sorted."""
        found = self.hosted[broker]
        out: IntArray = np.sort(np.fromiter(found, dtype=np.int64, count=len(found)))
        return out

    # -- penalties -------------------------------------------------------------------------
    def penalty_rows(self, brokers: IntArray, loads: FloatArray) -> FloatArray:
        """Penalty of each broker in `brokers` at the given load rows [n, 3]."""
        over = np.maximum(loads - self.upper[brokers], 0.0)
        under = np.maximum(self.lower[brokers] - loads, 0.0)
        dist = (over + under) * self.inv_norm[brokers] * self.resource_weight
        out: FloatArray = dist.sum(axis=1) * self.broker_weight[brokers]
        return out

    def penalty(self, broker: int, delta: FloatArray | None = None) -> float:
        """Penalty of one broker, optionally after adding `delta` to its load."""
        row = self.loads[broker] if delta is None else self.loads[broker] + delta
        over = np.maximum(row - self.upper[broker], 0.0)
        under = np.maximum(self.lower[broker] - row, 0.0)
        dist = (over + under) * self.inv_norm[broker] * self.resource_weight
        return float(dist.sum()) * float(self.broker_weight[broker])

    def outside(self, brokers: IntArray, loads: FloatArray) -> FloatArray:
        """Distance outside the band per broker and resource [n, 3], relative to the average."""
        over = np.maximum(loads - self.upper[brokers], 0.0)
        under = np.maximum(self.lower[brokers] - loads, 0.0)
        dist: FloatArray = (over + under) * self.inv_norm[brokers]
        return dist

    def no_worse(self, brokers: IntArray, loads: FloatArray, *,
                 strict: bool = False) -> npt.NDArray[np.bool_]:
        """Per row: no guarded resource of that broker ends further outside its band than now
        or than the worst broker was at the start, so balance of a resource never gets worse
        than it was (a move may not trade a balanced resource for another). `strict`: no
        resource at all ends further outside than now, for steps that buy something other
        than balance (topic spread) and may not pay for it with balance."""
        now = self.outside(brokers, self.loads[brokers])
        after = self.outside(brokers, loads)
        if strict:
            return np.asarray((after <= now + 1e-12).all(axis=1), dtype=np.bool_)
        guarded = self.resource_weight >= 1.0
        limit = np.maximum(now, self.allowance[None, :]) + 1e-12
        ok = np.asarray(((after <= limit) | ~guarded).all(axis=1), dtype=np.bool_)
        return ok

    def penalty_at(self, broker: int, rows: FloatArray) -> FloatArray:
        """Penalty of one broker at each candidate load row [n, 3] (broadcast, no gathers)."""
        over = np.maximum(rows - self.upper[broker], 0.0)
        under = np.maximum(self.lower[broker] - rows, 0.0)
        scale = self.inv_norm[broker] * self.resource_weight * self.broker_weight[broker]
        out: FloatArray = (over + under) @ scale
        return out

    def no_worse_at(self, broker: int, rows: FloatArray) -> npt.NDArray[np.bool_]:
        """`no_worse` for one broker at each candidate load row [n, 3]."""
        row = self.loads[broker]
        now = (np.maximum(row - self.upper[broker], 0.0)
               + np.maximum(self.lower[broker] - row, 0.0)) * self.inv_norm[broker]
        limit = np.maximum(now, self.allowance) + 1e-12
        limit = np.where(self.resource_weight >= 1.0, limit, np.inf)
        after = (np.maximum(rows - self.upper[broker], 0.0)
                 + np.maximum(self.lower[broker] - rows, 0.0)) * self.inv_norm[broker]
        ok = np.asarray((after <= limit).all(axis=1), dtype=np.bool_)
        return ok

    def all_penalties(self) -> FloatArray:
        return self.penalty_rows(np.arange(self.arrays.brokers), self.loads)

    def over_under(self, broker: int) -> tuple[float, float]:
        """Weighted distance above the upper and below the lower band of one broker."""
        row = self.loads[broker]
        scale = self.inv_norm[broker] * self.resource_weight
        over = float((np.maximum(row - self.upper[broker], 0.0) * scale).sum())
        under = float((np.maximum(self.lower[broker] - row, 0.0) * scale).sum())
        return over, under

    def worst_over(self) -> float:
        """The largest weighted distance of any broker above its upper band."""
        return max(self.over_under(b)[0] for b in range(self.arrays.brokers))

    # -- moves -----------------------------------------------------------------------------
    def replica_vector(self, p: int, leader: bool) -> FloatArray:
        a = self.arrays
        return np.array([a.size[p], a.net_in[p], a.leader_out[p] if leader else 0.0])

    def move_bytes_delta(self, p: int, source: int, dest: int) -> float:
        orig = self._orig_sets[p]
        size = float(self.arrays.size[p])
        return (0.0 if dest in orig else size) - (0.0 if source in orig else size)

    def affordable(self, p: int, extra_bytes: float) -> bool:
        """True when the move keeps within the byte and move budgets."""
        if self.bytes_moved + extra_bytes > self.max_bytes:
            self.budget_hit.add("bytes")
            return False
        if p not in self.changed and len(self.changed) >= self.max_moves:
            self.budget_hit.add("moves")
            return False
        return True

    def pair_affordable(self, p: int, q: int) -> bool:
        """Changes to both p and q within the move budget (bytes are checked apart)."""
        added = (p not in self.changed) + (q not in self.changed)
        if len(self.changed) + added > self.max_moves:
            self.budget_hit.add("moves")
            return False
        return True

    def move_replica(self, p: int, col: int, dest: int) -> None:
        """Put the replica in column `col` of partition p on `dest` (keeps its position)."""
        source = int(self.replicas[p, col])
        if self.spread is not None:
            row = self.replicas[p, : int(self.arrays.rf[p])].tolist()
            self.spread.shift(p, row, [dest if b == source else b for b in row])
        self.bytes_moved += self.move_bytes_delta(p, source, dest)
        vec = self.replica_vector(p, col == 0)
        self.loads[source] -= vec
        self.loads[dest] += vec
        self.replicas[p, col] = dest
        self.hosted[source].discard(p)
        self.hosted[dest].add(p)
        self._mark(p)

    def set_leader(self, p: int, col: int) -> None:
        """Make the replica in column `col` the preferred leader (swap with column 0)."""
        old, new = int(self.replicas[p, 0]), int(self.replicas[p, col])
        if self.spread is not None:  # the same brokers; only the leader changes
            self.spread.shift(p, [old, new], [new, old])
        out = float(self.arrays.leader_out[p])
        self.loads[old, NET_OUT] -= out
        self.loads[new, NET_OUT] += out
        self.replicas[p, 0], self.replicas[p, col] = new, old
        self._mark(p)

    def switch_rows(self, p: int, col: int) -> tuple[IntArray, FloatArray]:
        """The current and the new leader of p, and their load rows if the replica in column
        `col` took the lead (set_leader), for judging the switch before making it."""
        ids = np.array([int(self.replicas[p, 0]), int(self.replicas[p, col])])
        out = float(self.arrays.leader_out[p])
        rows = self.loads[ids].copy()
        rows[:, NET_OUT] += np.array([-out, out])
        return ids, rows

    def assign(self, p: int, row: list[int]) -> None:
        """Give partition p the replica list `row` (leader first), keeping loads in step."""
        a = self.arrays
        old = self.replicas[p, : int(a.rf[p])].tolist()
        if old == row:
            return
        if self.spread is not None:
            self.spread.shift(p, old, row)
        orig = self._orig_sets[p]
        size = float(a.size[p])
        self.bytes_moved += size * (sum(b not in orig for b in row)
                                    - sum(b not in orig for b in old))
        for b in old:
            self.loads[b, DISK] -= size
            self.loads[b, NET_IN] -= a.net_in[p]
            self.hosted[b].discard(p)
        for b in row:
            self.loads[b, DISK] += size
            self.loads[b, NET_IN] += a.net_in[p]
            self.hosted[b].add(p)
        self.loads[old[0], NET_OUT] -= a.leader_out[p]
        self.loads[row[0], NET_OUT] += a.leader_out[p]
        self.replicas[p, : len(row)] = row
        self._mark(p)

    def disk_gained(self) -> FloatArray:
        """Disk bytes each broker holds now beyond what it held before the plan."""
        out: FloatArray = self.loads[:, DISK] - self._start_disk
        return out

    def original_allowed(self, p: int) -> bool:
        """True when p's original replicas are all on eligible brokers and keep the rack rule,
        so the plan may put it back where it was."""
        a = self.arrays
        row = self.original_row(p)
        if not all(a.eligible[b] for b in row):
            return False
        return a.rack_count == 0 or int(np.bincount(a.rack[row]).max()) <= int(a.rack_limit[p])

    def cost_of_return(self, p: int) -> float:
        """Penalty added over the brokers p touches if it went back to its original replicas
        (negative when that helps); applied and undone."""
        now = self.replicas[p, : int(self.arrays.rf[p])].tolist()
        orig = self.original_row(p)
        touched = np.array(sorted(set(now) | set(orig)), dtype=np.int64)
        before = float(self.penalty_rows(touched, self.loads[touched]).sum())
        self.assign(p, orig)
        after = float(self.penalty_rows(touched, self.loads[touched]).sum())
        self.assign(p, now)
        return after - before

    def original_row(self, p: int) -> list[int]:
        return [int(b) for b in self.arrays.replicas[p, : int(self.arrays.rf[p])]]

    def _mark(self, p: int) -> None:
        if np.array_equal(self.replicas[p], self.arrays.replicas[p]):
            self.changed.discard(p)
        else:
            self.changed.add(p)

    def rack_allows(self, p: int, source: int, dest: int) -> bool:
        """True when moving p's replica from `source` to `dest` keeps the rack rule."""
        a = self.arrays
        if a.rack_count == 0:
            return True
        row = self.replicas[p]
        racks = a.rack_of(row)
        same = int(((racks == a.rack[dest]) & (row != source) & (racks != NO_RACK)).sum())
        return same < int(a.rack_limit[p])


def sessions_on_worst(penalties: Callable[[], FloatArray], session: Callable[[int], int],
                      max_sessions: int = 1_000_000) -> int:
    """Run `session` on the broker with the highest penalty until no penalty is left or no
    session improves: a broker whose session applied nothing is passed over until another
    session applies something. Returns the number of changes the sessions applied."""
    stuck: set[int] = set()
    total = 0
    for _ in range(max_sessions):
        pen = penalties()
        if stuck:
            pen[list(stuck)] = 0.0
        worst = int(np.argmax(pen))
        if pen[worst] <= 1e-12:
            break
        applied = session(worst)
        if applied:
            total += applied
            stuck.clear()
        else:
            stuck.add(worst)
    return total
