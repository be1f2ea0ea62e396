"""Partition weights applied to a topology (kafka_rebalance.files.weights reads them from the Spark
job's output).

The weights replace a snapshot's instantaneous rates with measured averages, and can project
sizes `horizon_days` ahead by each partition's growth.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace

from kafka_rebalance.core.errors import InputError
from topology.model import Partition, TopicPartition, Topology
from topology.units import size_text

WEIGHT_COLUMNS = ("topic", "partition", "bytes_in_per_sec", "bytes_out_per_sec", "size_bytes",
                  "size_growth_bytes_per_day")
OPTIONAL_WEIGHT_COLUMNS = ("requests_per_sec",)  # weights written before it lack it
_NUMERIC = WEIGHT_COLUMNS[2:]
MAX_HORIZON_DAYS = 3650


@dataclass(frozen=True, slots=True)
class PartitionWeight:
    """Measured rates, size and growth of one partition; None where nothing was measured."""

    bytes_in_per_sec: float | None
    bytes_out_per_sec: float | None
    size_bytes: float | None
    size_growth_bytes_per_day: float | None
    requests_per_sec: float | None = None

    def projected_size(self, snapshot_size: int, horizon_days: float) -> int:
        """Size after `horizon_days` of growth from the snapshot's size, measured when the
        plan is made (the weights' size is the history's last sample, older; it stands in
        only for a snapshot that records none)."""
        base = snapshot_size if snapshot_size > 0 or self.size_bytes is None else self.size_bytes
        growth = self.size_growth_bytes_per_day or 0.0
        return max(0, round(base + growth * horizon_days))


def _far_apart(weighted: float, measured: int) -> bool:
    """Sizes under half or over twice each other, by more than 1 MB (small segments churn)."""
    return abs(weighted - measured) > 1e6 and not 0.5 <= weighted / measured <= 2.0


def apply_weights(topology: Topology, weights: Mapping[TopicPartition, PartitionWeight],
                  horizon_days: float = 0.0) -> tuple[Topology, tuple[str, ...]]:
    """The topology with weighted rates and (projected) sizes, and notes on what did not match.

    Partitions without a weight, and null (unmeasured) fields of a weight, keep the snapshot's
    values; weights of partitions the topology lacks (deleted topics) are ignored.
    """
    if not 0 <= horizon_days < math.inf:
        raise InputError(f"--horizon must not be negative or infinite, got {horizon_days}")
    if horizon_days > MAX_HORIZON_DAYS:
        raise InputError(f"--horizon {horizon_days:g} is more than {MAX_HORIZON_DAYS} days (ten "
                         "years) ahead: no growth measured today says where a cluster will be "
                         "then; give a horizon in days (e.g. 30)")
    known = {p.key for p in topology.partitions}
    if weights and known and known.isdisjoint(weights):
        raise InputError(f"none of the {len(weights)} weight row(s) names a partition of this "
                         "cluster: the weights are of another cluster (or its topics were "
                         "renamed); compute them from this cluster's history")
    parts: list[Partition] = []
    unweighted = 0
    grown = stored = 0  # bytes on disk (every replica): from growth, and in all
    drifted: list[tuple[Partition, float]] = []  # the weights' size far from the snapshot's
    for p in topology.partitions:
        w = weights.get(p.key)
        if w is None:
            unweighted += 1
            parts.append(p)
            stored += p.size_bytes * len(p.replicas)
            continue
        if w.size_bytes is not None and p.size_bytes > 0 and _far_apart(w.size_bytes,
                                                                         p.size_bytes):
            drifted.append((p, w.size_bytes))
        projected = w.projected_size(p.size_bytes, horizon_days)
        grown += (projected - w.projected_size(p.size_bytes, 0.0)) * len(p.replicas)
        stored += projected * len(p.replicas)
        parts.append(replace(
            p, size_bytes=projected,
            bytes_in_per_sec=p.bytes_in_per_sec if w.bytes_in_per_sec is None
            else w.bytes_in_per_sec,
            bytes_out_per_sec=p.bytes_out_per_sec if w.bytes_out_per_sec is None
            else w.bytes_out_per_sec,
            requests_per_sec=p.requests_per_sec if w.requests_per_sec is None
            else w.requests_per_sec))
    unknown = sum(1 for key in weights if key not in known)
    notes = []
    if drifted:
        p, then = max(drifted, key=lambda d: abs(d[1] - d[0].size_bytes))
        notes.append(f"{len(drifted)} partition(s) had a size in the weights under half or "
                     f"over twice the snapshot's (e.g. {p.name}: {size_text(then)} in the "
                     f"weights, {size_text(p.size_bytes)} now): the plan counts the "
                     "snapshot's; weights from an old history carry old rates too (compute "
                     "them again)")
    if unweighted:
        notes.append(f"{unweighted} partition(s) have no weight; their snapshot values are used")
    if unknown:
        notes.append(f"{unknown} weight row(s) name partitions the cluster does not have")
    if grown > stored / 2:  # one sentence naming the cause when a plan then finds disks full
        notes.append(f"{grown / stored:.0%} of the disk projected --horizon {horizon_days:g} "
                     f"days ahead is growth from the weights (+{size_text(grown)}): if the "
                     "plan finds the brokers too full, that growth is why; weights from a "
                     "history of minutes extrapolate a burst (recompute them from days of "
                     "history, or plan without --horizon)")
    return topology.with_partitions(parts), tuple(notes)
