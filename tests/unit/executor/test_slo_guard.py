"""The SLO guard in a run (fake cluster and Prometheus): a breach lowers the rates of the copies
through that broker while they copy, recovery raises them back, each decision is journaled and
reported, the journal keeps the move's own rates, and every throttle is restored at the end."""

from __future__ import annotations

import json
import re
from collections.abc import Callable

import pytest

from executor.config import Event, EventKind
from executor.journal import replay
from executor.readings import under_replicated_near
from executor.records import RunOutcome
from executor.runner import Executor
from executor.slo import SloPolicy, SloReading, breaches
from executor.throttle import FOLLOWER_RATE, LEADER_RATE
from executor.timeline import timeline
from kafka_rebalance.core.ports import PartitionInfo
from kafka_rebalance.report.run_status import summary_head
from planner.result import Move
from tests.unit.executor.fakes import MB, World, make_world
from topology.model import TopicPartition

CAP = 8 * MB
BIG = [Move("orders", 0, (1, 2), (3, 2), 120 * MB)]  # 15 s at the cap from 1 into 3


def _world(moves: list[Move] = BIG, **slo: object) -> World:
    policy = SloPolicy(**{"every_seconds": 2.0, **slo})  # type: ignore[arg-type]
    return make_world(moves, max_bytes_per_sec=CAP, slo=policy)


def _watch(world: World) -> list[tuple[float, str | None, str | None]]:
    """(clock, broker 3's follower rate, broker 1's leader rate) at every copy poll."""
    seen: list[tuple[float, str | None, str | None]] = []

    def hook(w: World, event: Event) -> None:
        if event.kind is EventKind.PROGRESS:
            seen.append((w.clock.now(), w.admin.broker_cfg.get(3, {}).get(FOLLOWER_RATE),
                         w.admin.broker_cfg.get(1, {}).get(LEADER_RATE)))
    world.hooks.append(hook)
    return seen


def _once_copying(world: World, hurt: Callable[[World], None]) -> None:
    """Clients start to hurt once the first copy flows (before it, the guard reads the
    cluster's own normal)."""
    def hook(w: World, event: Event) -> None:
        if event.kind is EventKind.PROGRESS:
            hurt(w)
            w.hooks.remove(hook)
    world.hooks.append(hook)


def _slow(broker: int) -> Callable[[World], None]:
    """Produce p99 on `broker` at 900 ms and more, moving as a served broker's does (a
    percentile that never moves is stale: slo.without_stale); until healed (cleared)."""
    def hurt(w: World) -> None:
        w.metrics.produce_p99[broker] = 900.0

        def busy(w: World, event: Event) -> None:
            if broker in w.metrics.produce_p99:
                w.metrics.produce_p99[broker] = 900.0 + w.clock.now() % 50
        w.hooks.append(busy)
    return hurt


def _run(world: World) -> RunOutcome:
    return Executor.start(world.plan, world.ports(), world.config, world.open_sink,
                          reporter=world.reporter).run().outcome


