"""The review's timeline (executor.schedule): the run loop's rules, timed before the run."""

from __future__ import annotations

import itertools

import pytest

from executor.config import AUTO, DEFAULT_QUOTA_WINDOW_SECONDS
from executor.flows import Direction, move_ends
from executor.schedule import (
    COPY_EFFICIENCY,
    DEFAULT_GAP_SECONDS,
    LEADERSHIP_SECONDS,
    START_SECONDS,
    expected_schedule,
    plan_eta,
    schedule,
)
from kafka_rebalance.report.plan_view import table_view
from kafka_rebalance.report.review import eta_text, moves_table
from planner.planfile import PlanFile
from planner.result import Move
from topology.units import duration_text

RATE = 50e6


@pytest.mark.parametrize("which", ["small_plan", "big_plan"])
def test_one_at_a_time_in_plan_order_is_the_review_eta(which: str,
                                                       request: pytest.FixtureRequest) -> None:
    plan: PlanFile = request.getfixturevalue(which)
    timeline = expected_schedule(plan.moves, RATE, 1, DEFAULT_QUOTA_WINDOW_SECONDS)
    starts = [slot.start for slot in timeline.moves]
    assert starts[0] == START_SECONDS
    assert starts == sorted(starts)  # one at a time: plan order
    for first, second in itertools.pairwise(timeline.moves):
        assert second.start >= first.copy_end  # never two copies at once
        shared = move_ends(first.move, None) & move_ends(second.move, None)
        if shared and second.start == first.copy_end:
            pass  # it took a broker over as the first copy ended: no gap
        else:
            gap = second.start - first.copy_end
            assert gap >= DEFAULT_GAP_SECONDS - 1e-6 or not first.move.bytes_moved
    assert timeline.eta_seconds >= plan.bytes_moved / RATE
    assert eta_text(plan, RATE).startswith(duration_text(timeline.eta_seconds) + " one move")
    review = table_view(moves_table(plan, 200, RATE))
    assert [row[-1].lstrip("+") for row in review.rows] == [
        duration_text(slot.copy_end) for slot in timeline.moves[:200]]


def _overlaps(slots: tuple[object, ...]) -> list[tuple[object, object]]:
    """Pairs whose copies run at the same time."""
    return [(a, b) for a, b in itertools.combinations(slots, 2)
            if a.start < b.copy_end and b.start < a.copy_end]  # type: ignore[attr-defined]


@pytest.mark.parametrize("concurrency", [3, AUTO])
def test_side_by_side_no_end_is_shared_and_it_is_faster(big_plan: PlanFile,
                                                        concurrency: int | str) -> None:
    moves = big_plan.moves[:400]
    timeline = schedule(moves, RATE, concurrency, DEFAULT_QUOTA_WINDOW_SECONDS)
    assert [s.index for s in timeline.moves] == list(range(1, len(moves) + 1))
    together = _overlaps(timeline.moves)
    assert together, "no two moves ever ran at once"
    for a, b in together:
        assert not move_ends(a.move, None) & move_ends(b.move, None), (a, b)  # type: ignore
    if concurrency == 3:
        for slot in timeline.moves:
            assert sum(1 for s in timeline.moves if s.start <= slot.start < s.copy_end) <= 3
    one = schedule(moves, RATE, 1, DEFAULT_QUOTA_WINDOW_SECONDS).eta_seconds
    assert timeline.eta_seconds < one


def test_auto_reaches_the_physical_limit_when_the_load_spreads() -> None:
    """Twelve brokers each send 4 moves to the one after them: every pair copies without a
    break (each move takes its pair over as the previous copy ends), so the run takes the
    busiest broker's bytes at the cap; one at a time it takes 48 copies and their gates."""
    moves = [Move("t", 12 * k + b, (b, (b + 6) % 12), ((b + 1) % 12, (b + 6) % 12), 300 * 10**6)
             for k in range(4) for b in range(12)]
    eta = plan_eta(moves, RATE, DEFAULT_QUOTA_WINDOW_SECONDS)
    assert eta.limit_seconds == pytest.approx(4 * 6.0)
    # the first copies start at once (the executor reads from Prometheus that nothing
    # copied into their receivers just before)
    # copies run at the share of the rate Kafka's quota delivers, after the run's start-up
    assert eta.side_by_side.eta_seconds == pytest.approx(
        START_SECONDS + eta.limit_seconds / COPY_EFFICIENCY)
    assert eta.one_at_a_time.eta_seconds == pytest.approx(
        START_SECONDS + 48 * 6.0 / COPY_EFFICIENCY + 47 * DEFAULT_GAP_SECONDS)
    assert eta.between_moves_seconds == pytest.approx(47 * DEFAULT_GAP_SECONDS)


