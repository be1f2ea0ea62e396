"""The one place that turns a Topology into numpy arrays for the solver, and arrays into Moves.

Brokers are indexed 0..B-1 in id order, partitions 0..P-1 in the topology's order; replica
lists are a [P, max RF] array padded with -1, preferred leader in column 0.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from kafka_rebalance.core.errors import InputError
from planner.goals import Goals
from planner.result import Move
from topology.load import leader_out
from topology.model import Topology

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]

DISK, NET_IN, NET_OUT = 0, 1, 2
NO_RACK = -2  # rack index of the -1 padding, never equal to a real rack


@dataclass(frozen=True)
class ClusterArrays:
    """Read-only arrays of one cluster; the solver copies `replicas` before changing it.

    rack: rack index per broker (brokers without a rack each get their own index);
    rack_limit: per partition, the most replicas one rack may hold (RF when racks are off);
    eligible: alive and not removed (may hold replicas after the plan);
    receives: eligible and not cordoned (may take a replica it does not hold).
    """

    broker_ids: IntArray
    rack: IntArray
    capacity: FloatArray  # [B, 3]
    eligible: BoolArray
    replicas: IntArray  # [P, K], -1 padded
    rf: IntArray
    size: FloatArray
    net_in: FloatArray
    leader_out: FloatArray  # bytes/s sent by the leader: out + in * (RF - 1)
    rack_limit: IntArray
    rack_count: int
    rack_names: tuple[str, ...] = ()
    cordoned: BoolArray | None = None  # per broker: no new replica (KIP-1066); None: none is
    topic: IntArray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    topic_names: tuple[str, ...] = ()  # topic index per partition -> name (sorted)
    # produce and fetch requests a second per partition (served by its leader), and each
    # broker's request capacity (equal when the capacities give none)
    requests: FloatArray = field(default_factory=lambda: np.zeros(0))
    request_capacity: FloatArray = field(default_factory=lambda: np.zeros(0))

    @property
    def receives(self) -> BoolArray:
        """Brokers a new replica may go to: eligible and not cordoned."""
        return self.eligible if self.cordoned is None else self.eligible & ~self.cordoned

    @property
    def brokers(self) -> int:
        return int(self.broker_ids.size)

    @property
    def partitions(self) -> int:
        return int(self.size.size)

    def rack_of(self, replicas: IntArray) -> IntArray:
        """Rack index of each entry of a replica array (NO_RACK for the -1 padding)."""
        ext = np.append(self.rack, NO_RACK)
        return ext[replicas]


def _rack_indexes(topology: Topology, goals: Goals) -> tuple[IntArray, int, tuple[str, ...]]:
    """Rack index per broker and the number of racks among eligible brokers (0: no rule).

    Rack awareness is off when the goals say so or no broker has a rack; a broker without a
    rack among racked brokers counts as a rack named 'None' (as the validator does).
    """
    if not goals.rack_aware or all(b.rack is None for b in topology.brokers):
        return np.arange(len(topology.brokers), dtype=np.int64), 0, ()
    names = sorted({str(b.rack) for b in topology.brokers})
    index = {name: i for i, name in enumerate(names)}
    rack = np.array([index[str(b.rack)] for b in topology.brokers], dtype=np.int64)
    eligible = {str(b.rack) for b in topology.brokers
                if b.alive and b.id not in goals.remove_brokers}
    return rack, max(1, len(eligible)), tuple(names)


def to_arrays(topology: Topology, goals: Goals) -> ClusterArrays:
    """Arrays of `topology`; checks that added/removed broker ids exist."""
    ids = np.array(topology.broker_ids, dtype=np.int64)
    known = set(topology.broker_ids)
    for label, chosen in (("--add-broker", goals.add_brokers),
                          ("--remove-broker", goals.remove_brokers)):
        unknown = sorted(chosen - known)
        if unknown:
            raise InputError(f"{label} {unknown[0]}: no such broker in the topology "
                             f"(brokers are {sorted(known)})")
    position = {int(b): i for i, b in enumerate(topology.broker_ids)}
    parts = topology.partitions
    rf = np.fromiter((len(p.replicas) for p in parts), dtype=np.int64, count=len(parts))
    width = int(rf.max()) if rf.size else 1
    replicas = np.full((len(parts), width), -1, dtype=np.int64)
    for i, p in enumerate(parts):
        replicas[i, : len(p.replicas)] = [position[r] for r in p.replicas]
    size = np.fromiter((p.size_bytes for p in parts), dtype=np.float64, count=len(parts))
    net_in = np.fromiter((p.bytes_in_per_sec for p in parts), dtype=np.float64,
                         count=len(parts))
    net_out = np.fromiter((p.bytes_out_per_sec for p in parts), dtype=np.float64,
                          count=len(parts))
    rack, rack_count, rack_names = _rack_indexes(topology, goals)
    limit = rf.copy() if rack_count == 0 else -(-rf // rack_count)
    capacity = np.array([[b.capacity.disk_bytes, b.capacity.net_in_bytes_per_sec,
                          b.capacity.net_out_bytes_per_sec] for b in topology.brokers])
    eligible = np.array([b.alive and b.id not in goals.remove_brokers
                         for b in topology.brokers])
    cordoned = (np.array([b.id in goals.cordoned_brokers for b in topology.brokers])
                if goals.cordoned_brokers & known else None)
    topic_names = sorted({p.topic for p in parts})
    topic_index = {name: i for i, name in enumerate(topic_names)}
    topic = np.fromiter((topic_index[p.topic] for p in parts), dtype=np.int64, count=len(parts))
    requests = np.fromiter((p.requests_per_sec for p in parts), dtype=np.float64,
                           count=len(parts))
    return ClusterArrays(ids, rack, capacity, eligible, replicas, rf, size, net_in,
                         leader_out(net_out, net_in, rf), limit.astype(np.int64), rack_count,
                         rack_names, cordoned, topic, tuple(topic_names), requests,
                         _request_capacity(topology))


def _request_capacity(topology: Topology) -> FloatArray:
    """Each broker's request capacity: as given, the mean of those given for a broker without
    one, all equal (1.0) when none is given."""
    given = [b.capacity.requests_per_sec for b in topology.brokers]
    known = [c for c in given if c is not None]
    fill = sum(known) / len(known) if known else 1.0
    return np.array([fill if c is None else c for c in given], dtype=np.float64)


def broker_loads(arrays: ClusterArrays, replicas: IntArray) -> FloatArray:
    """Load [B, 3] (disk, net in, net out) of a replica assignment."""
    b = arrays.brokers
    flat = replicas.ravel()
    mask = flat >= 0
    width = replicas.shape[1]
    disk = np.bincount(flat[mask], weights=np.repeat(arrays.size, width)[mask], minlength=b)
    net_in = np.bincount(flat[mask], weights=np.repeat(arrays.net_in, width)[mask],
                         minlength=b)
    net_out = np.bincount(replicas[:, 0], weights=arrays.leader_out, minlength=b)
    return np.stack([disk, net_in, net_out], axis=1)


def rack_ok(arrays: ClusterArrays, replicas: IntArray) -> BoolArray:
    """Per partition: no rack holds more than its limit of the replicas."""
    if arrays.rack_count == 0:
        return np.ones(arrays.partitions, dtype=np.bool_)
    racks = arrays.rack_of(replicas)
    worst = np.zeros(arrays.partitions, dtype=np.int64)
    for col in range(replicas.shape[1]):
        same = (racks == racks[:, col : col + 1]) & (racks[:, col : col + 1] != NO_RACK)
        worst = np.maximum(worst, same.sum(axis=1))
    ok: BoolArray = worst <= arrays.rack_limit
    return ok


def to_moves(topology: Topology, arrays: ClusterArrays, replicas: IntArray) -> tuple[Move, ...]:
    """One Move per partition whose replica list changed (leader first), in topology order."""
    changed = np.flatnonzero((replicas != arrays.replicas).any(axis=1))
    ids = arrays.broker_ids
    moves = []
    for i in changed.tolist():
        p = topology.partitions[i]
        target = tuple(int(ids[r]) for r in replicas[i, : arrays.rf[i]])
        moves.append(Move(p.topic, p.partition, p.replicas, target, p.size_bytes))
    return tuple(moves)


def replicas_changed_bytes(arrays: ClusterArrays, replicas: IntArray) -> int:
    """Bytes moved by an assignment: size times replicas on brokers that did not hold one."""
    width = replicas.shape[1]
    new = np.zeros(arrays.partitions, dtype=np.int64)
    for col in range(width):
        col_b = replicas[:, col : col + 1]
        held = (arrays.replicas == col_b).any(axis=1)
        new += ((col_b[:, 0] >= 0) & ~held).astype(np.int64)
    return int(math.fsum((arrays.size * new).tolist()))
