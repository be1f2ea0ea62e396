"""Topic spread: no broker holds much more than its fair share of one topic's replicas or
leaders (`plan --topic-spread TOL`).

A hot topic whose partitions crowd a few brokers loads them with that topic's bursts, its
consumers' fetches and its request threads even when the brokers' bytes are level. A broker's
fair share of a topic is the topic's replicas times the broker's share of the cluster's
capacity (the mean of its disk, net in and net out shares among the brokers that may hold
replicas). Where the rack rule forces a rack to hold a number of a topic's replicas (RF 3 over
three racks: one of every partition in each), the rack's brokers share that number instead,
if it is more. A broker may hold up to ceil(fair share x (1 + TOL)); leaders likewise over the
topic's partitions. What a broker holds above its cap is the topic's crowding.

The phase runs after the balance search. Each crowded (topic, broker) gives a replica of that
topic to a broker under its cap: the move that leaves every touched broker no further outside
its balance band, cheapest in balance and bytes; where no single move keeps balance, a swap
with a similar partition of another topic. Crowded leaders change places with a follower of
the same partition (no bytes). Counts are kept in step by the solver state, so the later
pruning never undoes what spreading fixed.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from planner.arrays import ClusterArrays, FloatArray, IntArray
from planner.goals import Goals


@dataclass(frozen=True)
class Crowding:
    """Replicas and leaders held above the caps, summed over brokers, and the topics that
    crowd at least one broker."""

    replicas: int
    leaders: int
    topics: int

    @property
    def none(self) -> bool:
        return self.replicas == 0 and self.leaders == 0


def capacity_shares(arrays: ClusterArrays) -> FloatArray:
    """Each broker's share of the capacity of the brokers that may hold replicas (0 for the
    others): the mean of its disk, net in and net out shares."""
    cap = np.where(arrays.eligible[:, None], arrays.capacity, 0.0)
    totals = np.maximum(cap.sum(axis=0), 1e-12)
    share: FloatArray = (cap / totals).mean(axis=1)
    return share


def spread_caps(arrays: ClusterArrays, tolerance: float) -> tuple[IntArray, IntArray]:
    """Most replicas [T, B] and leaders [T, B] of each topic a broker may hold."""
    topics = len(arrays.topic_names)
    share = capacity_shares(arrays)
    counts = np.bincount(arrays.topic, weights=arrays.rf, minlength=topics)
    fair = counts[:, None] * share[None, :]
    if arrays.rack_count > 1:
        # replicas a rack must hold: what the other racks cannot, each at its rack limit
        # (the same number in every rack that has a broker to hold them)
        forced = np.maximum(arrays.rf - arrays.rack_limit * (arrays.rack_count - 1), 0)
        rack_forced = np.bincount(arrays.topic, weights=forced, minlength=topics)
        rack_share = np.bincount(arrays.rack, weights=share, minlength=int(arrays.rack.max()) + 1)
        within = share / np.maximum(rack_share[arrays.rack], 1e-12)
        fair = np.maximum(fair, rack_forced[:, None] * within[None, :])
    partitions = np.bincount(arrays.topic, minlength=topics)
    leader_fair = partitions[:, None] * share[None, :]
    return _cap(fair, tolerance, arrays), _cap(leader_fair, tolerance, arrays)


def _cap(fair: FloatArray, tolerance: float, arrays: ClusterArrays) -> IntArray:
    cap = np.ceil(fair * (1.0 + tolerance) - 1e-9).astype(np.int64)
    out: IntArray = np.where(arrays.eligible[None, :], np.maximum(cap, 1), 0)
    return out


def topic_counts(arrays: ClusterArrays, replicas: IntArray) -> tuple[IntArray, IntArray]:
    """Replicas [T, B] and leaders [T, B] of each topic per broker."""
    topics, brokers = len(arrays.topic_names), arrays.brokers
    held = replicas >= 0
    rows = np.broadcast_to(arrays.topic[:, None], replicas.shape)[held]
    flat = rows * brokers + replicas[held]
    counts = np.bincount(flat, minlength=topics * brokers).reshape(topics, brokers)
    leads = np.bincount(arrays.topic * brokers + replicas[:, 0],
                        minlength=topics * brokers).reshape(topics, brokers)
    return counts.astype(np.int64), leads.astype(np.int64)


def crowding(arrays: ClusterArrays, replicas: IntArray, tolerance: float) -> Crowding:
    """How much `replicas` crowds brokers beyond the caps of `tolerance` (eligible brokers
    only: a broker being drained is the drain's business)."""
    caps, leader_caps = spread_caps(arrays, tolerance)
    counts, leads = topic_counts(arrays, replicas)
    over = np.maximum(counts - caps, 0)[:, arrays.eligible]
    over_leads = np.maximum(leads - leader_caps, 0)[:, arrays.eligible]
    crowded = (over.sum(axis=1) + over_leads.sum(axis=1)) > 0
    return Crowding(int(over.sum()), int(over_leads.sum()), int(crowded.sum()))


class TopicSpread:
    """Per-topic counts of the solver's assignment, kept in step with it, and the caps."""

    def __init__(self, arrays: ClusterArrays, replicas: IntArray, tolerance: float) -> None:
        self.arrays = arrays
        self.tolerance = tolerance
        self.caps, self.leader_caps = spread_caps(arrays, tolerance)
        self.counts, self.leads = topic_counts(arrays, replicas)
        order = np.argsort(arrays.topic, kind="stable")
        bounds = np.cumsum(np.bincount(arrays.topic, minlength=len(arrays.topic_names)))
        self.members: list[IntArray] = np.split(order, bounds[:-1])  # partitions per topic

    @classmethod
    def of(cls, arrays: ClusterArrays, replicas: IntArray,
           goals: Goals) -> TopicSpread | None:
        if goals.topic_spread is None:
            return None
        return cls(arrays, replicas, goals.topic_spread)

    def shift(self, p: int, old: list[int], new: list[int]) -> None:
        """Partition p's replica list changes from `old` to `new` (leader first)."""
        t = int(self.arrays.topic[p])
        for b in old:
            self.counts[t, b] -= 1
        for b in new:
            self.counts[t, b] += 1
        self.leads[t, old[0]] -= 1
        self.leads[t, new[0]] += 1

    def excess_change(self, p: int, old: list[int], new: list[int]) -> int:
        """How much the crowding of p's topic grows if p went from `old` to `new`."""
        t = int(self.arrays.topic[p])
        touched = sorted(set(old) | set(new))
        before = self._excess(t, touched)
        self.shift(p, old, new)
        after = self._excess(t, touched)
        self.shift(p, new, old)
        return after - before

    def _excess(self, t: int, brokers: list[int]) -> int:
        eligible = self.arrays.eligible[brokers]
        over = np.maximum(self.counts[t, brokers] - self.caps[t, brokers], 0)
        over_leads = np.maximum(self.leads[t, brokers] - self.leader_caps[t, brokers], 0)
        return int(((over + over_leads) * eligible).sum())

    def crowded(self) -> list[tuple[int, int]]:
        """(topic, broker) pairs above the replica cap, most crowded first."""
        over = (self.counts - self.caps) * self.arrays.eligible[None, :]
        found = np.argwhere(over > 0)
        order = np.lexsort((found[:, 1], found[:, 0], -over[found[:, 0], found[:, 1]]))
        return [(int(t), int(b)) for t, b in found[order]]

    def crowded_leaders(self) -> list[tuple[int, int]]:
        over = (self.leads - self.leader_caps) * self.arrays.eligible[None, :]
        return [(int(t), int(b)) for t, b in np.argwhere(over > 0)]

