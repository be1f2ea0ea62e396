"""The review's timeline (executor.schedule): the run loop's rules, timed before the run."""

from __future__ import annotations

import itertools

import pytest

from executor.config import AUTO, DEFAULT_QUOTA_WINDOW_SECONDS
from executor.flows import Direction, move_ends
from executor.schedule import DEFAULT_GAP_SECONDS, plan_eta, schedule
from planner.planfile import PlanFile
from planner.result import Move
from report.plan_view import table_view
from report.review import eta_text, moves_table
from report.text import human_duration

RATE = 50e6


@pytest.mark.parametrize("which", ["small_plan", "big_plan"])
def test_one_at_a_time_in_plan_order_is_the_review_eta(which: str,
                                                       request: pytest.FixtureRequest) -> None:
    plan: PlanFile = request.getfixturevalue(which)
    timeline = schedule(plan.moves, RATE, 1, DEFAULT_QUOTA_WINDOW_SECONDS)
    starts = [slot.start for slot in timeline.moves]
    assert starts == sorted(starts)  # one at a time: plan order
    for first, second in itertools.pairwise(timeline.moves):
        assert second.start >= first.release  # never two at once
        gap = second.start - first.copy_end
        assert gap >= DEFAULT_GAP_SECONDS - 1e-6 or not first.move.bytes_moved
    assert timeline.eta_seconds >= plan.bytes_moved / RATE
    assert eta_text(plan, RATE).startswith(human_duration(timeline.eta_seconds) + " one move")
    review = table_view(moves_table(plan, 200, RATE))
    assert [row[-1].lstrip("+") for row in review.rows] == [
        human_duration(slot.copy_end) for slot in timeline.moves[:200]]


def _overlaps(slots: tuple[object, ...]) -> list[tuple[object, object]]:
    return [(a, b) for a, b in itertools.combinations(slots, 2)
            if a.start < b.release and b.start < a.release]  # type: ignore[attr-defined]


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
            assert sum(1 for s in timeline.moves if s.start <= slot.start < s.release) <= 3
    one = schedule(moves, RATE, 1, DEFAULT_QUOTA_WINDOW_SECONDS).eta_seconds
    assert timeline.eta_seconds < one


def test_auto_is_near_the_physical_limit_when_the_load_spreads() -> None:
    """Twelve brokers each send 4 moves to the one after them: every broker is busy at once,
    so the run takes 4 copies and 3 gaps, not 48; a gap here is the quota window, as each pair
    copies again between the same two ends."""
    moves = [Move("t", 12 * k + b, (b, (b + 6) % 12), ((b + 1) % 12, (b + 6) % 12), 300 * 10**6)
             for k in range(4) for b in range(12)]
    eta = plan_eta(moves, RATE, DEFAULT_QUOTA_WINDOW_SECONDS)
    assert eta.limit_seconds == pytest.approx(4 * 6.0)
    wait = max(DEFAULT_GAP_SECONDS, DEFAULT_QUOTA_WINDOW_SECONDS)
    assert eta.side_by_side.eta_seconds == pytest.approx(4 * 6.0 + 3 * wait)
    assert eta.one_at_a_time.eta_seconds == pytest.approx(48 * 6.0 + 47 * DEFAULT_GAP_SECONDS)


def test_a_copy_between_two_ends_just_used_waits_for_the_quota_window() -> None:
    moves = [Move("t", 0, (1, 2), (3, 2), 100), Move("t", 1, (1, 4), (3, 4), 200)]
    first, second = schedule(moves, 100.0, 1, 11.0, gap_seconds=2.0).moves
    assert (first.start, first.copy_end, first.release) == (0.0, 1.0, 3.0)
    assert (second.start, second.copy_end) == (12.0, 14.0)  # 1 -> 3 again: 11 s after 1.0
    clean = [Move("t", 0, (1, 2), (3, 2), 100), Move("t", 1, (4, 2), (3, 2), 200)]
    _, other = schedule(clean, 100.0, 1, 11.0, gap_seconds=2.0).moves
    assert other.start == 3.0  # broker 4 has never sent: its quota holds the copy at once


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
