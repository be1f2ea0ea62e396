"""`rebalance auto` without a cluster: flag errors, the lock against a second process, the state
directory's bookkeeping, and the loop of cycles (`kafka_rebalance.usecases.auto.auto_loop`) with a
fake cycle and clock."""

from __future__ import annotations

import math
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from typer.testing import CliRunner

import cli
from executor.journal import header_record, journal_of, replay, state_record
from executor.plan import ExecutionPlan
from executor.state import MoveState
from kafka_rebalance.autobalance.cycle import Action, Decision, RunLeft
from kafka_rebalance.autobalance.orchestrator import CycleResult
from kafka_rebalance.autobalance.statedir import StateDir, run_left_of, state_lock
from kafka_rebalance.core.errors import ClusterError, ExecutionError, InputError, RebalanceError
from kafka_rebalance.usecases.auto import LoopSettings, auto_loop
from planner.result import Move

runner = CliRunner()
CONN = ["--bootstrap", "127.0.0.1:1", "--prometheus", "http://127.0.0.1:1", "--max-mbps", "5"]


def invoke(*args: str) -> BaseException | None:
    return runner.invoke(cli.app, ["auto", *CONN, *args]).exception


@pytest.mark.parametrize(("args", "message"), [
    (["--window", "Mon-Fri 25:00-05:00"], "not a time of day"),
    (["--window", "Someday 01:00-05:00"], "unknown day"),
    (["--window", "daily 01:00-05:00", "--timezone", "Mars/Olympus"], "IANA timezone"),
    (["--window", "daily 01:00-05:00", "--efficiency", "2"], "--efficiency"),
    (["--window", "daily 01:00-05:00", "--tolerance", "0"], "tolerance"),
])
def test_bad_flags_are_input_errors(args: list[str], message: str, tmp_path: Path) -> None:
    error = invoke(*args, "--state-dir", str(tmp_path / "state"), "--once")
    assert isinstance(error, InputError)
    assert message in str(error)
    assert not (tmp_path / "state").exists()  # refused before anything is written


def test_a_second_auto_process_on_the_same_state_dir_is_refused(tmp_path: Path) -> None:
    state = StateDir(tmp_path / "state")
    with state_lock(state):
        error = invoke("--window", "daily 00:00-24:00", "--state-dir", str(state.path),
                       "--once")
        assert isinstance(error, ExecutionError)
        assert "another `rebalance auto`" in str(error)
    with state_lock(state):  # released: it can be taken again
        pass


def test_help_explains_windows_and_the_cycle() -> None:
    result = runner.invoke(cli.app, ["auto", "--help"])
    assert result.exit_code == 0
    assert "--window" in result.output and "maintenance windows" in result.output


def _run(*states: tuple[str, MoveState]) -> list[dict[str, object]]:
    plan = ExecutionPlan.of([Move("t", 0, (1, 2), (1, 3), 10), Move("t", 1, (1, 2), (1, 4), 10)])
    records = [header_record(plan, {"max_bytes_per_sec": 1})]
    records += [state_record(m, s, float(i)) for i, (m, s) in enumerate(states)]
    return records


def test_what_a_run_left() -> None:
    assert run_left_of(None) is RunLeft.NONE
    assert run_left_of(replay(_run())) is RunLeft.PENDING
    assert run_left_of(replay(_run(("t-0", MoveState.THROTTLING)))) is RunLeft.IN_FLIGHT
    done = [(name, s) for name in ("t-0", "t-1") for s in (
        MoveState.THROTTLING, MoveState.SUBMITTED, MoveState.COPYING, MoveState.VERIFYING,
        MoveState.UNTHROTTLING, MoveState.COOLING_DOWN, MoveState.DONE)]
    assert run_left_of(replay(_run(*done))) is RunLeft.NONE


def test_plans_are_named_by_time_and_the_latest_journal_is_found(tmp_path: Path) -> None:
    state = StateDir(tmp_path)
    at = datetime(2026, 11, 23, 1, 30, tzinfo=UTC)
    first = state.new_plan_path(at)
    assert first.name == "plan-20261123T013000Z.json"
    first.write_text("{}")
    assert state.new_plan_path(at).name == "plan-20261123T013000Z-1.json"
    assert state.latest_journal() is None
    journal_of(first).write_text("")
    later = state.new_plan_path(datetime(2026, 11, 24, 1, 0, tzinfo=UTC))
    later.write_text("{}")  # a plan without a journal (e.g. the run was refused)
    assert state.latest_journal() == journal_of(first)


