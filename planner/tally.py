"""Per-broker tallies (load, replicas, leaders) computed once and updated by changed partitions.

The load model is DESIGN.md's (topology/load.py); this module only makes it cheap to evaluate
the same cluster before and after a plan: one vectorized pass over every replica, then an
update per changed partition, instead of a full recount for each view.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from topology.load import ResourceBalance, leader_out
from topology.model import RESOURCES, Broker, Load, Partition, Resource, Topology

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]
Row = tuple[float, float, float, int, int]
"""disk bytes, net in, net out (bytes/s), replicas, preferred leaderships."""


@dataclass(frozen=True)
class FlatReplicas:
    """Every replica of a topology as flat arrays, partitions in the topology's order."""

    broker_ids: IntArray  # sorted broker ids; replicas refer to positions in it
    flat: IntArray  # broker position of each replica
    owner: IntArray  # partition index of each replica
    first: IntArray  # index in `flat` of each partition's preferred leader
    rf: IntArray
    size: FloatArray
    rate_in: FloatArray
    rate_out: FloatArray


def flatten(topology: Topology) -> FlatReplicas:
    """The arrays of `topology` (every replica is on a known broker: Topology checks it)."""
    parts = topology.partitions
    n = len(parts)
    rf = np.fromiter((len(p.replicas) for p in parts), dtype=np.int64, count=n)
    ids = np.array(topology.broker_ids, dtype=np.int64)
    raw = np.fromiter(itertools.chain.from_iterable(p.replicas for p in parts),
                      dtype=np.int64, count=int(rf.sum()))
    return FlatReplicas(
        ids, np.searchsorted(ids, raw).astype(np.int64),
        np.repeat(np.arange(n, dtype=np.int64), rf), np.cumsum(rf) - rf, rf,
        np.fromiter((p.size_bytes for p in parts), dtype=np.float64, count=n),
        np.fromiter((p.bytes_in_per_sec for p in parts), dtype=np.float64, count=n),
        np.fromiter((p.bytes_out_per_sec for p in parts), dtype=np.float64, count=n))


@dataclass(frozen=True)
class Tally:
    """Per broker id: load in each resource, number of replicas and of preferred leaderships."""

    rows: Mapping[int, Row]

    def load(self, broker_id: int) -> Load:
        row = self.rows[broker_id]
        return Load(row[0], row[1], row[2])

    def replicas(self, broker_id: int) -> int:
        return self.rows[broker_id][3]

    def leaders(self, broker_id: int) -> int:
        return self.rows[broker_id][4]

    def loads(self) -> dict[int, Load]:
        return {broker_id: self.load(broker_id) for broker_id in self.rows}


def tally_flat(arrays: FlatReplicas) -> Tally:
    """Count every replica once (np.bincount per resource)."""
    b = arrays.broker_ids.size
    flat, owner = arrays.flat, arrays.owner
    leader = flat[arrays.first]
    disk = np.bincount(flat, weights=arrays.size[owner], minlength=b)
    rate_in = np.bincount(flat, weights=arrays.rate_in[owner], minlength=b)
    rate_out = np.bincount(leader, weights=leader_out(arrays.rate_out, arrays.rate_in, arrays.rf),
                           minlength=b)
    replicas = np.bincount(flat, minlength=b)
    leaders = np.bincount(leader, minlength=b)
    return Tally({int(broker_id): (float(disk[i]), float(rate_in[i]), float(rate_out[i]),
                                   int(replicas[i]), int(leaders[i]))
                  for i, broker_id in enumerate(arrays.broker_ids)})


def tally(topology: Topology) -> Tally:
    """Count every partition of `topology` once."""
    return tally_flat(flatten(topology))


def _add(rows: dict[int, list[float]], p: Partition, replicas: Sequence[int], sign: int) -> None:
    size = sign * float(p.size_bytes)
    rate_in = sign * p.bytes_in_per_sec
    for r in replicas:
        row = rows[r]
        row[0] += size
        row[1] += rate_in
        row[3] += sign
    leader = rows[replicas[0]]
    leader[2] += sign * leader_out(p.bytes_out_per_sec, p.bytes_in_per_sec, len(replicas))
    leader[4] += sign


def retally(base: Tally, changes: Iterable[tuple[Partition, Sequence[int]]]) -> Tally:
    """`base` after moving each partition from its current replicas to the new ones.

    Sums that cancel to slightly below zero by rounding are clamped to zero.
    """
    rows = {broker_id: list(row) for broker_id, row in base.rows.items()}
    for p, replicas in changes:
        _add(rows, p, p.replicas, -1)
        _add(rows, p, replicas, 1)
    out: dict[int, Row] = {}
    for broker_id, row in rows.items():
        disk, rate_in, rate_out = (max(0.0, v) for v in row[:3])
        out[broker_id] = (disk, rate_in, rate_out, int(row[3]), int(row[4]))
    return Tally(out)


def load_rows(counts: Tally, broker_ids: IntArray) -> FloatArray:
    """Load [B, 3] (disk, net in, net out) of the brokers in `broker_ids` order."""
    rows: FloatArray = np.array([counts.rows[int(i)][:3] for i in broker_ids.tolist()],
                                dtype=np.float64).reshape(-1, 3)
    return rows


def balance_of(counts: Tally, members: Sequence[Broker]) -> dict[Resource, ResourceBalance]:
    """Capacity-weighted balance of each resource over `members` (topology.load.balance)."""
    out: dict[Resource, ResourceBalance] = {}
    for index, res in enumerate(RESOURCES):
        total_load = sum(counts.rows[b.id][index] for b in members)
        total_cap = sum(b.capacity.of(res) for b in members)
        average = total_load / total_cap if total_cap > 0 else 0.0
        utilization = {b.id: counts.rows[b.id][index] / b.capacity.of(res) for b in members}
        out[res] = ResourceBalance(res, average, utilization)
    return out
