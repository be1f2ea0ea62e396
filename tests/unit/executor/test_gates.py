"""Gate decisions over metric readings."""

from __future__ import annotations

import pytest

from executor.gates import (
    GateDecision,
    GatePolicy,
    GateReading,
    GateVerdict,
    NetworkSample,
    gate_decision,
    start_decision,
)
from kafka_rebalance.core.errors import InputError
from topology.model import TopicPartition

BROKERS = (1, 2)
BASE = NetworkSample({1: 10e6, 2: 20e6}, {1: 30e6, 2: 0.0})
POLICY = GatePolicy(margin=0.10, floor_bytes_per_sec=1e6, consecutive=3)


def reading(net_in: dict[int, float], net_out: dict[int, float],
            urp: frozenset[TopicPartition] = frozenset(), p99: float | None = None) -> GateReading:
    return GateReading(NetworkSample(net_in, net_out), urp, p99)


SETTLED = reading({1: 10.5e6, 2: 21e6}, {1: 32e6, 2: 0.9e6})


def decide(r: GateReading, streak: int = 0, policy: GatePolicy = POLICY,
           moving: frozenset[TopicPartition] = frozenset()) -> GateDecision:
    return gate_decision(policy, BASE, r, moving, streak)


def test_opens_after_k_consecutive_settled_samples() -> None:
    streak = 0
    verdicts = []
    for _ in range(3):
        d = decide(SETTLED, streak)
        verdicts.append(d.verdict)
        streak = d.streak
    assert verdicts == [GateVerdict.WAIT, GateVerdict.WAIT, GateVerdict.OPEN]
    assert "settled for 3" in d.reason


def test_busy_sample_resets_the_streak_and_names_the_broker() -> None:
    busy = reading({1: 10.5e6, 2: 40e6}, {1: 30e6, 2: 0.0})
    d = decide(busy, streak=2)
    assert d.verdict is GateVerdict.WAIT and d.streak == 0
    assert "broker 2 network in 40.0 MB/s > 22.0 MB/s" in d.reason


def test_absolute_floor_settles_an_idle_broker() -> None:
    # broker 2 out baseline is 0: only the floor lets it settle
    d = decide(reading({1: 1e6, 2: 1e6}, {1: 1e6, 2: 1.2e6}))
    assert d.verdict is GateVerdict.WAIT and "broker 2 network out" in d.reason
    assert decide(reading({1: 1e6, 2: 1e6}, {1: 1e6, 2: 0.99e6}), 2).open


def test_metrics_unavailable_holds() -> None:
    d = decide(GateReading(None, unavailable="connection refused"), streak=2)
    assert d.verdict is GateVerdict.HOLD and d.streak == 0
    assert "connection refused" in d.reason


def test_missing_broker_series_holds() -> None:
    d = decide(reading({1: 1.0}, {1: 1.0, 2: 1.0}))
    assert d.verdict is GateVerdict.HOLD and "[2]" in d.reason


def test_under_replicated_besides_moving_waits() -> None:
    moving = TopicPartition("a", 0)
    other = TopicPartition("b", 1)
    net = SETTLED.network
    assert net is not None
    assert decide(GateReading(net, frozenset({moving})), 2, moving=frozenset({moving})).open
    d = decide(GateReading(net, frozenset({moving, other})), 2, moving=frozenset({moving}))
    assert d.verdict is GateVerdict.WAIT and "b-1" in d.reason and "a-0" not in d.reason


def test_produce_p99_slo_guard() -> None:
    policy = GatePolicy(consecutive=1, produce_p99_max_ms=50.0)
    net = SETTLED.network
    assert net is not None
    slow = GateReading(net, produce_p99_ms=80.0)
    assert decide(slow, policy=policy).verdict is GateVerdict.WAIT
    assert decide(GateReading(net, produce_p99_ms=20.0), policy=policy).open
    assert decide(GateReading(net), policy=policy).verdict is GateVerdict.HOLD


def test_start_needs_a_baseline_for_every_broker() -> None:
    assert start_decision(SETTLED, BROKERS, BROKERS).open
    assert start_decision(GateReading(None), BROKERS, BROKERS).verdict is GateVerdict.HOLD
    assert start_decision(reading({1: 0.0}, {1: 0.0}), BROKERS, BROKERS).verdict is GateVerdict.HOLD


@pytest.mark.parametrize("kwargs", [{"margin": -0.1}, {"consecutive": 0},
                                    {"floor_bytes_per_sec": -1.0}, {"produce_p99_max_ms": 0.0}])
def test_policy_rejects_nonsense(kwargs: dict[str, float]) -> None:
    with pytest.raises(InputError):
        GatePolicy(**kwargs)  # type: ignore[arg-type]


def test_the_gate_watches_only_the_directions_its_move_used() -> None:
    """Broker 2 received and broker 1 sent: another move sending from 2 or receiving on 1 does
    not keep this gate closed."""
    base = NetworkSample({2: 1e6}, {1: 1e6})
    elsewhere = reading({1: 90e6, 2: 1e6}, {1: 1e6, 2: 90e6})
    assert gate_decision(POLICY, base, elsewhere, frozenset(), 2).open
    own = gate_decision(POLICY, base, reading({2: 50e6}, {1: 1e6}), frozenset(), 2)
    assert not own.open and "broker 2 network in" in own.reason
    assert start_decision(reading({2: 1e6}, {}), [2], [1]).verdict is GateVerdict.HOLD
