"""Status from a journal."""

from __future__ import annotations

import pytest

from executor.config import Event, EventKind
from executor.journal import replay
from executor.records import RunOutcome
from executor.runner import Executor, RunReport
from executor.state import MoveState
from executor.status import summarize
from tests.unit.executor.fakes import MB, World, make_world


def test_status_of_a_completed_run() -> None:
    world = make_world()
    Executor.start(world.plan, world.ports(), world.config, world.open_sink).run()
    status = summarize(replay(world.sink.records))
    assert status.outcome is RunOutcome.COMPLETED
    assert status.counts == {MoveState.DONE: 3}
    assert status.bytes_done == status.bytes_total == 60 * MB
    assert status.notable == () and status.next_step.startswith("nothing")


def test_status_of_a_stopped_run_names_the_failed_move() -> None:
    world = make_world()

    def kill(w: World, e: Event) -> None:
        if e.kind is EventKind.PROGRESS and e.move == "orders-1":
            w.admin.dead.add(4)
    world.hooks.append(kill)
    Executor.start(world.plan, world.ports(), world.config, world.open_sink,
                   reporter=world.reporter).run()
    status = summarize(replay(world.sink.records))
    assert status.outcome is RunOutcome.STOPPED
    assert status.bytes_done == 30 * MB
    assert [(m.index, m.name, m.state) for m in status.notable] == [
        (2, "orders-1", MoveState.FAILED)]
    assert status.throttles_left == ("orders-1",)
    assert "clear-throttles" in status.next_step
    assert "went offline" in status.end_reason


def test_the_next_step_of_an_unfinished_run_follows_whether_an_executor_holds_it() -> None:
    world = make_world()
    Executor.start(world.plan, world.ports(), world.config, world.open_sink).run()
    unfinished = summarize(replay(world.sink.records[:-1]))  # the end record not written yet
    assert unfinished.outcome is None
    assert unfinished.next_step_for(True).startswith("nothing: an executor is running")
    assert unfinished.next_step_for(False).startswith("`rebalance resume` continues the "
                                                      "interrupted run")
    assert unfinished.next_step_for(None).startswith("if no executor is running")


@pytest.mark.parametrize(("outcome", "states", "left", "clean"), [
    (RunOutcome.CANCELLED, {"a": MoveState.DONE, "b": MoveState.CANCELLED}, (), True),
    (RunOutcome.CANCELLED, {"a": MoveState.FAILED, "b": MoveState.CANCELLED}, (), False),
    (RunOutcome.CANCELLED, {"a": MoveState.CANCELLED}, ("a",), False),
    (RunOutcome.STOPPED, {"a": MoveState.CANCELLED}, (), False),
    (RunOutcome.COMPLETED, {"a": MoveState.DONE}, (), False),
])
def test_a_run_is_cancelled_cleanly_only_as_asked_with_nothing_failed_or_left(
        outcome: RunOutcome, states: dict[str, MoveState], left: tuple[str, ...],
        clean: bool) -> None:
    """What execute, resume and auto exit 8 for (not an error, not a completed run)."""
    assert RunReport(outcome, states, {}, left).cancelled_cleanly is clean
