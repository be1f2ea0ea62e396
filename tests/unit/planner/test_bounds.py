"""Lower bounds on bytes moved: disk alone on small hand-built clusters, and disk with net in
(the fractional knapsack per broker), which balanced plans never beat."""

from __future__ import annotations

from planner.arrays import to_arrays
from planner.balance import achievable_targets
from planner.bounds import disk_lower_bound, lower_bounds
from planner.goals import Budget, Goals
from planner.solve import plan
from topology.model import Broker, Capacity, Partition, Topology
from topology.synthetic import generate_cluster

CAP = Capacity(1000, 1000, 1000)


def _cluster(sizes_by_broker: dict[int, list[int]]) -> Topology:
    brokers = tuple(Broker(b, None, CAP) for b in sizes_by_broker)
    parts = []
    for b, sizes in sizes_by_broker.items():
        parts.extend(Partition(f"t{b}", i, (b,), s) for i, s in enumerate(sizes))
    return Topology(brokers, tuple(parts))


def test_two_brokers_one_full_one_empty() -> None:
    # avg 50 per broker; upper 55, lower 45: excess 45, deficit 45
    topo = _cluster({1: [40, 60], 2: []})
    assert disk_lower_bound(topo, Goals(tolerance=0.1)) == 45


def test_balanced_cluster_needs_nothing() -> None:
    topo = _cluster({1: [50], 2: [52], 3: [48]})
    assert disk_lower_bound(topo, Goals(tolerance=0.1)) == 0


def test_deficit_larger_than_excess() -> None:
    # avg 40; upper 44, lower 36: excess 120-44=76, deficit 36*2=72 -> 76
    topo = _cluster({1: [120], 2: [], 3: []})
    assert disk_lower_bound(topo, Goals(tolerance=0.1)) == 76
    # avg 60 over two remaining... broker 3 empty: lower 54 -> deficit 54*2=108 > excess
    topo2 = _cluster({1: [66], 2: [66], 3: [0, 48]})
    bound = disk_lower_bound(topo2, Goals(tolerance=0.1))
    assert bound == max(0, round(60 * 0.9 - 48))


def test_removed_broker_counts_its_whole_disk_as_excess() -> None:
    topo = _cluster({1: [50], 2: [50], 3: [30]})
    # remaining avg 65: bounds [58.5, 71.5]; excess = 30 (broker 3), deficit = 8.5 * 2 = 17
    assert disk_lower_bound(topo, Goals(tolerance=0.1, remove_brokers=frozenset({3}))) == 30


def test_net_in_raises_the_bound_where_disk_alone_is_level() -> None:
    """Disk is level (110 / 110) but broker 1 takes all the produce traffic: 45 B/s of net in
    must leave it, at best as 45% of the hot 10-byte partition (fractions allowed)."""
    cap = Capacity(1000.0, 1000.0, 1000.0)
    brokers = (Broker(1, None, cap), Broker(2, None, cap))
    parts = (Partition("t", 0, (1,), 100, 0.0), Partition("t", 1, (1,), 10, 100.0),
             Partition("t", 2, (2,), 110, 0.0))
    topology = Topology(brokers, parts)
    goals = Goals(tolerance=0.1)
    arrays = to_arrays(topology, goals)
    bounds = lower_bounds(arrays, goals, achievable_targets(arrays, goals))
    assert bounds.disk == 0
    assert bounds.combined == 5  # ceil(0.45 * 10)


def test_plans_inside_the_aimed_band_move_at_least_the_bound() -> None:
    for seed in range(3):
        topology = generate_cluster(8, 2, 2, 400, 2, seed=seed)
        goals = Goals()
        result = plan(topology, goals, Budget(time_limit_s=3))
        arrays = to_arrays(topology, goals)
        bounds = lower_bounds(arrays, goals, achievable_targets(arrays, goals))
        assert result.lower_bound_bytes == bounds.combined >= bounds.disk
        if result.excess_over_bound is not None:
            assert result.bytes_moved >= bounds.combined
            assert result.excess_over_bound >= 0