def test_a_copy_into_a_receiver_that_just_received_waits_for_the_quota_window() -> None:
    moves = [Move("t", 0, (1, 2), (3, 2), 100), Move("t", 1, (2, 1), (2, 4), 100),
             Move("t", 2, (4, 1), (3, 1), 200)]
    first, second, third = schedule(moves, 100.0, 1, 11.0, gap_seconds=2.0).moves
    assert (first.start, first.copy_end, first.release) == (0.0, 1.0, 3.0)
    assert (second.start, second.copy_end, second.release) == (3.0, 4.0, 6.0)
    assert (third.start, third.copy_end) == (12.0, 14.0)  # into 3 again: 11 s after 1.0
    handed = [Move("t", 0, (1, 2), (3, 2), 100), Move("t", 1, (4, 2), (3, 2), 200)]
    first, following = schedule(handed, 100.0, 1, 11.0, gap_seconds=2.0).moves
    assert following.start == first.copy_end == 1.0  # takes 3 over: no gap, no wait
    assert first.release == 3.0  # its sender's gate still runs


def test_a_busy_broker_lets_a_later_free_move_go_first() -> None:
    moves = [Move("t", 0, (1, 2), (3, 2), 1000), Move("t", 1, (1, 4), (5, 4), 100),
             Move("t", 2, (6, 7), (8, 7), 100)]
    slots = schedule(moves, 100.0, 2, 0.0, gap_seconds=0.0).moves
    assert slots[2].start == 0.0  # free ends: starts beside the first
    assert slots[1].start == 10.0  # broker 1 sends for the first: waits for it
    assert (1, Direction.OUT) in move_ends(moves[1], None)


@pytest.mark.parametrize(("rate", "concurrency"), [(0.0, 1), (-1.0, 1), (1.0, 0)])
def test_a_bad_rate_or_concurrency_is_refused(rate: float, concurrency: int) -> None:
    with pytest.raises(ValueError):
        schedule([], rate, concurrency)


def test_leadership_only_moves_take_their_batch_time_and_no_gate() -> None:
    """300 leaderships took 9.4 s on the sandbox: the review counts about that, not nothing."""
    moves = [Move("t", n, (1, 2), (2, 1), 10**9) for n in range(300)]
    eta = plan_eta(moves, RATE, DEFAULT_QUOTA_WINDOW_SECONDS)
    assert eta.one_at_a_time.eta_seconds == pytest.approx(START_SECONDS + 300 * LEADERSHIP_SECONDS)
    assert 9.0 < 300 * LEADERSHIP_SECONDS < 10.0
    assert eta.between_moves_seconds == pytest.approx(0.0, abs=1e-6)


def test_the_review_waits_out_the_window_the_snapshot_read() -> None:
    """A snapshot that read each broker's quota window: the review times the plan with the
    longest among the brokers its moves copy between (as the run will read it), the plan file
    keeps it, and a plan without one is timed with Kafka's default."""
    from dataclasses import replace

    from kafka_rebalance.files.planfile import plan_from_dict, plan_to_dict
    from kafka_rebalance.report.review import quota_window, review_document, review_eta
    from planner.goals import Budget, Goals
    from planner.planfile import SolverInfo, make_plan_file
    from planner.result import SolverStatus
    from tests.unit.report.conftest import SMALL_MOVES, small_topology

    def planned(windows: dict[int, float]) -> PlanFile:
        topology = small_topology()
        brokers = [replace(b, quota_window_seconds=windows.get(b.id)) for b in topology.brokers]
        return make_plan_file(topology.with_brokers(brokers), SMALL_MOVES,
                              Goals(tolerance=0.10, add_brokers=frozenset({3, 6})), Budget(),
                              SolverInfo(SolverStatus.FEASIBLE, 1, 0.1, 1.0, ("none",)),
                              "2026-01-01T00:00:00+00:00")

    plan = planned({1: 3.0, 2: 3.0, 3: 4.0, 4: 3.0, 5: 3.0, 6: 3.0})
    assert plan.quota_window_seconds() == 4.0 == quota_window(plan)
    again = plan_from_dict(plan_to_dict(plan))
    assert again.quota_window_seconds() == 4.0
    assert review_eta(again, RATE) == plan_eta(again.moves, RATE, 4.0)
    assert review_document(again, RATE)["eta"]["quota_window_seconds"] == 4.0
    unread = planned({})
    assert quota_window(unread) == DEFAULT_QUOTA_WINDOW_SECONDS
    assert review_eta(unread, RATE) == plan_eta(unread.moves, RATE, DEFAULT_QUOTA_WINDOW_SECONDS)
