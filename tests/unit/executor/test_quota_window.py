"""Kafka's replication quota window: a move starts at once when each of its copies has an end
whose window is clean, and waits for the window only when both ends of a copy carried one
within it (executor.flows)."""

from __future__ import annotations

import itertools

import pytest

from executor.config import EventKind, ExecutorConfig
from executor.flows import Direction, QuotaWindows, move_ends
from executor.journal import RunOutcome
from executor.runner import Executor
from planner.result import Move
from tests.unit.executor.fakes import MB, World, make_world
from topology.errors import InputError


def _state_times(world: World) -> dict[tuple[str, str], float]:
    """When each (move, state) was journaled, by the fake clock."""
    return {(r["move"], r["state"]): float(r["at"]) for r in world.sink.records
            if r.get("kind") == "state"}


def _run(moves: list[Move] | None = None, **config: float) -> tuple[World, dict[tuple[str, str],
                                                                             float]]:
    world = make_world(moves, **config)
    report = Executor.start(world.plan, world.ports(), world.config, world.open_sink,
                            reporter=world.reporter).run()
    assert report.outcome is RunOutcome.COMPLETED
    assert not world.messages(EventKind.HOLD)
    return world, _state_times(world)


def test_a_move_with_a_clean_end_starts_as_soon_as_the_previous_is_done() -> None:
    """The standard moves never send from, or receive on, both ends of an earlier copy: no
    move waits for the window, and the first starts at once."""
    world, times = _run(quota_window_seconds=11.0)
    order = ["orders-0", "orders-1", "events-0"]
    for previous, following in itertools.pairwise(order):
        assert times[(following, "throttling")] - times[(previous, "done")] < 1.5
    assert not [m for m in world.messages(EventKind.NOTE) if "quota window" in m]


def test_a_copy_between_two_ends_that_just_carried_one_waits_for_the_window() -> None:
    """Broker 1 sent and broker 3 received the first copy; the second copies 1 -> 3 again, so
    neither quota would hold it: it starts a window after the first copy's bytes stopped."""
    moves = [Move("orders", 0, (1, 2), (3, 2), 30 * MB), Move("orders", 1, (1, 4), (3, 4), 20 * MB)]
    world, times = _run(moves, quota_window_seconds=11.0)
    first_flow_end = times[("orders-0", "verifying")]
    assert times[("orders-1", "throttling")] - first_flow_end >= 11.0
    assert times[("orders-1", "throttling")] - first_flow_end < 11.0 + 2.5
    notes = [m for m in world.messages(EventKind.NOTE) if "quota window" in m]
    assert len(notes) == 1 and "broker 1 out -> broker 3 in" in notes[0]


def test_without_a_window_nothing_waits() -> None:
    moves = [Move("orders", 0, (1, 2), (3, 2), 30 * MB), Move("orders", 1, (1, 4), (3, 4), 20 * MB)]
    _, times = _run(moves, quota_window_seconds=0.0)
    assert times[("orders-1", "throttling")] - times[("orders-0", "done")] < 1.5


def test_a_leadership_only_move_never_waits() -> None:
    """Reordering replicas copies nothing, so no throttled bytes can burst."""
    moves = [Move("orders", 0, (1, 2), (3, 2), 30 * MB), Move("orders", 1, (3, 1), (1, 3), 20 * MB)]
    _, times = _run(moves, quota_window_seconds=11.0)
    assert times[("orders-1", "throttling")] - times[("orders-0", "done")] < 1.5


def test_a_run_taken_over_assumes_every_window_in_use() -> None:
    """After a crash the last process may have been copying a moment ago."""
    windows = QuotaWindows(11.0, since=100.0)
    move = Move("orders", 0, (1, 2), (3, 2), 30 * MB)
    ends = move_ends(move, 1)
    assert windows.unbounded_flows(move, ends, 105.0) == ["broker 1 out -> broker 3 in"]
    assert windows.wait_left(ends, 105.0) == pytest.approx(6.0)
    assert windows.unbounded_flows(move, ends, 111.0) == []


def test_one_clean_end_bounds_each_copy() -> None:
    windows = QuotaWindows(11.0, since=0.0)
    move = Move("orders", 0, (1, 2), (3, 4), 30 * MB)  # 1 sends to 3 and 4
    ends = move_ends(move, 1)
    windows.use([(3, Direction.IN)], 100.0)
    assert windows.unbounded_flows(move, ends, 105.0) == []  # 1 is clean: its quota holds both
    windows.use([(1, Direction.OUT)], 100.0)
    assert windows.unbounded_flows(move, ends, 105.0) == ["broker 1 out -> broker 3 in"]


def test_the_last_move_skips_the_gate_unless_asked() -> None:
    _, times = _run(quota_window_seconds=11.0, cooldown_seconds=5.0)
    last = max({m for m, _ in times}, key=lambda m: times[(m, "throttling")])
    assert times[(last, "done")] == times[(last, "cooling_down")]
    _, kept = _run(quota_window_seconds=11.0, cooldown_seconds=5.0, final_gate=True)
    waited = kept[(last, "done")] - kept[(last, "cooling_down")]
    assert 5.0 <= waited < 11.0  # the cooldown, not the quota window: no move follows


def test_negative_window_is_refused() -> None:
    with pytest.raises(InputError, match="quota window"):
        ExecutorConfig(max_bytes_per_sec=1_000_000, quota_window_seconds=-1)
