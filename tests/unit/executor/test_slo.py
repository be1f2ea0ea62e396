"""The SLO guard's pure decisions: which brokers breach, the AIMD step, the guarded rates."""

from __future__ import annotations

import pytest

from executor.slo import (
    CONSUMER_LAG,
    FETCH_P99,
    PRODUCE_P99,
    SloPolicy,
    SloReading,
    breaches,
    floor_rate,
    guarded,
    next_levels,
)
from kafka_rebalance.core.errors import InputError

MB = 1_000_000
CAP = 8 * MB


def test_a_latency_breach_counts_on_its_own_broker_only() -> None:
    reading = SloReading(produce_p99_ms={1: 20.0, 2: 900.0}, fetch_p99_ms={1: 2000.0},
                         flush_p95_ms={3: 10.0})
    found = breaches(SloPolicy(), reading, [1, 2, 3])
    assert found == {1: ["fetch p99 2000 ms > 1500 ms"], 2: ["produce p99 900 ms > 500 ms"]}


def test_under_replication_and_lag_count_on_every_broker() -> None:
    policy = SloPolicy(consumer_lag_max=1000.0)
    found = breaches(policy, SloReading(under_replicated=2, consumer_lag=5000.0), [4, 7])
    assert set(found) == {4, 7}
    assert found[4] == ["2 under-replicated partition(s) outside the moves > 0",
                        "consumer lag 5000 > 1000"]


def test_missing_series_and_unset_thresholds_are_not_breaches() -> None:
    reading = SloReading(produce_p99_ms={1: 900.0}, under_replicated=None, consumer_lag=9e9)
    assert breaches(SloPolicy(produce_p99_max_ms=None), reading, [1, 2]) == {}


def test_aimd_halves_a_breached_broker_and_raises_a_healthy_one_by_a_tenth() -> None:
    policy = SloPolicy()
    changes = next_levels(policy, CAP, {2: 2 * MB}, {1: ["produce p99 900 ms > 500 ms"]},
                          [1, 2, 3])
    assert [(c.broker, c.old, c.new, c.lowered) for c in changes] == [
        (1, CAP, CAP // 2, True), (2, 2 * MB, 2 * MB + CAP // 10, False)]
    assert changes[0].text() == ("broker 1 lowered 8.00 MB/s -> 4.00 MB/s "
                                 "(produce p99 900 ms > 500 ms)")


def test_a_breach_halves_the_rate_in_force_when_it_is_below_the_level() -> None:
    """Broker 3's copy runs at 2 MB/s (an operator's lower throttle kept): halving the 8 MB/s
    ceiling would not slow it; the first step sets 1 MB/s. A level already below the rate in
    force halves from itself."""
    policy = SloPolicy()
    changes = next_levels(policy, CAP, {}, {3: ["x"]}, [3], {3: 2 * MB})
    assert [(c.old, c.new) for c in changes] == [(CAP, MB)]
    changes = next_levels(policy, CAP, {3: 4 * MB}, {3: ["x"]}, [3], {3: 6 * MB})
    assert [(c.old, c.new) for c in changes] == [(4 * MB, 2 * MB)]
    # never under the floor, whatever the rate in force
    changes = next_levels(policy, CAP, {}, {3: ["x"]}, [3], {3: MB})
    assert [(c.old, c.new) for c in changes] == [(CAP, CAP // 8)]
    # a healthy step climbs from the level, as before
    assert [(c.old, c.new) for c in next_levels(policy, CAP, {3: MB}, {}, [3], {3: 2 * MB})] \
        == [(MB, MB + CAP // 10)]


def test_levels_stay_between_the_floor_and_the_cap() -> None:
    policy = SloPolicy()
    floor = floor_rate(policy, CAP)
    assert floor == CAP // 8
    level = CAP
    for _ in range(10):
        for change in next_levels(policy, CAP, {1: level}, {1: ["x"]}, [1]):
            level = change.new
    assert level == floor
    for _ in range(30):
        for change in next_levels(policy, CAP, {1: level}, {}, [1]):
            level = change.new
    assert level == CAP
    assert next_levels(policy, CAP, {1: CAP}, {}, [1]) == []  # nothing to raise


def test_guarded_rates_are_capped_by_the_level_and_never_raised() -> None:
    rates = {1: {"leader": 4 * MB}, 3: {"follower": 2 * MB, "leader": 6 * MB}}
    assert guarded(rates, {3: 3 * MB, 9: MB}) == {1: {"leader": 4 * MB},
                                                  3: {"follower": 2 * MB, "leader": 3 * MB}}


def test_the_policy_round_trips_and_refuses_nonsense() -> None:
    policy = SloPolicy(produce_p99_max_ms=None, consumer_lag_max=10.0, every_seconds=3.0)
    assert SloPolicy.from_dict(policy.to_dict()) == policy
    assert SloPolicy.from_dict({}) == SloPolicy()
    assert policy.watched() == ("fetch_p99", "flush_p95", "under_replicated", CONSUMER_LAG)
    assert PRODUCE_P99 in SloPolicy().watched() and FETCH_P99 in SloPolicy().watched()
    with pytest.raises(ValueError, match="not a number"):
        SloPolicy.from_dict({"decrease": "half"})
    for bad in ({"decrease": 1.0}, {"floor_fraction": 0.0}, {"produce_p99_max_ms": -1.0},
                {"under_replicated_max": -1}, {"every_seconds": 0.0}):
        with pytest.raises(InputError, match="SLO guard"):
            SloPolicy(**bad)  # type: ignore[arg-type]


@pytest.mark.parametrize(("now", "before", "breached"), [
    (SloReading(produce_p99_ms={1: 600.0}), None, True),  # the flag alone: 500 ms
    (SloReading(produce_p99_ms={1: 600.0}), SloReading(produce_p99_ms={1: 400.0}), False),
    (SloReading(produce_p99_ms={1: 900.0}), SloReading(produce_p99_ms={1: 400.0}), True),
    (SloReading(produce_p99_ms={1: 600.0}), SloReading(produce_p99_ms={1: 20.0}), True),
    (SloReading(produce_p99_ms={1: 600.0}), SloReading(produce_p99_ms={1: 700.0}), False),
    (SloReading(produce_p99_ms={1: 1500.0}), SloReading(produce_p99_ms={1: 700.0}), True),
    (SloReading(under_replicated=3), SloReading(under_replicated=3), False),  # a dead broker
    (SloReading(under_replicated=4), SloReading(under_replicated=3), True),
    (SloReading(under_replicated=1), SloReading(under_replicated=None), True),
])
def test_breaches_are_judged_against_the_clusters_own_normal(
        now: SloReading, before: SloReading | None, breached: bool) -> None:
    assert bool(breaches(SloPolicy(), now, [1], before)) is breached


def test_absolute_judges_by_the_thresholds_alone() -> None:
    before = SloReading(produce_p99_ms={1: 700.0}, under_replicated=3)
    now = SloReading(produce_p99_ms={1: 600.0}, under_replicated=3)
    assert not breaches(SloPolicy(), now, [1], before)
    assert breaches(SloPolicy(baseline=False), now, [1], before)[1] == [
        "produce p99 600 ms > 500 ms", "3 under-replicated partition(s) outside the moves > 0"]
    assert SloPolicy.from_dict(SloPolicy(baseline=False).to_dict()).baseline is False
