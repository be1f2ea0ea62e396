"""Achievable targets: the average where the hard rules allow it, the best any placement can
reach where they do not (zones of unequal size, RF equal to the broker count, removals)."""

from __future__ import annotations

import numpy as np
import pytest

from kafka_rebalance.core.errors import PlanError
from planner.arrays import DISK, NET_IN, NET_OUT, to_arrays
from planner.balance import achievable_targets, aim, band, deviation
from planner.goals import Goals
from topology.model import Broker, Capacity, Partition, Topology
from topology.synthetic import generate_cluster, generate_zoned

CAP = Capacity(1000.0, 1000.0, 1000.0)


def targets_of(topology: Topology, goals: Goals) -> np.ndarray:
    return achievable_targets(to_arrays(topology, goals), goals).relative()


def test_equal_zones_keep_the_average_band() -> None:
    topology = generate_zoned((2, 2, 2), seed=1)
    targets = achievable_targets(to_arrays(topology, Goals()), Goals())
    assert targets.forced == (False, False, False)
    assert targets.reasons == ()
    assert np.allclose(targets.relative(), 1.0)


def test_a_broker_added_to_one_of_three_zones() -> None:
    """Zone a holds a third of the replicas on 3 of 7 brokers: 7/9 of the average; zones b and
    c hold a third each on 2 brokers: 7/6. Net out follows leadership, which is free."""
    topology = generate_zoned((2, 2, 2), (1, 0, 0))
    goals = Goals(add_brokers=frozenset({7}))
    targets = achievable_targets(to_arrays(topology, goals), goals)
    rel = targets.relative()
    assert targets.forced == (True, True, False)
    for broker in (0, 1, 6):
        assert rel[broker, DISK] == pytest.approx(7 / 9, abs=2e-3)
        assert rel[broker, NET_IN] == pytest.approx(7 / 9, abs=2e-3)
    for broker in (2, 3, 4, 5):
        assert rel[broker, DISK] == pytest.approx(7 / 6, abs=2e-3)
    assert np.allclose(rel[:, NET_OUT], 1.0)
    assert any("rack rack-a holds exactly 1 replica of every partition" in r
               and "no more than 43% disk" in r for r in targets.reasons), targets.reasons


def test_a_removed_broker_targets_nothing_and_lifts_its_zone() -> None:
    topology = generate_zoned((4, 4, 4))
    goals = Goals(remove_brokers=frozenset({8}))
    rel = targets_of(topology, goals)
    assert np.all(rel[7] == 0.0)  # broker 8 is position 7
    assert rel[4, DISK] == pytest.approx(11 / 9, abs=2e-3)  # a third on 3 of 11 brokers
    assert rel[0, DISK] == pytest.approx(11 / 12, abs=2e-3)


def test_rf_equal_to_brokers_forces_every_broker_to_hold_everything() -> None:
    """Two brokers, RF 2: each holds every partition, so the larger one sits lower."""
    brokers = (Broker(1, None, CAP), Broker(2, None, Capacity(2000.0, 2000.0, 2000.0)))
    parts = tuple(Partition("t", i, (1, 2), 100, 1.0, 1.0) for i in range(3))
    rel = targets_of(Topology(brokers, parts), Goals())
    assert rel[0, DISK] == pytest.approx(1.5, abs=1e-3)
    assert rel[1, DISK] == pytest.approx(0.75, abs=1e-3)
    assert rel[:, NET_OUT] == pytest.approx([1.0, 1.0])  # leaders are free


def test_the_cap_is_part_of_the_rules() -> None:
    topology = generate_zoned((3, 2, 2), utilization=0.9)
    with pytest.raises(PlanError, match="under the 95% maximum") as refused:
        achievable_targets(to_arrays(topology, Goals()), Goals())
    # the cause named: the small zones must each hold a replica of every partition
    assert "keeps 2 brokers" in str(refused.value), refused.value
    assert "of every partition: 1" in str(refused.value)  # more than 100% of their disk
    assert str(refused.value).endswith("add brokers to that rack, or remove fewer from it")


def test_targets_are_cheap_on_a_large_cluster() -> None:
    """The LP has (classes x brokers) variables, whatever the partition count."""
    topology = generate_cluster(60, 6, 3, 20_000, 3, seed=2)
    goals = Goals()
    targets = achievable_targets(to_arrays(topology, goals), goals)
    assert targets.utilization.shape == (66, 3)


def test_band_aim_and_deviation_agree() -> None:
    topology = generate_zoned((2, 2, 2), (1, 0, 0))
    goals = Goals(add_brokers=frozenset({7}))
    arrays = to_arrays(topology, goals)
    targets = achievable_targets(arrays, goals)
    lower, upper = band(arrays, targets, 0.1, 0.95)
    aim_lower, aim_upper = aim(arrays, targets, 0.1, 0.95)
    load = targets.utilization * arrays.capacity
    assert np.all(lower <= aim_lower + 1e-6) and np.all(aim_upper <= upper + 1e-6)
    assert np.allclose(aim_upper[:, DISK], load[:, DISK] * 1.05)  # forced: half the band
    assert np.allclose(aim_upper[:, NET_OUT], load[:, NET_OUT] * 1.10)  # free: the band
    assert deviation(arrays, targets, load) == pytest.approx([0.0, 0.0, 0.0], abs=1e-9)
    assert deviation(arrays, targets, load * 1.2) == pytest.approx([0.2, 0.2, 0.2])
