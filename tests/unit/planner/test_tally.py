"""Tallies agree with the load model, and an update equals a recount of the planned cluster."""

from __future__ import annotations

import pytest

from planner.tally import balance_of, retally, tally
from topology.load import balance, broker_loads
from topology.model import RESOURCES, replace_replicas
from topology.synthetic import generate_cluster


def test_tally_matches_the_load_model_and_updates_match_a_recount() -> None:
    topology = generate_cluster(brokers=6, new_brokers=2, racks=3, partitions=300, seed=5)
    counts = tally(topology)
    for broker_id, load in broker_loads(topology).items():
        for res in RESOURCES:
            assert counts.load(broker_id).of(res) == pytest.approx(load.of(res))
    new = topology.broker_ids[-2:]
    changes = [(p, (new[i % 2], *p.replicas[1:])) for i, p in enumerate(topology.partitions[:40])
               if new[i % 2] not in p.replicas]
    after = replace_replicas(topology, {p.key: r for p, r in changes})
    updated, recount = retally(counts, changes), tally(after)
    assert sum(updated.replicas(b) for b in new) == len(changes)
    for broker_id in topology.broker_ids:
        assert updated.replicas(broker_id) == recount.replicas(broker_id)
        assert updated.leaders(broker_id) == recount.leaders(broker_id)
        for res in RESOURCES:
            assert updated.load(broker_id).of(res) == pytest.approx(
                recount.load(broker_id).of(res), rel=1e-9, abs=1e-6)
    expected = balance(after)
    for res, got in balance_of(updated, topology.brokers).items():
        assert got.average == pytest.approx(expected[res].average)
        assert got.max_over_avg == pytest.approx(expected[res].max_over_avg)
