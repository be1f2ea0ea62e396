"""The load model of DESIGN.md as pure functions over a Topology.

Every replica stores S_p and receives IN_p; the preferred leader also sends OUT_p + IN_p*(RF-1).
Utilization is load / capacity; balance compares it to the capacity-weighted average.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

from topology.model import RESOURCES, Broker, Load, Partition, Resource, Topology

if TYPE_CHECKING:  # numpy is not imported at run time: the CLI starts without it
    import numpy as np
    import numpy.typing as npt

Rate = TypeVar("Rate", float, "npt.NDArray[np.float64]")


def leader_out(bytes_out: Rate, bytes_in: Rate,
               replication_factor: int | npt.NDArray[np.int64]) -> Rate:
    """Bytes/s a leader sends: what consumers read plus one copy of what is produced to each
    follower. The one definition, for one partition or an array of them."""
    return bytes_out + bytes_in * (replication_factor - 1)  # type: ignore[return-value]


def leader_net_out(partition: Partition) -> float:
    """Bytes/s the preferred leader of `partition` sends."""
    return leader_out(partition.bytes_out_per_sec, partition.bytes_in_per_sec,
                      partition.replication_factor)


def replica_load(partition: Partition, is_leader: bool) -> Load:
    """Load one replica of `partition` puts on its broker."""
    return Load(
        float(partition.size_bytes),
        partition.bytes_in_per_sec,
        leader_net_out(partition) if is_leader else 0.0,
    )


def broker_loads(topology: Topology) -> dict[int, Load]:
    """Load per broker id (brokers without replicas get a zero load)."""
    disk = {b.id: 0.0 for b in topology.brokers}
    net_in = dict(disk)
    net_out = dict(disk)
    for p in topology.partitions:
        size = float(p.size_bytes)
        for r in p.replicas:
            disk[r] += size
            net_in[r] += p.bytes_in_per_sec
        net_out[p.replicas[0]] += leader_net_out(p)
    return {i: Load(disk[i], net_in[i], net_out[i]) for i in disk}


ROUNDING_SLACK = 1e-9  # a relative deviation this far past a limit is float noise, not a breach


def within_tolerance(deviation: float, tolerance: float) -> bool:
    """The one test of "balanced" that the validator, the planner's verdict, the plan file and
    `auto` share: a relative deviation (from the average, or from a target) within the
    tolerance, up to float noise."""
    return deviation <= tolerance + ROUNDING_SLACK


@dataclass(frozen=True, slots=True)
class ResourceBalance:
    """Balance of one resource: capacity-weighted average and per-broker utilization."""

    resource: Resource
    average: float
    utilization: dict[int, float]

    @property
    def max_over_avg(self) -> float:
        return _ratio(max(self.utilization.values(), default=0.0), self.average)

    @property
    def min_over_avg(self) -> float:
        return _ratio(min(self.utilization.values(), default=0.0), self.average)

    def within(self, tolerance: float) -> bool:
        """True when every broker lies within avg*(1 +/- tolerance) (see within_tolerance)."""
        if self.average <= 0:
            return all(u <= 0 for u in self.utilization.values())
        return all(within_tolerance(abs(u / self.average - 1), tolerance)
                   for u in self.utilization.values())


def _ratio(value: float, average: float) -> float:
    return value / average if average > 0 else 1.0


def balance(topology: Topology, brokers: tuple[Broker, ...] | None = None) -> dict[
    Resource, ResourceBalance
]:
    """Per-resource balance over `brokers` (default: every alive broker of the topology)."""
    members = brokers if brokers is not None else tuple(b for b in topology.brokers if b.alive)
    loads = broker_loads(topology)
    out: dict[Resource, ResourceBalance] = {}
    for res in RESOURCES:
        total_load = sum(loads[b.id].of(res) for b in members)
        total_cap = sum(b.capacity.of(res) for b in members)
        avg = total_load / total_cap if total_cap > 0 else 0.0
        util = {b.id: loads[b.id].of(res) / b.capacity.of(res) for b in members}
        out[res] = ResourceBalance(res, avg, util)
    return out


def bytes_moved(before: Partition, after_replicas: tuple[int, ...]) -> int:
    """Bytes copied to move `before` to `after_replicas`: S_p per replica on a new broker."""
    added = len(set(after_replicas) - set(before.replicas))
    return before.size_bytes * added
