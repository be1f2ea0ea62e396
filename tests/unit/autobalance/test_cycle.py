"""The cycle decision over values: windows, the last run's state and the imbalance verdict."""

from __future__ import annotations

from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from kafka_rebalance.autobalance.cycle import Action, Pace, RunLeft, decide_cycle
from kafka_rebalance.autobalance.imbalance import Verdict
from kafka_rebalance.autobalance.windows import parse_schedule
from kafka_rebalance.core.errors import InputError

ZONE = ZoneInfo("Europe/Berlin")
SCHEDULE = parse_schedule(["Mon-Fri 01:00-05:00"], ZONE)
MB = 1_000_000
PACE = Pace(cap_bytes_per_sec=10 * MB, efficiency=0.5)
DUE = Verdict(True, ("disk: broker 5 at 0%",))
BALANCED = Verdict(False, ("every resource within +/-10%",))


def at(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=ZONE)


def never() -> Verdict:
    raise AssertionError("the verdict must not be asked for")


def test_outside_a_window_it_sleeps_until_the_next_start_without_reading_the_cluster() -> None:
    decision = decide_cycle(at("2026-11-27T12:00"), SCHEDULE, RunLeft.NONE, never, PACE)
    assert decision.action is Action.SLEEP
    assert decision.wake_at == at("2026-11-30T01:00")  # Friday noon -> Monday 01:00
    assert "Mon 2026-11-30 01:00" in decision.reason


def test_outside_a_window_an_unfinished_run_waits_too() -> None:
    decision = decide_cycle(at("2026-11-24T06:00"), SCHEDULE, RunLeft.PENDING, never, PACE)
    assert decision.action is Action.SLEEP
    assert decision.wake_at == at("2026-11-25T01:00")


def test_outside_a_window_a_move_in_flight_is_finished_and_nothing_new_starts() -> None:
    now = at("2026-11-24T06:00")
    decision = decide_cycle(now, SCHEDULE, RunLeft.IN_FLIGHT, never, PACE)
    assert decision.action is Action.FINISH_IN_FLIGHT
    assert decision.finish_by == now


def test_inside_a_window_an_unfinished_run_is_resumed_until_the_window_ends() -> None:
    for left in (RunLeft.PENDING, RunLeft.IN_FLIGHT):
        decision = decide_cycle(at("2026-11-24T02:00"), SCHEDULE, left, never, PACE)
        assert decision.action is Action.RESUME
        assert decision.finish_by == at("2026-11-24T05:00")


def test_inside_a_window_a_balanced_cluster_needs_nothing() -> None:
    decision = decide_cycle(at("2026-11-24T02:00"), SCHEDULE, RunLeft.NONE,
                            lambda: BALANCED, PACE)
    assert decision.action is Action.BALANCED
    assert decision.verdict == BALANCED and decision.max_bytes is None


def test_inside_a_window_an_imbalance_gets_a_budget_from_the_time_left() -> None:
    decision = decide_cycle(at("2026-11-24T04:00"), SCHEDULE, RunLeft.NONE, lambda: DUE, PACE)
    assert decision.action is Action.REBALANCE
    assert decision.finish_by == at("2026-11-24T05:00")
    assert decision.max_bytes == 3600 * 10 * MB // 2  # an hour at 10 MB/s, half efficient
    assert "broker 5" in decision.reason
    later = decide_cycle(at("2026-11-24T04:30"), SCHEDULE, RunLeft.NONE, lambda: DUE, PACE)
    assert later.max_bytes == 1800 * 10 * MB // 2


def test_too_little_of_the_window_left_to_plan_waits_for_the_next() -> None:
    now = at("2026-11-24T05:00") - timedelta(seconds=30)
    decision = decide_cycle(now, SCHEDULE, RunLeft.NONE, never, PACE)
    assert decision.action is Action.SLEEP
    assert decision.wake_at == at("2026-11-25T01:00")
    # ... but an unfinished run still resumes (the executor stops in time)
    assert decide_cycle(now, SCHEDULE, RunLeft.PENDING, never, PACE).action is Action.RESUME


def test_budget_scales_with_cap_and_efficiency() -> None:
    assert Pace(2 * MB, 1.0).byte_budget(100) == 200 * MB
    assert Pace(2 * MB, 0.25).byte_budget(100) == 50 * MB
    assert Pace(2 * MB).byte_budget(-5) == 0


@pytest.mark.parametrize(("cap", "efficiency"), [(0, 0.5), (MB, 0.0), (MB, 1.5)])
def test_bad_pace_is_refused(cap: int, efficiency: float) -> None:
    with pytest.raises(InputError):
        Pace(cap, efficiency)
