"""Milestones, copy pace and ETA from journal records, and the units they are shown in."""

from __future__ import annotations

import pytest

from executor.journal import end_record, header_record, replay, retry_record, state_record
from executor.plan import ExecutionPlan
from executor.records import Record, RunOutcome
from executor.schedule import COPY_EFFICIENCY, LEADERSHIP_SECONDS, schedule
from executor.state import MoveState
from executor.timeline import copy_pace, estimate_eta, timeline
from planner.result import Move
from topology.units import duration_text, rate_text, share_text, size_text

MB = 1_000_000
S = MoveState
PLAN = ExecutionPlan.of([Move("t", 0, (1, 2), (1, 3), 10 * MB),
                         Move("t", 1, (1, 2), (1, 4), 4 * MB),
                         Move("t", 2, (1, 2), (2, 1), 0),  # leadership only
                         Move("t", 3, (2, 3), (2, 4), 6 * MB)])
T0 = 1_700_000_000.0
DONE_PATH = (S.THROTTLING, S.SUBMITTED, S.COPYING, S.VERIFYING, S.UNTHROTTLING, S.ELECTING,
             S.COOLING_DOWN, S.DONE)


def journal(*steps: tuple[float, str, MoveState]) -> list[Record]:
    records = [header_record(PLAN, {"max_bytes_per_sec": 2 * MB})]
    records += [state_record(move, state, T0 + at) for at, move, state in steps]
    return records


def done(move: str, start: float, copying: float, copied: float, end: float) -> list[
    tuple[float, str, MoveState]
]:
    """A move's journaled path to done: started, copy from `copying` to `copied`, ended."""
    times = (start, start, copying, copied, copied, copied, copied, end)
    return [(at, move, state) for at, state in zip(times, DONE_PATH, strict=True)]


def test_each_moves_milestones_and_the_runs_span() -> None:
    records = journal(*done("t-0", 0, 1, 6, 20), (21, "t-1", S.THROTTLING),
                      (21, "t-1", S.SUBMITTED), (22, "t-1", S.COPYING))
    times = timeline(records)
    t0, t1 = times.of("t-0"), times.of("t-1")
    assert (t0.started_at, t0.copying_at, t0.copied_at, t0.ended_at) == (T0, T0 + 1, T0 + 6,
                                                                         T0 + 20)
    assert t0.copy_seconds == 5 and t0.seconds(T0 + 99) == 20
    assert t1.copy_seconds is None and t1.seconds(T0 + 30) == 9  # in flight: up to now
    assert times.of("t-3").started_at is None
    assert (times.started_at, times.ended_at, times.last_at) == (T0, None, T0 + 22)
    assert times.elapsed(T0 + 30) == 30
    ended = timeline([*records, end_record(RunOutcome.STOPPED, T0 + 25)])
    assert ended.ended_at == T0 + 25 and ended.elapsed(T0 + 99) == 25


def test_a_retry_starts_the_moves_timing_afresh_and_a_cut_copy_ends_at_cancelling() -> None:
    records = journal((0, "t-0", S.THROTTLING), (0, "t-0", S.SUBMITTED), (1, "t-0", S.COPYING),
                      (4, "t-0", S.CANCELLING), (5, "t-0", S.CANCELLED))
    cut = timeline(records).of("t-0")
    assert (cut.copy_seconds, cut.ended_at) == (3, T0 + 5)
    assert copy_pace(replay(records), timeline(records)).rate is None  # not in place: no pace
    records.append(retry_record("t-0", T0 + 50))
    assert timeline(records).of("t-0").started_at is None
    records += [state_record("t-0", S.THROTTLING, T0 + 60)]
    assert timeline(records).of("t-0").started_at == T0 + 60


def test_the_pace_is_bytes_in_place_over_their_copy_time() -> None:
    records = journal(*done("t-0", 0, 1, 6, 20), *done("t-1", 21, 22, 24, 30),
                      *done("t-2", 31, 31, 31, 32))
    pace = copy_pace(replay(records), timeline(records))
    assert (pace.bytes_copied, pace.seconds) == (14 * MB, 7.0)  # the leadership move adds none
    assert pace.rate == pytest.approx(2 * MB)


def test_eta_uses_the_observed_rate_counts_the_copy_in_flight_and_the_waits() -> None:
    # t-0 copied 10 MB in 5 s (2 MB/s observed); t-1 (4 MB) has copied for 1 s; t-2 (no
    # bytes) and t-3 (6 MB) wait. Left: 2 MB + 6 MB at 2 MB/s = 4 s; a settle wait follows
    # each data move that another follows: t-1 only (t-2 copies nothing, t-3 is the last).
    records = journal(*done("t-0", 0, 1, 6, 20), (21, "t-1", S.THROTTLING),
                      (21, "t-1", S.SUBMITTED), (22, "t-1", S.COPYING))
    run, times = replay(records), timeline(records)
    eta = estimate_eta(run, times, 5 * MB, 11.0, T0 + 23)
    assert eta is not None and eta.observed and eta.rate == pytest.approx(2 * MB)
    assert eta.bytes_left == 8 * MB and eta.waits == 11.0
    assert eta.seconds == pytest.approx(4 + 11 + LEADERSHIP_SECONDS)  # as the review counts t-2


