"""`execute --cordon-drained`: the brokers a drain empties are cordoned (KIP-1066) before the
first move, journaled first with the values they had; a cancel, also one after a crash, puts
those values back; a completed drain leaves them cordoned."""

from __future__ import annotations

from dataclasses import replace

import pytest

from executor.config import Event, EventKind
from executor.journal import replay
from executor.records import RunOutcome
from executor.runner import Executor
from kafka_rebalance.core.ports import CORDONED_LOG_DIRS as CORDON
from planner.result import Move
from tests.unit.executor.fakes import MB, World, make_world

DRAIN = [Move("orders", 0, (1, 4), (1, 3), 10 * MB), Move("orders", 1, (4, 2), (3, 2), 10 * MB)]


def drain_world(prior: str | None = None) -> World:
    world = make_world(DRAIN)
    world.config = replace(world.config, cordon_brokers=frozenset({4}))
    if prior is not None:
        world.admin.broker_cfg[4] = {CORDON: prior}
    return world


def start(world: World) -> Executor:
    return Executor.start(world.plan, world.ports(), world.config, world.open_sink,
                          reporter=world.reporter)


def test_a_completed_drain_leaves_the_drained_broker_cordoned() -> None:
    world = drain_world()
    executor = start(world)
    assert world.admin.broker_cfg[4][CORDON] == "*"  # before the first move
    assert not any(name == "alter_partition_reassignments" for name, _ in world.admin.calls)
    assert executor.run().outcome is RunOutcome.COMPLETED
    assert world.admin.broker_cfg[4][CORDON] == "*"
    assert any("stay cordoned" in m for m in world.messages(EventKind.NOTE))
    assert replay(world.sink.records).cordons == {4: None}


@pytest.mark.parametrize("prior", [None, "/data/disk2"])
def test_a_cancel_puts_the_value_back(prior: str | None) -> None:
    world = drain_world(prior)

    def cancel(w: World, e: Event) -> None:
        if e.kind is EventKind.PROGRESS:
            w.sink.cancel = True
    world.hooks.append(cancel)
    assert start(world).run().outcome is RunOutcome.CANCELLED
    assert world.admin.broker_cfg.get(4, {}).get(CORDON) == prior
    assert replay(world.sink.records).cordons == {}


def test_a_cancel_after_a_crash_puts_the_value_back_from_the_journal() -> None:
    world = drain_world("/data/disk2")
    start(world)  # cordoned; the process dies before its first tick
    assert world.admin.broker_cfg[4][CORDON] == "*"
    again = Executor.for_cancel(world.sink.records, world.sink, world.ports(), world.config)
    again.cancel()
    assert again.run().outcome is RunOutcome.CANCELLED
    assert world.admin.broker_cfg[4][CORDON] == "/data/disk2"


def test_a_cordon_a_cancel_could_not_put_back_is_told_and_clear_throttles_puts_it_back(
) -> None:
    """The drained broker is offline when the cancel ends: its cordon stays, the run is no
    clean cancel, status says to run clear-throttles, and that puts the value back once the
    broker answers (a broker in service would otherwise take no new replica, silently)."""
    from executor.runner import clear_throttles_from
    from executor.status import summarize

    world = drain_world("/data/disk2")

    def kill_and_cancel(w: World, e: Event) -> None:
        if e.kind is EventKind.PROGRESS:
            w.admin.dead.add(4)
            w.sink.cancel = True
    world.hooks.append(kill_and_cancel)
    report = start(world).run()
    assert report.outcome is RunOutcome.CANCELLED and not report.cancelled_cleanly
    assert "the drain's cordon on broker(s) [4]" in report.throttles_left
    assert any("`rebalance clear-throttles` puts it back once they answer" in m
               for m in world.messages(EventKind.NOTE)), world.messages(EventKind.NOTE)
    assert world.admin.broker_cfg[4][CORDON] == "*"
    status = summarize(replay(world.sink.records))
    assert "clear-throttles" in status.next_step
    world.admin.dead.clear()  # back in service
    assert clear_throttles_from(world.sink.records, world.sink, world.ports(),
                                world.config) == []
    assert world.admin.broker_cfg[4][CORDON] == "/data/disk2"
    assert replay(world.sink.records).cordons == {}
    assert "clear-throttles" not in summarize(replay(world.sink.records)).next_step
