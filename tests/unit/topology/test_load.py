"""Load model formulas (DESIGN.md) on hand-computed clusters."""

from __future__ import annotations

import pytest

from topology.load import balance, broker_loads, bytes_moved, leader_net_out
from topology.model import Broker, Capacity, Partition, Resource, Topology

CAP = Capacity(1000.0, 100.0, 100.0)
BIG = Capacity(2000.0, 200.0, 200.0)


def cluster() -> Topology:
    brokers = (Broker(1, "a", CAP), Broker(2, "b", CAP), Broker(3, "a", BIG))
    parts = (
        Partition("t", 0, (1, 2), size_bytes=100, bytes_in_per_sec=10.0, bytes_out_per_sec=20.0),
        Partition("t", 1, (2, 3), size_bytes=50, bytes_in_per_sec=4.0, bytes_out_per_sec=0.0),
        Partition("u", 0, (3, 1, 2), size_bytes=10, bytes_in_per_sec=1.0, bytes_out_per_sec=3.0),
    )
    return Topology(brokers, parts)


def test_leader_sends_consumers_plus_one_copy_per_follower() -> None:
    p = Partition("u", 0, (3, 1, 2), size_bytes=10, bytes_in_per_sec=1.0, bytes_out_per_sec=3.0)
    assert leader_net_out(p) == 3.0 + 1.0 * 2


def test_broker_loads_follow_the_model() -> None:
    loads = broker_loads(cluster())
    assert loads[1].disk_bytes == 110
    assert loads[2].disk_bytes == 160
    assert loads[3].disk_bytes == 60
    assert loads[1].net_in_bytes_per_sec == 11.0
    assert loads[2].net_in_bytes_per_sec == 15.0
    assert loads[3].net_in_bytes_per_sec == 5.0
    # leaders: t-0 on 1 (20 + 10*1), t-1 on 2 (0 + 4*1), u-0 on 3 (3 + 1*2)
    assert loads[1].net_out_bytes_per_sec == 30.0
    assert loads[2].net_out_bytes_per_sec == 4.0
    assert loads[3].net_out_bytes_per_sec == 5.0


def test_balance_is_capacity_weighted() -> None:
    bal = balance(cluster())[Resource.DISK]
    assert bal.average == pytest.approx(330 / 4000)
    assert bal.utilization[3] == pytest.approx(60 / 2000)
    assert bal.max_over_avg == pytest.approx((160 / 1000) / (330 / 4000))
    assert not bal.within(0.10)


def test_heterogeneous_brokers_in_proportion_are_balanced() -> None:
    brokers = (Broker(1, "a", CAP), Broker(2, "b", BIG))
    parts = (
        Partition("t", 0, (1,), size_bytes=100, bytes_in_per_sec=1.0, bytes_out_per_sec=1.0),
        Partition("t", 1, (2,), size_bytes=200, bytes_in_per_sec=2.0, bytes_out_per_sec=2.0),
    )
    for rb in balance(Topology(brokers, parts)).values():
        assert rb.within(0.0001)


def test_bytes_moved_counts_only_new_replicas() -> None:
    p = Partition("t", 0, (1, 2, 3), size_bytes=7)
    assert bytes_moved(p, (3, 2, 1)) == 0
    assert bytes_moved(p, (1, 2, 4)) == 7
    assert bytes_moved(p, (4, 5, 1)) == 14