def test_eta_falls_back_on_the_cap_and_is_none_when_nothing_is_left() -> None:
    records = journal((0, "t-0", S.THROTTLING))
    eta = estimate_eta(replay(records), timeline(records), 2 * MB, 0.0, T0 + 1)
    assert eta is not None and not eta.observed
    # the plan review's share of the cap: Kafka's quota delivered 90% over whole copies
    assert eta.rate == pytest.approx(2 * MB * COPY_EFFICIENCY)
    assert eta.seconds == pytest.approx(20 * MB / (2 * MB * COPY_EFFICIENCY)
                                        + LEADERSHIP_SECONDS)
    assert eta.bytes_left == 20 * MB
    assert estimate_eta(replay(records), timeline(records), None, 0.0, T0 + 1) is None
    finished = journal(*done("t-0", 0, 1, 6, 7), *done("t-1", 8, 9, 11, 12),
                       *done("t-2", 13, 13, 13, 14), *done("t-3", 15, 16, 19, 20))
    assert estimate_eta(replay(finished), timeline(finished), 2 * MB, 11.0, T0 + 30) is None


def test_side_by_side_the_eta_lays_the_moves_left_out_as_the_run_would() -> None:
    # t-0 is done at 2 MB/s. Left: t-1 (4 MB, 1 -> 4), t-3 (6 MB, 2 -> 4) share receiver 4,
    # and the leadership move t-2. One at a time: 10 MB at 2 MB/s plus a 5 s wait after t-1.
    # Side by side: t-1 and t-3 still queue on broker 4 (2 s + 5 s gap + 3 s), as the run would
    # lay them out; with t-3 moved to broker 5 (and no leadership move, which holds both
    # directions of brokers 1 and 2) they copy together.
    records = journal(*done("t-0", 0, 1, 6, 20))
    run, times = replay(records), timeline(records)
    serial = estimate_eta(run, times, 5 * MB, 5.0, T0 + 21)
    assert serial is not None and serial.seconds == pytest.approx(5 + 5 + LEADERSHIP_SECONDS)
    auto = estimate_eta(run, times, 5 * MB, 5.0, T0 + 21, "auto")
    assert auto is not None and auto.concurrency == "auto" and auto.bytes_left == 10 * MB
    assert auto.seconds == pytest.approx(LEADERSHIP_SECONDS + 2 + 5 + 3)  # t-2 holds broker 1
    apart = ExecutionPlan.of([*PLAN.moves[:2], Move("t", 3, (2, 3), (2, 5), 6 * MB)])
    records = [header_record(apart, {"max_bytes_per_sec": 2 * MB}),
               *[state_record(m, s, T0 + at) for at, m, s in done("t-0", 0, 1, 6, 20)]]
    auto = estimate_eta(replay(records), timeline(records), 5 * MB, 5.0, T0 + 21, "auto")
    assert auto is not None and auto.seconds == pytest.approx(3)


def test_the_eta_waits_out_a_receivers_quota_window_as_the_review_does() -> None:
    # t-0 is done at 2 MB/s. Left one at a time: t-1 (4 MB into broker 4) copies 2 s, its
    # settle wait is 5 s, the leadership move t-2 takes LEADERSHIP_SECONDS, and t-3 (6 MB, also
    # into broker 4) starts only once broker 4's 11 s quota window is clean: at 2 + 11 s.
    records = journal(*done("t-0", 0, 1, 6, 20))
    run, times = replay(records), timeline(records)
    windowed = estimate_eta(run, times, 5 * MB, 5.0, T0 + 21, 1, quota_window_seconds=11.0)
    assert windowed is not None and windowed.seconds == pytest.approx(2 + 11 + 3)
    assert windowed.waits == pytest.approx(11 - LEADERSHIP_SECONDS)
    unwindowed = estimate_eta(run, times, 5 * MB, 5.0, T0 + 21, 1)
    assert unwindowed is not None
    assert unwindowed.seconds == pytest.approx(2 + 5 + LEADERSHIP_SECONDS + 3)
    # the review's model of the same moves at the same rate gives the same time
    review = schedule(run.unfinished, 2 * MB, 1, 11.0, gap_seconds=5.0)
    assert review.eta_seconds == pytest.approx(windowed.seconds)


@pytest.mark.parametrize(("value", "size", "rate"), [
    (0, "0 B", "0 B/s"), (512, "512 B", "512 B/s"), (999.6, "1.00 kB", "1.00 kB/s"),
    (1_102_865, "1.10 MB", "1.10 MB/s"), (5_000_000, "5.00 MB", "5.00 MB/s"),
    (9_999_999, "10.0 MB", "10.0 MB/s"), (22_000_000, "22.0 MB", "22.0 MB/s"),
    (99_960_000, "100 MB", "100 MB/s"), (123_456_789, "123 MB", "123 MB/s"),
    (999_700_000, "1.00 GB", "1.00 GB/s"),
])
def test_sizes_and_rates_read_in_three_digits(value: float, size: str, rate: str) -> None:
    assert (size_text(value), rate_text(value)) == (size, rate)


@pytest.mark.parametrize(("seconds", "text"), [
    (0, "0s"), (9.4, "9s"), (59.6, "1m 00s"), (65, "1m 05s"), (3725, "1h 02m 05s"),
    (90_061, "1d 01h 01m"), (float("nan"), "-"),
])
def test_durations_read_as_hours_minutes_seconds(seconds: float, text: str) -> None:
    assert duration_text(seconds) == text


def test_shares_of_a_whole() -> None:
    assert share_text(1.84, 2.0) == "92%" and share_text(1.0, 0.0) == "-"
