"""The synthetic cluster generator: deterministic, rack-aware, with empty new brokers."""

from __future__ import annotations

import math
from collections import Counter

import pytest

from kafka_rebalance.core.errors import InputError
from topology.load import broker_loads
from topology.synthetic import generate_cluster


def test_same_seed_same_cluster_and_other_seed_differs() -> None:
    a = generate_cluster(brokers=6, new_brokers=2, partitions=300, seed=3)
    b = generate_cluster(brokers=6, new_brokers=2, partitions=300, seed=3)
    c = generate_cluster(brokers=6, new_brokers=2, partitions=300, seed=4)
    assert a == b
    assert a.fingerprint() != c.fingerprint()


def test_counts_rack_rule_and_new_brokers_empty() -> None:
    topo = generate_cluster(brokers=12, new_brokers=3, racks=3, partitions=2000, rf=3)
    assert len(topo.brokers) == 15
    assert len(topo.partitions) == 2000
    rack = {b.id: b.rack for b in topo.brokers}
    for p in topo.partitions:
        assert len(p.replicas) == 3
        assert max(Counter(rack[r] for r in p.replicas).values()) == 1
    loads = broker_loads(topo)
    assert all(loads[i].disk_bytes == 0 for i in (13, 14, 15))
    assert all(loads[i].disk_bytes > 0 for i in range(1, 13))
    assert len({b.rack for b in topo.brokers if b.id > 12}) == 3


def test_racks_unequal_and_capacities_mixed() -> None:
    topo = generate_cluster(brokers=12, new_brokers=0, racks=3, partitions=100)
    per_rack = Counter(b.rack for b in topo.brokers)
    assert len(set(per_rack.values())) > 1
    assert len({b.capacity.disk_bytes for b in topo.brokers}) >= 2


@pytest.mark.parametrize("rf", [2, 4])
def test_other_replication_factors_respect_rack_limit(rf: int) -> None:
    topo = generate_cluster(brokers=9, new_brokers=0, racks=3, partitions=500, rf=rf)
    rack = {b.id: b.rack for b in topo.brokers}
    limit = math.ceil(rf / 3)
    for p in topo.partitions:
        assert len(set(p.replicas)) == rf
        assert max(Counter(rack[r] for r in p.replicas).values()) <= limit


def test_impossible_rack_layout_is_an_input_error() -> None:
    with pytest.raises(InputError):
        generate_cluster(brokers=2, new_brokers=0, racks=2, partitions=10, rf=3)
