"""Before a run (or its dry run), Prometheus must have the gate's network series for at least
one broker of the plan: one that answers with none scrapes another cluster (or the queries
name other metrics), and every move would hold for ever."""

from __future__ import annotations

import pytest

from kafka_rebalance.core.errors import MetricsError
from kafka_rebalance.usecases.run import _require_network_series
from tests.unit.executor.fakes import make_world
from topology.model import Broker, Capacity, Topology


def _topology() -> Topology:
    return Topology(tuple(Broker(b, None, Capacity(1e12, 1e9, 1e9)) for b in (1, 2, 3, 4)), ())


def test_a_prometheus_of_another_cluster_is_refused() -> None:
    world = make_world()
    world.metrics.unscraped = {1, 2, 3, 4}  # series for none of this cluster's brokers
    with pytest.raises(MetricsError, match=r"no network series for any broker of the plan "
                                           r"\(\[1, 2, 3, 4\]\)"):
        _require_network_series(world.ports(), world.config, world.plan, _topology(),
                                "http://prometheus:9090")


def test_a_broker_not_scraped_yet_is_left_to_the_gate() -> None:
    world = make_world()
    world.metrics.unscraped = {4}  # just added
    _require_network_series(world.ports(), world.config, world.plan, _topology(),
                            "http://prometheus:9090")
