"""Self-healing decisions: when an offline broker's drain is due, and when no drain can help."""

from __future__ import annotations

from kafka_rebalance.autobalance.healing import healing, offline_since
from topology.model import Broker, Capacity, Partition, Topology

CAP = Capacity(1e12, 1e9, 1e9)


def cluster(dead: set[int]) -> Topology:
    brokers = tuple(Broker(b, None, CAP, alive=b not in dead) for b in (1, 2, 3, 4))
    parts = (Partition("t", 0, (1, 2), 10), Partition("t", 1, (3, 4), 10))
    return Topology(brokers, parts)


def test_first_seen_offline_is_kept_and_a_broker_back_drops_out() -> None:
    assert offline_since(cluster({3}), {}, 100.0) == {3: 100.0}
    assert offline_since(cluster({3, 4}), {3: 100.0}, 160.0) == {3: 100.0, 4: 160.0}
    assert offline_since(cluster({4}), {3: 100.0, 4: 160.0}, 200.0) == {4: 160.0}


def test_a_drain_waits_for_the_grace_period_and_a_lost_partition_stops_it() -> None:
    assert healing(cluster(set()), {}, 0.0, 300.0).offline == ()
    young = healing(cluster({3}), {3: 100.0}, 160.0, 300.0)
    assert "broker 3 for 60 s" in young.waiting and not young.lost
    due = healing(cluster({3}), {3: 100.0}, 400.0, 300.0)
    assert due.offline == (3,) and not due.waiting and not due.lost
    lost = healing(cluster({3, 4}), {3: 100.0, 4: 100.0}, 500.0, 300.0)
    assert "t-1" in lost.lost and "no replica on a live broker" in lost.lost