class _Stop(Exception):
    pass


class StopClock:
    """A clock whose sleeps only advance it, recorded; the test's end raises _Stop."""

    def __init__(self, start: datetime, stop_after: int) -> None:
        self.t = start.timestamp()
        self.slept: list[float] = []
        self.stop_after = stop_after

    def now(self) -> float:
        return self.t

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.t += seconds
        if len(self.slept) == self.stop_after:
            raise _Stop


def cycles(*outcomes: CycleResult | RebalanceError) -> Callable[[], CycleResult]:
    """A cycle that returns (or raises) each outcome in turn."""
    pending = list(outcomes)

    def cycle() -> CycleResult:
        outcome = pending.pop(0)
        if isinstance(outcome, RebalanceError):
            raise outcome
        return outcome
    return cycle


NOON = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)
WAKE = datetime(2026, 11, 24, 1, 0, tzinfo=UTC)
OUTSIDE = CycleResult(Decision(Action.SLEEP, "outside", wake_at=WAKE))


def test_the_loop_survives_a_failed_cycle_and_sleeps_until_the_next_window() -> None:
    clock, said = StopClock(NOON, stop_after=2), []
    with pytest.raises(_Stop):
        auto_loop(cycles(ClusterError("cannot reach Kafka"), OUTSIDE),
                  loop=LoopSettings(interval_minutes=15), zone=ZoneInfo("Europe/Berlin"),
                  say=said.append, clock=clock)
    # after the failure: --interval; then until the window opens
    assert clock.slept == [15 * 60, (WAKE - NOON).total_seconds() - 15 * 60]
    assert said == ["cycle failed: cannot reach Kafka",
                    "next check at 2026-11-23 13:15:00 CET",
                    "next check at 2026-11-24 02:00:00 CET"]


def test_once_returns_the_cycle_and_raises_its_failure() -> None:
    clock = StopClock(NOON, stop_after=1)
    once = LoopSettings(once=True)
    assert auto_loop(cycles(OUTSIDE), loop=once, zone=UTC, say=print, clock=clock) is OUTSIDE
    with pytest.raises(ClusterError):
        auto_loop(cycles(ClusterError("cannot reach Kafka")), loop=once, zone=UTC, say=print,
                  clock=clock)
    assert clock.slept == []


def test_a_refused_input_ends_the_loop() -> None:
    clock = StopClock(NOON, stop_after=1)
    with pytest.raises(InputError):
        auto_loop(cycles(InputError("--capacities: no such file")), loop=LoopSettings(),
                  zone=UTC, say=print, clock=clock)
    assert clock.slept == []


@pytest.mark.parametrize("minutes", [0.0, -1.0, math.inf, math.nan, 1e10, 7 * 24 * 60 + 1])
def test_the_interval_must_be_positive_and_at_most_a_week(minutes: float) -> None:
    with pytest.raises(InputError, match="--interval must be minutes between 0 and a week"):
        LoopSettings(interval_minutes=minutes)


@pytest.mark.parametrize("states, left, cancelled_cleanly, failed", [
    ({"t-0": MoveState.DONE, "t-1": MoveState.CANCELLED}, (), True, True),
    ({"t-0": MoveState.CANCELLED, "t-1": MoveState.FAILED}, (), False, True),
    ({"t-0": MoveState.CANCELLED}, ("t-0",), False, True),
])
def test_a_run_cancelled_as_asked_is_told_apart_from_a_failed_one(
        states: dict[str, MoveState], left: tuple[str, ...], cancelled_cleanly: bool,
        failed: bool) -> None:
    """auto exits 8 for a run cancelled as asked (SIGTERM) with every throttle restored, as
    execute does, and 6 when a move failed or a throttle is left."""
    from executor.records import RunOutcome
    from executor.runner import RunReport

    report = RunReport(RunOutcome.CANCELLED, states, {}, left)
    result = CycleResult(Decision(Action.REBALANCE, "imbalanced"), report=report)
    assert (result.cancelled_cleanly, result.failed) == (cancelled_cleanly, failed)