def test_a_slow_receiver_gets_a_lower_rate_while_it_copies_and_the_sender_keeps_the_cap() -> None:
    world = _world()
    _once_copying(world, _slow(3))
    before = world.admin.configs()
    seen = _watch(world)
    assert _run(world) is RunOutcome.COMPLETED
    follower = [int(f) for _, f, _ in seen if f is not None]
    assert follower[0] == CAP
    assert follower[-1] == CAP // 8  # halved down to the floor, never under it
    assert {CAP // 2, CAP // 4} <= set(follower) and min(follower) == CAP // 8
    assert {leader for _, _, leader in seen} == {str(CAP)}  # broker 1 is healthy
    guards = [r for r in world.sink.records if r.get("kind") == "guard"]
    assert [r["levels"] for r in guards] == [{"3": CAP // 2}, {"3": CAP // 4}, {"3": CAP // 8}]
    assert re.search(r"produce p99 9\d\d ms > 500 ms", str(guards[0]["changes"]))
    # the journal keeps the move's own rates: the guard's are an overlay
    throttling = next(r for r in world.sink.records if r.get("state") == "throttling")
    assert json.dumps(throttling["throttle"]).count(str(CAP)) >= 2
    events = [e for e in world.events if e.kind is EventKind.GUARD]
    assert [(e.broker, e.rate, e.state) for e in events] == [
        (3, CAP // 2, "lowered"), (3, CAP // 4, "lowered"), (3, CAP // 8, "lowered")]
    assert world.admin.configs() == before  # restored exactly
    run = replay(json.loads(json.dumps(world.sink.records)))
    assert (run.guard_steps, run.guard_lowest) == (3, CAP // 8)
    head = summary_head(run, timeline(world.sink.records), "completed", world.clock.now())
    assert any(line.startswith("SLO guard: 3 step(s) changed brokers' rates, down to 1.00 MB/s")
               for line in head), head


def test_recovery_raises_the_rate_back_step_by_step() -> None:
    world = _world(moves=[Move("orders", 0, (1, 2), (3, 2), 200 * MB)])
    _once_copying(world, _slow(3))
    seen = _watch(world)

    def heal(w: World, event: Event) -> None:
        if event.kind is EventKind.GUARD and event.rate == CAP // 4:
            w.metrics.produce_p99.clear()
    world.hooks.append(heal)
    assert _run(world) is RunOutcome.COMPLETED
    levels = [r["levels"] for r in world.sink.records if r.get("kind") == "guard"]
    assert levels[:2] == [{"3": CAP // 2}, {"3": CAP // 4}]
    climb = [lv.get("3", CAP) for lv in levels[2:]]
    assert climb[0] == CAP // 4 + CAP // 10 and climb == sorted(climb)
    follower = [int(f) for _, f, _ in seen if f is not None]
    assert follower[-1] > CAP // 4  # the copy ran faster again before it ended


def _lagging(world: World, replicas: tuple[int, ...], lagging: int) -> Callable[[World], None]:
    """A partition outside the moves whose follower `lagging` falls out of its ISR once the
    copy flows (its leader's count, as Prometheus reads it, rises with it)."""
    world.admin.add("other", 0, replicas, MB)

    def hurt(w: World) -> None:
        part = w.admin.parts[TopicPartition("other", 0)]
        part.isr = tuple(b for b in replicas if b != lagging)
        w.metrics.urp[replicas[0]] = 1.0
    return hurt


def _heal_at(world: World, rate: int) -> None:
    def heal(w: World, event: Event) -> None:
        if event.kind is EventKind.GUARD and event.rate == rate:
            w.admin.parts[TopicPartition("other", 0)].isr = w.admin.parts[
                TopicPartition("other", 0)].replicas
            w.metrics.urp.clear()
    world.hooks.append(heal)


def test_under_replication_slows_only_the_copies_through_its_brokers() -> None:
    """The receiver (broker 3) lags on a partition led by broker 4: only the copy into 3
    slows; the sender keeps the cap."""
    world = _world()
    _once_copying(world, _lagging(world, (4, 3), lagging=3))
    _heal_at(world, CAP // 2)
    seen = _watch(world)
    assert _run(world) is RunOutcome.COMPLETED
    first = next(r for r in world.sink.records if r.get("kind") == "guard")
    assert first["levels"] == {"3": CAP // 2}
    assert "1 partition(s) outside the moves under-replicated, led or followed here > 0" \
        in str(first["changes"])
    assert {ld for _, _, ld in seen if ld} == {str(CAP)}  # broker 1 sends at the cap
    assert min(int(f) for _, f, _ in seen if f) == CAP // 2


def test_under_replication_elsewhere_leaves_the_copies_alone() -> None:
    """Broker 2 lags on a partition led by broker 4: neither is an end of the copy (broker 2
    keeps its replica), so nothing slows, though the brokers count one under-replicated
    partition."""
    world = _world()
    _once_copying(world, _lagging(world, (4, 2), lagging=2))
    seen = _watch(world)
    assert _run(world) is RunOutcome.COMPLETED
    assert not [r for r in world.sink.records if r.get("kind") == "guard"]
    assert {f for _, f, _ in seen if f} == {str(CAP)}


def test_without_the_clusters_metadata_under_replication_counts_on_every_end() -> None:
    policy = SloPolicy()
    reading = SloReading(under_replicated=2)
    assert breaches(policy, reading, [1, 3]) == {
        1: ["2 under-replicated partition(s) outside the moves > 0"],
        3: ["2 under-replicated partition(s) outside the moves > 0"]}
    attributed = SloReading(under_replicated=2, under_replicated_near={3: 1, 4: 1})
    assert set(breaches(policy, attributed, [1, 3])) == {3}
    # each broker against its own count before the run (a slow broker's lag is its normal)
    before = SloReading(under_replicated=1, under_replicated_near={3: 1})
    assert breaches(policy, attributed, [1, 3], before) == {}
    assert set(breaches(policy, SloReading(under_replicated_near={3: 2}), [1, 3], before)) \
        == {3}
    # a baseline read without the metadata: the cluster's count then bounds each broker's
    assert breaches(policy, attributed, [1, 3], SloReading(under_replicated=1)) == {}


def test_under_replication_is_counted_on_the_leader_and_each_lagging_live_follower() -> None:
    parts = [PartitionInfo("a", 0, (1, 2, 3), (1,), 1),  # 2 and 3 lag behind leader 1
             PartitionInfo("a", 1, (4, 5, 6), (4, 5), 4),  # 6 is offline: no pause cures it
             PartitionInfo("a", 2, (1, 5, 6), (1,), 1),  # the run's own move
             PartitionInfo("a", 3, (2, 3, 4), (2, 3, 4), 2)]  # healthy
    live = frozenset({1, 2, 3, 4, 5})
    assert under_replicated_near(parts, live, frozenset({TopicPartition("a", 2)})) == {
        1: 1, 2: 1, 3: 1}
    # another tool's reassignment adding broker 3: not in sync by design, so only 2 lags
    adding = {TopicPartition("a", 0): (3,)}
    assert under_replicated_near(parts, live, frozenset({TopicPartition("a", 2)}),
                                 adding) == {1: 1, 2: 1}


def test_a_healthy_cluster_and_a_disabled_guard_leave_the_cap_alone() -> None:
    for world in (_world(), _world(enabled=False)):
        if not world.config.slo.enabled:
            world.metrics.produce_p99[3] = 900.0
        seen = _watch(world)
        assert _run(world) is RunOutcome.COMPLETED
        assert {f for _, f, _ in seen if f} == {str(CAP)}
        assert not [r for r in world.sink.records if r.get("kind") == "guard"]


def test_an_absent_series_is_said_once_and_an_outage_keeps_the_levels() -> None:
    world = _world(consumer_lag_max=100.0)
    _once_copying(world, _slow(3))

    def outage(w: World, event: Event) -> None:
        if event.kind is EventKind.GUARD and event.rate == CAP // 2:
            w.metrics.down, w.metrics.down_until = True, w.clock.now() + 5.0
    world.hooks.append(outage)
    assert _run(world) is RunOutcome.COMPLETED
    notes = world.messages(EventKind.NOTE)
    assert sum("no series for consumer lag" in n for n in notes) == 1
    assert sum("SLO guard: metrics unavailable" in n for n in notes) == 1
    levels = [r["levels"] for r in world.sink.records if r.get("kind") == "guard"]
    assert levels[:2] == [{"3": CAP // 2}, {"3": CAP // 4}]  # kept, then lowered again


def test_a_resumed_run_sets_the_journaled_levels_again() -> None:
    world = _world()
    _once_copying(world, _slow(3))
    crashed = {"done": False}

    class Stop(BaseException):
        pass

    def crash(w: World, event: Event) -> None:
        if event.kind is EventKind.GUARD and event.rate == CAP // 4 and not crashed["done"]:
            crashed["done"] = True
            raise Stop
    world.hooks.append(crash)
    with pytest.raises(Stop):
        _run(world)
    records = json.loads(json.dumps(world.sink.records))
    assert replay(records).guard_levels == {3: CAP // 4}
    world.admin.broker_cfg[3][FOLLOWER_RATE] = str(CAP)  # as if someone reset it
    executor = Executor.resume(records, world.sink, world.ports(), world.config)
    assert world.admin.broker_cfg[3][FOLLOWER_RATE] == str(CAP // 4)
    assert executor.run().outcome is RunOutcome.COMPLETED
    assert FOLLOWER_RATE not in world.admin.broker_cfg.get(3, {})


def test_the_clusters_own_normal_before_the_run_is_no_breach() -> None:
    """Broker 3 answered produce in 900 ms and a partition was under-replicated (a dead
    broker) before the run: the guard holds it to twice its own latency and to more than that
    one partition, so the copy keeps the cap; worse than that during the copy still slows
    it."""
    world = _world()
    world.metrics.produce_p99[3] = 900.0
    world.metrics.urp[4] = 1.0
    seen = _watch(world)
    assert _run(world) is RunOutcome.COMPLETED
    assert {f for _, f, _ in seen if f} == {str(CAP)}
    assert not [r for r in world.sink.records if r.get("kind") == "guard"]
    assert any("1 partition(s) under-replicated before the run" in n
               for n in world.messages(EventKind.NOTE))

    worse = _world()
    worse.metrics.produce_p99[3] = 900.0

    def slower(w: World) -> None:
        w.metrics.produce_p99[3] = 2000.0
    _once_copying(worse, slower)
    assert _run(worse) is RunOutcome.COMPLETED
    guards = [r for r in worse.sink.records if r.get("kind") == "guard"]
    assert guards and "produce p99 2000 ms > 1800 ms" in str(guards[0]["changes"])


def test_while_the_brokers_count_no_under_replication_the_guard_reads_no_metadata() -> None:
    """Describing every partition of a large cluster is not free: the guard asks only once
    the brokers' own count says some partition is under-replicated."""
    whole_cluster_reads = []
    for world in (_world(), _world(enabled=False)):
        assert _run(world) is RunOutcome.COMPLETED
        whole_cluster_reads.append(world.admin.calls.count(("partitions", None)))
    assert whole_cluster_reads[0] == whole_cluster_reads[1]
    hurt = _world()
    _once_copying(hurt, _lagging(hurt, (4, 2), lagging=2))
    assert _run(hurt) is RunOutcome.COMPLETED
    assert hurt.admin.calls.count(("partitions", None)) > whole_cluster_reads[0]


def test_a_latency_that_never_moves_is_stale_and_not_judged() -> None:
    """A producer stalled once: its broker's p99 keeps that request's time for minutes, as no
    new request moves it. After STALE_SECONDS unchanged it is dropped (said once), so the
    guard no longer halves for it and climbs back; a moving value is judged."""
    from executor.slo import STALE_SECONDS, without_stale

    reading = SloReading(produce_p99_ms={6: 7672.0, 2: 30.0})
    fresh, seen, dropped = without_stale(reading, {}, 100.0)
    assert fresh.produce_p99_ms == {6: 7672.0, 2: 30.0} and dropped == []
    later = SloReading(produce_p99_ms={6: 7672.0, 2: 31.5})
    fresh, seen, dropped = without_stale(later, seen, 100.0 + STALE_SECONDS - 1)
    assert fresh.produce_p99_ms == {6: 7672.0, 2: 31.5}
    fresh, seen, dropped = without_stale(later, seen, 100.0 + STALE_SECONDS)
    assert fresh.produce_p99_ms == {2: 31.5} and dropped == ["broker 6 produce p99"]
    assert seen[("produce_p99_ms", 2)] == (31.5, 100.0 + STALE_SECONDS - 1)
    moved = SloReading(produce_p99_ms={6: 7000.0})
    fresh, _, dropped = without_stale(moved, seen, 100.0 + STALE_SECONDS + 1)
    assert fresh.produce_p99_ms == {6: 7000.0} and dropped == []

    world = _world(moves=[Move("orders", 0, (1, 2), (3, 2), 400 * MB)])
    _once_copying(world, lambda w: w.metrics.produce_p99.__setitem__(3, 7672.0))
    assert _run(world) is RunOutcome.COMPLETED
    levels = [r["levels"].get("3", CAP) for r in world.sink.records if r.get("kind") == "guard"]
    assert levels[:3] == [CAP // 2, CAP // 4, CAP // 8]
    assert levels[-1] > CAP // 8 and levels[3:] == sorted(levels[3:])  # back up once stale
    notes = [e.message for e in world.events if e.kind is EventKind.NOTE]
    assert sum("broker 3 produce p99 has not changed" in n for n in notes) == 1, notes
