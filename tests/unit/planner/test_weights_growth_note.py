"""`plan --weights ... --horizon N`: when growth from the weights makes up most of the projected
disk, a note names it (the "average utilization 4533% ... add brokers" refusal's real cause)."""

from __future__ import annotations

from planner.weights import PartitionWeight, apply_weights
from topology.model import Broker, Capacity, Partition, TopicPartition, Topology

GB = 10**9


def _cluster() -> Topology:
    brokers = tuple(Broker(i, None, Capacity(100 * GB, 10**8, 10**8)) for i in (1, 2))
    return Topology(brokers, (Partition("orders", 0, (1, 2), 1 * GB),
                              Partition("orders", 1, (2, 1), 1 * GB)))


def _weights(growth_per_day: float | None) -> dict[TopicPartition, PartitionWeight]:
    return {TopicPartition("orders", p): PartitionWeight(10.0, 10.0, 1.0 * GB, growth_per_day)
            for p in (0, 1)}


def test_a_burst_extrapolated_over_the_horizon_is_named() -> None:
    # The README's case: 6 GB a day per partition, 30 days ahead, from a 12-minute history.
    weighted, notes = apply_weights(_cluster(), _weights(6 * GB), horizon_days=30)
    assert [p.size_bytes for p in weighted.partitions] == [181 * GB, 181 * GB]
    growth = [n for n in notes if "growth from the weights" in n]
    assert growth == ["99% of the disk projected --horizon 30 days ahead is growth from the "
                      "weights (+720 GB): if the plan finds the brokers too full, that growth "
                      "is why; weights from a history of minutes extrapolate a burst (recompute "
                      "them from days of history, or plan without --horizon)"]


def test_modest_growth_or_no_horizon_says_nothing() -> None:
    _, modest = apply_weights(_cluster(), _weights(0.01 * GB), horizon_days=30)
    _, now = apply_weights(_cluster(), _weights(6 * GB), horizon_days=0)
    _, unmeasured = apply_weights(_cluster(), _weights(None), horizon_days=30)
    assert not any("growth from the weights" in n for n in (*modest, *now, *unmeasured))
