"""The run report's values from a journal: spans, copy rates, caps, gate holds, rate changes."""

from __future__ import annotations

import pytest

from executor.records import Record, RunOutcome
from executor.state import MoveState
from kafka_rebalance.core.errors import ExecutionError
from kafka_rebalance.report.charts import copy_rate_chart
from kafka_rebalance.report.run_view import CapSegment, CopySegment, GuardSegment, Phase, run_view

MB = 1_000_000
S = MoveState


def test_a_stopped_run_in_full(finished_run: list[Record]) -> None:
    view = run_view(finished_run)
    assert view.outcome is RunOutcome.STOPPED and view.run_id == "run0123456789abc"
    assert view.elapsed == 140.0 and view.started_at == finished_run[1]["at"]
    assert [(m.move.name, m.state, m.attempts) for m in view.moves] == [
        ("orders-0", S.DONE, 1), ("orders-1", S.DONE, 1), ("events-0", S.CANCELLED, 1),
        ("events-1", S.PENDING, 0)]
    first = view.moves[0]
    assert [(s.state, s.start, s.end) for s in first.spans] == [
        (S.THROTTLING, 0, 1), (S.SUBMITTED, 1, 2), (S.COPYING, 2, 42), (S.VERIFYING, 42, 43),
        (S.UNTHROTTLING, 43, 44), (S.ELECTING, 44, 45), (S.COOLING_DOWN, 45, 72)]
    assert first.spans[-1].phase is Phase.GATE and first.copy_seconds == 40
    assert (first.started, first.ended) == (0, 72)
    # the gate after orders-0 held 27 s, after orders-1 11 s (the cooldown is 0: the quota
    # window no longer follows each move, it only delays a start whose ends both just copied)
    assert [m.gate_hold for m in view.moves] == [27.0, 11.0, 0.0, 0.0]
    assert view.gate_held == (first, view.moves[1])
    assert view.moves[2].reason == "broker(s) [6] went offline during the move"
    assert view.moves[3].spans == () and view.moves[3].started is None


def test_copy_rates_and_caps_per_receiving_broker(finished_run: list[Record]) -> None:
    view = run_view(finished_run)
    assert view.copies == (CopySegment(3, "orders-0", 2, 42, 40 * MB),
                           CopySegment(6, "orders-1", 82, 112, 30 * MB))
    assert [c.bytes_per_sec for c in view.copies] == [1 * MB, 1 * MB]
    assert view.caps == (CapSegment(3, "orders-0", 0, 44, MB),
                         CapSegment(6, "orders-1", 80, 92, MB),
                         CapSegment(6, "orders-1", 92, 114, MB // 2),
                         CapSegment(6, "events-0", 130, 138, MB))
    change = view.rate_changes[0]
    assert (change.at, change.move, change.broker, change.old, change.new) == (
        92, "orders-1", 6, MB, MB // 2)
    assert view.target_brokers == (3, 6) and view.cap_bytes_per_sec == MB
    assert view.notes == ((139.0, "a <note> from the operator"),)
    assert view.status.counts == {S.DONE: 2, S.CANCELLED: 1, S.PENDING: 1}


def test_a_running_move_is_drawn_up_to_now(running_run: list[Record]) -> None:
    start = float(running_run[1]["at"])
    view = run_view(running_run, now=start + 20)
    assert view.outcome is None and view.elapsed == 20
    assert view.moves[0].state is S.COPYING and view.moves[0].spans[-1].end == 20
    assert view.caps == (CapSegment(3, "orders-0", 0, 20, MB),)
    assert view.copies == ()  # not finished: no rate yet
    assert run_view(running_run).elapsed == 2  # without `now`: the last record


def test_a_retried_move_counts_its_attempts(finished_run: list[Record]) -> None:
    at = float(finished_run[-1]["at"])
    records = [*finished_run, {"kind": "resume", "at": at + 1},
               {"kind": "retry", "move": "events-0", "at": at + 2},
               {"kind": "state", "move": "events-0", "state": "throttling", "at": at + 3}]
    view = run_view(records, now=at + 5)
    retried = view.moves[2]
    assert retried.attempts == 2 and retried.state is S.THROTTLING
    assert retried.spans[-1].start == at + 3 - float(finished_run[1]["at"])


def test_a_journal_that_does_not_replay_is_refused(finished_run: list[Record]) -> None:
    bad = [*finished_run[:3], {"kind": "state", "move": "orders-0", "state": "done", "at": 1.0}]
    with pytest.raises(ExecutionError, match="illegal state change"):
        run_view(bad)


def _with_guard(records: list[Record], levels: list[tuple[float, dict[str, int]]]) -> list[Record]:
    t0 = float(records[1]["at"])
    guard = [{"kind": "guard", "levels": lv, "changes": [f"level {lv}"], "at": t0 + at}
             for at, lv in levels]
    return [records[0], *sorted([*records[1:], *guard], key=lambda r: float(r["at"]))]


def test_the_slo_guard_ceiling_per_broker_from_its_records(finished_run: list[Record]) -> None:
    records = _with_guard(finished_run, [(85, {"6": MB // 2}),
                                         (95, {"6": 3 * MB // 4, "3": MB // 4}),
                                         (105, {})])
    view = run_view(records)
    assert view.guard == (GuardSegment(3, 95, 105, MB // 4), GuardSegment(6, 85, 95, MB // 2),
                          GuardSegment(6, 95, 105, 3 * MB // 4))
    assert "SLO guard ceiling" in copy_rate_chart(view)
    assert "SLO guard ceiling" not in copy_rate_chart(run_view(finished_run))


def test_a_ceiling_still_in_force_is_drawn_to_the_end(running_run: list[Record]) -> None:
    start = float(running_run[1]["at"])
    view = run_view(_with_guard(running_run, [(1.5, {"3": MB // 8})]), now=start + 20)
    assert view.guard == (GuardSegment(3, 1.5, 20, MB // 8),)
