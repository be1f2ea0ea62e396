"""Before a run (or its dry run), Prometheus must have the gate's network series for at least
one broker of the plan: one that answers with none scrapes another cluster (or the queries
name other metrics), and every move would hold for ever."""

from __future__ import annotations

import pytest

from kafka_rebalance.core.errors import MetricsError
from kafka_rebalance.usecases.run import _require_network_series
from tests.unit.executor.fakes import make_world
from topology.model import Capacity


def test_a_prometheus_of_another_cluster_is_refused() -> None:
    world = make_world()
    world.metrics.unscraped = {1, 2, 3, 4}  # series for none of this cluster's brokers
    with pytest.raises(MetricsError, match=r"no network series for any broker of the plan "
                                           r"\(\[1, 2, 3, 4\]\)"):
        _require_network_series(world.ports(), world.config, world.plan, {1, 2, 3, 4},
                                "http://prometheus:9090")


def test_a_broker_not_scraped_yet_is_left_to_the_gate() -> None:
    world = make_world()
    world.metrics.unscraped = {4}  # just added
    _require_network_series(world.ports(), world.config, world.plan, {1, 2, 3, 4},
                            "http://prometheus:9090")


def test_a_cap_above_every_receivers_network_is_told() -> None:
    from dataclasses import replace

    from kafka_rebalance.usecases.run import _cap_above_the_network

    world = make_world()
    caps = {b: Capacity(1e12, 50e6, 50e6) for b in (1, 2, 3, 4)}
    fast = replace(world.config, max_bytes_per_sec=100_000 * 10**6, capacities=caps)
    said = _cap_above_the_network(fast, world.plan)
    assert said.startswith("--max-mbps is 100 GB/s, above the network capacity of every "
                           "broker the plan copies into (at most 50.0 MB/s)"), said
    assert _cap_above_the_network(replace(fast, max_bytes_per_sec=40 * 10**6), world.plan) == ""


def test_a_cap_that_makes_the_run_last_weeks_is_told() -> None:
    from dataclasses import replace

    from kafka_rebalance.usecases.run import _cap_far_below_the_plan

    world = make_world()
    total = sum(m.bytes_moved for m in world.plan.moves)
    week = 7 * 24 * 3600
    slow = replace(world.config, max_bytes_per_sec=total / (2 * week))  # a unit slip's pace
    said = _cap_far_below_the_plan(slow, world.plan)
    assert said.startswith("--max-mbps is "), said
    assert said.endswith("take 14d 00h 00m at it one move at a time; is the unit right (MB/s, "
                         "10^6 bytes per second)?"), said
    assert _cap_far_below_the_plan(replace(slow, max_bytes_per_sec=total / (week - 60)),
                                   world.plan) == ""
