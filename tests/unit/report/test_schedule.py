"""The report's timeline: the review's ETA model, extended to concurrency."""

from __future__ import annotations

import itertools

import pytest

from executor.config import DEFAULT_QUOTA_WINDOW_SECONDS
from planner.planfile import PlanFile
from planner.result import Move
from report.plan_view import table_view
from report.review import eta_text, moves_table
from report.schedule import schedule
from report.text import human_duration

RATE = 50e6


@pytest.mark.parametrize("which", ["small_plan", "big_plan"])
def test_one_at_a_time_is_the_review_eta(which: str, request: pytest.FixtureRequest) -> None:
    plan: PlanFile = request.getfixturevalue(which)
    timeline = schedule(plan.moves, RATE, 1, DEFAULT_QUOTA_WINDOW_SECONDS)
    waits = sum(1 for m in plan.moves[:-1] if m.bytes_moved) * DEFAULT_QUOTA_WINDOW_SECONDS
    assert timeline.eta_seconds == pytest.approx(plan.bytes_moved / RATE + waits)
    assert eta_text(plan, RATE).startswith(human_duration(timeline.eta_seconds) + " (")
    # Each move ends where the review's moves table says it is done.
    review = table_view(moves_table(plan, 200, RATE))
    assert [row[-1].lstrip("+") for row in review.rows] == [
        human_duration(slot.copy_end) for slot in timeline.moves[:200]]
    starts = [slot.start for slot in timeline.moves]
    assert starts == sorted(starts)  # one at a time: plan order


def test_concurrency_keeps_brokers_apart_and_the_limit(big_plan: PlanFile) -> None:
    moves = big_plan.moves[:600]
    timeline = schedule(moves, RATE, 3, DEFAULT_QUOTA_WINDOW_SECONDS)
    slots = timeline.moves
    assert [s.index for s in slots] == list(range(1, len(moves) + 1))
    for first, second in itertools.combinations(slots, 2):
        overlap = first.start < second.release and second.start < first.release
        if overlap and first.release > first.start and second.release > second.start:
            shared = (set(first.move.current) | set(first.move.target)) & (
                set(second.move.current) | set(second.move.target))
            assert not shared, (first, second)
    for slot in slots:
        busy = sum(1 for s in slots if s.start <= slot.start < s.release)
        assert busy <= 3
    assert any(sum(1 for s in slots if s.start <= slot.start < s.release) > 1
               for slot in slots), "no two moves ever ran at once"
    assert timeline.eta_seconds < schedule(moves, RATE, 1,
                                           DEFAULT_QUOTA_WINDOW_SECONDS).eta_seconds


def test_a_move_waits_the_quota_window_only_when_moves_remain() -> None:
    moves = [Move("t", 0, (1, 2), (3, 2), 100), Move("t", 1, (1, 2), (1, 4), 200)]
    first, second = schedule(moves, 100.0, 1, 11.0).moves
    assert (first.start, first.copy_end, first.release) == (0.0, 1.0, 12.0)
    assert (second.start, second.copy_end, second.release) == (12.0, 14.0, 14.0)


def test_a_busy_broker_lets_a_later_disjoint_move_go_first() -> None:
    moves = [Move("t", 0, (1, 2), (3, 2), 1000), Move("t", 1, (2, 4), (5, 4), 100),
             Move("t", 2, (6, 7), (8, 7), 100)]
    slots = schedule(moves, 100.0, 2, 0.0).moves
    assert slots[2].start == 0.0  # disjoint: starts beside the first
    assert slots[1].start == 10.0  # shares broker 2: waits for the first


@pytest.mark.parametrize(("rate", "concurrency"), [(0.0, 1), (-1.0, 1), (1.0, 0)])
def test_a_bad_rate_or_concurrency_is_refused(rate: float, concurrency: int) -> None:
    with pytest.raises(ValueError):
        schedule([], rate, concurrency)
