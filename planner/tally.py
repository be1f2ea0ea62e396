"""Per-broker tallies (load, replicas, leaders) computed once and updated by changed partitions.

The load model is DESIGN.md's (topology/load.py); this module only makes it cheap to evaluate
the same cluster before and after a plan: one pass over every partition, then an update per
changed partition, instead of a full recount for each view.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from topology.load import ResourceBalance
from topology.model import RESOURCES, Broker, Load, Partition, Resource, Topology

_DISK, _IN, _OUT, _REPLICAS, _LEADERS = range(5)


@dataclass(frozen=True)
class Tally:
    """Per broker id: load in each resource, number of replicas and of preferred leaderships."""

    rows: Mapping[int, tuple[float, float, float, int, int]]

    def load(self, broker_id: int) -> Load:
        row = self.rows[broker_id]
        return Load(row[0], row[1], row[2])

    def replicas(self, broker_id: int) -> int:
        return self.rows[broker_id][3]

    def leaders(self, broker_id: int) -> int:
        return self.rows[broker_id][4]

    def loads(self) -> dict[int, Load]:
        return {broker_id: self.load(broker_id) for broker_id in self.rows}


def _add(rows: dict[int, list[float]], p: Partition, replicas: Sequence[int], sign: int) -> None:
    size = sign * float(p.size_bytes)
    rate_in = sign * p.bytes_in_per_sec
    for r in replicas:
        row = rows[r]
        row[_DISK] += size
        row[_IN] += rate_in
        row[_REPLICAS] += sign
    leader = rows[replicas[0]]
    leader[_OUT] += sign * p.bytes_out_per_sec + rate_in * (len(replicas) - 1)
    leader[_LEADERS] += sign


def _freeze(rows: Mapping[int, list[float]]) -> Tally:
    """Rows as a Tally; sums that cancel to within rounding become exact zeros."""
    out = {}
    for broker_id, row in rows.items():
        disk, rate_in, rate_out = (0.0 if abs(v) < 1e-6 else v for v in row[:3])
        out[broker_id] = (disk, rate_in, rate_out, int(row[_REPLICAS]), int(row[_LEADERS]))
    return Tally(out)


def tally(topology: Topology) -> Tally:
    """Count every partition of `topology` once."""
    rows: dict[int, list[float]] = {b.id: [0.0, 0.0, 0.0, 0, 0] for b in topology.brokers}
    for p in topology.partitions:
        _add(rows, p, p.replicas, 1)
    return _freeze(rows)


def retally(base: Tally, changes: Iterable[tuple[Partition, Sequence[int]]]) -> Tally:
    """`base` after moving each partition from its current replicas to the new ones."""
    rows = {broker_id: list(row) for broker_id, row in base.rows.items()}
    for p, replicas in changes:
        _add(rows, p, p.replicas, -1)
        _add(rows, p, replicas, 1)
    return _freeze(rows)


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
