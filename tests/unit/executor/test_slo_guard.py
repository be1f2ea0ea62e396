"""The SLO guard in a run (fake cluster and Prometheus): a breach lowers the rates of the copies
through that broker while they copy, recovery raises them back, each decision is journaled and
reported, the journal keeps the move's own rates, and every throttle is restored at the end."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from executor.config import Event, EventKind
from executor.journal import replay
from executor.records import RunOutcome
from executor.runner import Executor
from executor.slo import SloPolicy
from executor.throttle import FOLLOWER_RATE, LEADER_RATE
from executor.timeline import timeline
from kafka_rebalance.commands.run_report import summary_head
from planner.result import Move
from tests.unit.executor.fakes import MB, World, make_world

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
    def hurt(w: World) -> None:
        w.metrics.produce_p99[broker] = 900.0
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
    assert "produce p99 900 ms > 500 ms" in str(guards[0]["changes"])
    # the journal keeps the move's own rates: the guard's are an overlay
    throttling = next(r for r in world.sink.records if r.get("state") == "throttling")
    assert json.dumps(throttling["throttle"]).count(str(CAP)) >= 2
    events = [e for e in world.events if e.kind is EventKind.GUARD]
    assert [(e.broker, e.rate, e.state) for e in events] == [
        (3, CAP // 2, "lowered"), (3, CAP // 4, "lowered"), (3, CAP // 8, "lowered")]
    assert world.admin.configs() == before  # restored exactly
    run = replay(json.loads(json.dumps(world.sink.records)))
    assert (run.guard_steps, run.guard_lowest) == (3, CAP // 8)
    head = summary_head(run, timeline(world.sink.records), "completed", CAP, world.clock.now())
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


def test_under_replication_outside_the_moves_slows_every_end() -> None:
    world = _world()

    def urp(w: World) -> None:  # a partition led by broker 4, which the move does not touch
        w.metrics.urp[4] = 1.0
    _once_copying(world, urp)
    seen = _watch(world)
    assert _run(world) is RunOutcome.COMPLETED
    assert min(int(f) for _, f, _ in seen if f) < CAP
    assert min(int(ld) for _, _, ld in seen if ld) < CAP
    first = next(r for r in world.sink.records if r.get("kind") == "guard")
    assert set(first["levels"]) == {"1", "3"}  # the ends; broker 2 keeps its replica


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
