"""Runs inside a maintenance window: no move starts that would copy past `finish_by`; the run
stops resumably with nothing left behind, and `resume` carries on later."""

from __future__ import annotations

from dataclasses import replace

from executor.records import RunOutcome
from executor.runner import Executor
from executor.state import MoveState
from tests.unit.executor.fakes import make_world


def test_a_move_that_would_end_after_the_window_is_not_started() -> None:
    # moves of 30, 20 and 10 MB at 10 MB/s: 3 s, 2 s and 1 s of copying
    world = make_world()
    t0 = world.clock.now()
    world = make_world(finish_by=t0 + 5.0)
    report = Executor.start(world.plan, world.ports(), world.config, world.open_sink,
                            reporter=world.reporter).run()
    assert report.outcome is RunOutcome.STOPPED
    assert report.states["orders-0"] is MoveState.DONE
    assert report.states["orders-1"] is MoveState.PENDING
    assert report.states["events-0"] is MoveState.PENDING
    assert report.throttles_left == ()
    assert world.admin.replicas()["orders-1"] == (2, 3)  # untouched
    assert not world.admin.configs()[0] and not world.admin.configs()[1]
    assert any("orders-1 needs about 2 s" in e.message and "resume" in e.message
               for e in world.events)

    later = replace(world.config, finish_by=None)
    resumed = Executor.resume(world.sink.records, world.sink, world.ports(), later).run()
    assert resumed.outcome is RunOutcome.COMPLETED
    assert world.admin.replicas()["orders-1"] == (2, 4)


def test_a_window_wide_enough_runs_everything() -> None:
    world = make_world()
    world = make_world(finish_by=world.clock.now() + 3600)
    report = Executor.start(world.plan, world.ports(), world.config, world.open_sink).run()
    assert report.outcome is RunOutcome.COMPLETED


def test_a_closed_window_starts_nothing() -> None:
    world = make_world()
    world = make_world(finish_by=world.clock.now() - 1)
    report = Executor.start(world.plan, world.ports(), world.config, world.open_sink).run()
    assert report.outcome is RunOutcome.STOPPED and report.done == 0
    assert not [n for n, _ in world.admin.calls if n.startswith("alter")]
