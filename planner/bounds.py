"""Lower bounds on the bytes any plan must move to bring every broker into the band that counts
as balanced (planner.balance.band: within the tolerance of its target). Not the narrower band
the planner aims at where targets are forced: a plan the validator calls balanced may stop
short of that, and a bound above its bytes would make the gap negative.

Every replica that leaves a broker is copied to a broker that did not hold it, so the bytes
moved equal the bytes leaving brokers and equal the bytes arriving at them. A broker above its
band must shed its disk excess and enough replicas to shed its net-in excess; the cheapest way
to shed net in is the replicas with the most net in per byte first (the fractional knapsack,
the exact optimum of its LP relaxation). A broker below its band must receive its disk deficit
and enough replicas to make up its net-in deficit, at best the partitions with the most net in
per byte in the whole cluster. The bound is the larger of the two sums, and is at least the
disk-only bound. Net out moves by leadership, which copies nothing, so it adds no bytes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from planner.arrays import DISK, NET_IN, ClusterArrays, FloatArray, broker_loads, to_arrays
from planner.balance import Targets, achievable_targets, band
from planner.goals import Goals
from topology.model import Topology


@dataclass(frozen=True)
class Bounds:
    """The disk-only bound and the bound for disk and net in together (the better one)."""

    disk: int
    combined: int


def _whole(value: float) -> int:
    return max(0, math.ceil(value - 1e-9 * max(1.0, value)))  # float noise is not a byte


def _cheapest_bytes(net_in: FloatArray, size: FloatArray, needed: float) -> float:
    """Fewest bytes whose net in adds up to `needed`, fractions allowed, most net in per byte
    first (inputs already in that order); all the bytes when even that is not enough."""
    if needed <= 0:
        return 0.0
    cum_in = np.cumsum(net_in)
    cum_size = np.cumsum(size)
    k = int(np.searchsorted(cum_in, needed))
    if k >= cum_in.size:
        return float(cum_size[-1]) if cum_size.size else 0.0
    before_in = float(cum_in[k - 1]) if k else 0.0
    before_size = float(cum_size[k - 1]) if k else 0.0
    share = (needed - before_in) / net_in[k] if net_in[k] > 0 else 0.0
    return before_size + share * float(size[k])


def _ratio_order(arrays: ClusterArrays, parts: np.ndarray) -> np.ndarray:
    ratio = arrays.net_in[parts] / np.maximum(arrays.size[parts], 1.0)
    order: np.ndarray = parts[np.argsort(-ratio, kind="stable")]
    return order


def lower_bounds(arrays: ClusterArrays, goals: Goals, targets: Targets) -> Bounds:
    """Both bounds (see the module docstring) for the current placement."""
    loads = broker_loads(arrays, arrays.replicas)
    lower, upper = band(arrays, targets, goals.tolerance, goals.max_utilization)
    excess = np.maximum(loads - upper, 0.0)
    deficit = np.maximum(lower - loads, 0.0)
    deficit[~arrays.eligible] = 0.0
    disk = max(math.fsum(excess[:, DISK].tolist()), math.fsum(deficit[:, DISK].tolist()))
    leaving = excess[:, DISK].copy()
    for b in np.flatnonzero(excess[:, NET_IN] > 0).tolist():
        hosted = _ratio_order(arrays, np.flatnonzero((arrays.replicas == b).any(axis=1)))
        leaving[b] = max(leaving[b], _cheapest_bytes(arrays.net_in[hosted], arrays.size[hosted],
                                                     float(excess[b, NET_IN])))
    arriving = deficit[:, DISK].copy()
    short = np.flatnonzero(deficit[:, NET_IN] > 0)
    if short.size:
        best = _ratio_order(arrays, np.arange(arrays.partitions))
        for b in short.tolist():
            arriving[b] = max(arriving[b], _cheapest_bytes(
                arrays.net_in[best], arrays.size[best], float(deficit[b, NET_IN])))
    combined = max(math.fsum(leaving.tolist()), math.fsum(arriving.tolist()), disk)
    return Bounds(_whole(disk), _whole(combined))


def disk_lower_bound(topology: Topology, goals: Goals) -> int:
    """The disk-only bound for `topology` at `goals` (see the module docstring)."""
    arrays = to_arrays(topology, goals)
    return lower_bounds(arrays, goals, achievable_targets(arrays, goals)).disk
