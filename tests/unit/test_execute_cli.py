"""The execute family of commands without a cluster: journal lookup, status from a journal,
cancel of a run held by another executor, flag checks, and the progress arithmetic."""

from __future__ import annotations

import os
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path

import pytest
from typer.testing import CliRunner

import cli
from executor.config import Event, EventKind, ExecutorConfig, RunOverrides
from executor.journal import (
    JournalFile,
    find_journal,
    header_record,
    header_settings,
    journal_in_use,
    replay,
    state_record,
)
from executor.plan import ExecutionPlan
from executor.progress import ETA_EVERY_S, ProgressState, progress_of
from executor.state import MoveState
from kafka_rebalance.core.errors import ExecutionError, InputError
from kafka_rebalance.report.run_progress import render_progress
from kafka_rebalance.usecases.run_settings import config_from_flags, parse_finish_by
from planner.result import Move

runner = CliRunner()
MB = 1_000_000
CONN = ["--bootstrap", "127.0.0.1:1", "--prometheus", "http://127.0.0.1:1"]


def _plan() -> ExecutionPlan:
    return ExecutionPlan.of([Move("t", 0, (1, 2), (1, 3), 5 * MB),
                             Move("t", 1, (1, 2), (1, 4), 3 * MB)])


def _journal(path: Path, *states: tuple[str, MoveState]) -> JournalFile:
    plan = _plan()
    journal = JournalFile.create(path, header_record(plan, {"max_bytes_per_sec": 2 * MB,
                                                            "concurrency": 1,
                                                            "cooldown_seconds": 5.0,
                                                            "gate_margin": 0.2}))
    for at, (move, state) in enumerate(states):
        journal.append(state_record(move, state, float(at)))
    return journal


def test_journal_path_defaults_next_to_the_plan(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                                ) -> None:
    assert find_journal(tmp_path / "p.json", None) == tmp_path / "p.json.journal"
    assert find_journal(tmp_path / "p.json", tmp_path / "x") == tmp_path / "x"
    monkeypatch.chdir(tmp_path)
    with pytest.raises(InputError, match="no journal given"):
        find_journal(None, None)
    (tmp_path / "a.json.journal").write_text("")
    assert find_journal(None, None).name == "a.json.journal"
    (tmp_path / "b.json.journal").write_text("")
    with pytest.raises(InputError, match="several journals"):
        find_journal(None, None)


def test_status_reads_the_journal(tmp_path: Path) -> None:
    path = tmp_path / "run.journal"
    journal = _journal(path, ("t-0", MoveState.THROTTLING), ("t-0", MoveState.SUBMITTED),
                       ("t-0", MoveState.COPYING))
    journal.close()
    result = runner.invoke(cli.app, ["status", "--journal", str(path)])
    assert result.exit_code == 0, result.output
    assert "copying" in result.output and "t-0" in result.output
    assert "0 B of 8.00 MB moved" in result.output
    assert "rebalance resume" in result.output  # killed run: the next step is named
    assert "an executor is running" not in result.output
    assert "interrupted: no executor holds the journal" in " ".join(result.output.split())


def test_cancel_while_an_executor_holds_the_journal_asks_it(tmp_path: Path) -> None:
    path = tmp_path / "run.journal"
    journal = _journal(path, ("t-0", MoveState.THROTTLING))  # holds the lock, like a run
    try:
        assert journal_in_use(path)
        result = runner.invoke(cli.app, ["cancel", "--journal", str(path), *CONN])
        assert result.exit_code == 0, result.output
        assert "asked the executor" in result.output
        assert journal.cancel_requested()
        status = runner.invoke(cli.app, ["status", "--journal", str(path)])
        assert "an executor is running" in status.output
        assert "interrupted" not in status.output and "running" in status.output
    finally:
        journal.close()
    assert not journal_in_use(path)


def test_resume_of_a_journal_in_use_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "run.journal"
    journal = _journal(path)
    try:
        result = runner.invoke(cli.app, ["resume", "--journal", str(path), *CONN])
        assert isinstance(result.exception, ExecutionError)
        assert "in use by a running executor" in str(result.exception)
    finally:
        journal.close()


@pytest.mark.parametrize(("flags", "message"), [
    (["--max-mbps", "0"], "--max-mbps must be a positive finite number"),
    (["--max-mbps", "1e-300"], "--max-mbps 1e-300 is under one byte per second"),
    (["--max-mbps", "5", "--concurrency", "0"],
     "--concurrency must be a whole number of at least 1, or auto"),
    (["--max-mbps", "5", "--finish-by", "24:00"], "not a time of day"),
    (["--max-mbps", "5", "--adaptive"], "--adaptive needs --capacities"),
    (["--max-mbps", "5", "--gate-samples", "0"], "at least 1 consecutive sample"),
    (["--max-mbps", "5", "--take-over-lease", " "], "--take-over-lease is empty"),
])
def test_execute_checks_flags_before_touching_anything(tmp_path: Path, flags: list[str],
                                                       message: str) -> None:
    """A bad flag is named before the plan is read (it does not exist here) or the cluster
    contacted (CONN points nowhere)."""
    result = runner.invoke(cli.app, ["execute", str(tmp_path / "missing.json"), *CONN, *flags])
    assert isinstance(result.exception, InputError), result.output
    assert message in str(result.exception)
    assert not list(tmp_path.iterdir())


def test_help_says_max_mbps_is_megabytes_per_second() -> None:
    result = runner.invoke(cli.app, ["execute", "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0
    assert "MB/s" in result.output and "10^6 bytes/s" in result.output
    assert "resume" in result.output and "cancel" in result.output


def test_a_resumed_config_is_the_runs_own_but_for_the_overrides(tmp_path: Path) -> None:
    plan = _plan()
    records = [header_record(plan, {"max_bytes_per_sec": 2 * MB, "concurrency": 1,
                                    "cooldown_seconds": 5.0, "gate_margin": 0.2,
                                    "gate_consecutive": 4})]
    config = ExecutorConfig.from_journal(header_settings(records),
                                         overrides=RunOverrides(poll_seconds=0.5))
    assert config.max_bytes_per_sec == 2 * MB
    assert config.cooldown_seconds == 5.0 and config.poll_seconds == 0.5
    assert config.gate.margin == 0.2 and config.gate.consecutive == 4
    faster = RunOverrides(max_bytes_per_sec=3_500_000)
    assert ExecutorConfig.from_journal(header_settings(records),
                                       overrides=faster).max_bytes_per_sec == 3_500_000
    with pytest.raises(InputError, match="--max-mbps"):
        ExecutorConfig.from_journal({}, overrides=RunOverrides())


def test_resume_keeps_every_gate_setting_of_the_run() -> None:
    """What a run was started with (gate timeout, p99 SLO, final gate, quota window) comes back
    from the journal header, so `resume` gates the rest of the run the same way."""
    started = config_from_flags(max_mbps=2.0, cooldown=3.0, gate_margin=0.25,
                                gate_floor_mbps=0.5, gate_samples=5, gate_timeout=120.0,
                                produce_p99_max_ms=40.0, quota_window=7.0, final_gate=True)
    settings = header_record(_plan(), started.to_journal())["settings"]
    resumed = ExecutorConfig.from_journal(settings, overrides=RunOverrides())
    assert resumed.gate == started.gate
    assert resumed.gate_timeout_seconds == 120.0
    assert resumed.quota_window_seconds == 7.0 and resumed.final_gate
    assert resumed.cooldown_seconds == 3.0


def _event(kind: EventKind, move: str, index: int, done: int = 0, state: str = "") -> Event:
    return Event(kind, f"{move}: {state}", move, index, 2, done, 5 * MB if index == 1
                 else 3 * MB, state)


def test_progress_counts_bytes_rate_and_eta() -> None:
    p = ProgressState(2, 8 * MB, 1 * MB)
    p.fold(_event(EventKind.STATE, "t-0", 1, state="throttling"), 0.0)
    assert p.eta_seconds() == pytest.approx(8.0)  # the cap until a rate is measured
    p.fold(_event(EventKind.PROGRESS, "t-0", 1, 0), 1.0)
    p.fold(_event(EventKind.PROGRESS, "t-0", 1, 2 * MB), 3.0)
    assert p.rate() == pytest.approx(1 * MB)
    assert p.bytes_moved == 2 * MB
    assert p.eta_seconds() == pytest.approx(6.0)
    p.fold(_event(EventKind.STATE, "t-0", 1, state="done"), 6.0)
    assert (p.moves_done, p.bytes_moved) == (1, 5 * MB)
    p.fold(_event(EventKind.STATE, "t-1", 2, state="throttling"), 7.0)
    p.fold(_event(EventKind.GATE, "t-1", 2, state="hold"), 7.5)
    assert (p.current, p.current_index, p.current_total) == ("t-1", 2, 3 * MB)
    assert p.rate() is None and "hold" in p.gate
    text = str(render_progress(p).columns[1]._cells)
    assert "2 of 2" in text and "5.00 MB of 8.00 MB" in text


def test_cli_main_maps_errors_to_exit_codes(tmp_path: Path) -> None:
    import subprocess
    import sys

    result = subprocess.run([sys.executable, "-c", "import cli; cli.main()", "status",
                             "--journal", str(tmp_path / "none.journal")],
                            capture_output=True, text=True, timeout=60,
                            cwd=Path(cli.__file__).parent, env={**os.environ})
    assert result.returncode == InputError.exit_code  # a path given that names nothing
    assert "no journal at" in result.stderr


def test_resume_of_an_adaptive_run_needs_capacities(tmp_path: Path) -> None:
    path = tmp_path / "run.journal"
    JournalFile.create(path, header_record(_plan(), {"max_bytes_per_sec": MB,
                                                     "adaptive": True})).close()
    result = runner.invoke(cli.app, ["resume", "--journal", str(path), *CONN])
    assert isinstance(result.exception, InputError)
    assert "--capacities" in str(result.exception)
    assert not journal_in_use(path)  # the lock is released on the way out


def test_progress_view_on_a_terminal_and_in_a_pipe() -> None:
    import io

    from rich.console import Console

    from kafka_rebalance.report.run_progress import ProgressView

    for terminal in (True, False):
        out = io.StringIO()
        console = Console(file=out, force_terminal=terminal, width=120)
        view = ProgressView(console, ProgressState(2, 8 * MB, MB), clock=iter(range(100)).__next__)
        with view:
            view(_event(EventKind.STATE, "t-0", 1, state="throttling"))
            view(_event(EventKind.PROGRESS, "t-0", 1, 2 * MB))
            view(_event(EventKind.GATE, "t-0", 1, state="wait"))
        text = out.getvalue()
        assert "[1/2] t-0: started (5.00 MB to copy)" in text
        if terminal:
            assert "all moves" in text and "2.00 MB of 8.00 MB" in text  # the live panel
            assert "% copied" not in text
        else:
            assert "40% copied (2.00 MB of 5.00 MB" in text  # a line per quarter in a pipe
            assert "all moves" not in text


@pytest.mark.parametrize(("text", "expected"), [
    ("05:00", datetime(2026, 11, 24, 5, 0, tzinfo=UTC)),  # 05:00 has passed today: tomorrow
    ("23:30", datetime(2026, 11, 23, 23, 30, tzinfo=UTC)),
    ("2026-11-23T12:00", datetime(2026, 11, 23, 12, 0, tzinfo=UTC)),
    ("2026-11-23T12:00+01:00", datetime(2026, 11, 23, 11, 0, tzinfo=UTC)),
])
def test_finish_by_is_the_next_such_time(text: str, expected: datetime) -> None:
    now = datetime(2026, 11, 23, 9, 15, tzinfo=UTC)
    assert parse_finish_by(text, now) == expected.timestamp()


@pytest.mark.parametrize(("text", "message"), [
    ("25:00", "not a time of day"), ("tomorrow", "HH:MM or an ISO 8601"),
    ("2026-11-23T08:00", "already past"),
])
def test_finish_by_refuses_what_it_cannot_use(text: str, message: str) -> None:
    with pytest.raises(InputError, match=message):
        parse_finish_by(text, datetime(2026, 11, 23, 9, 15, tzinfo=UTC))


def test_progress_of_moves_side_by_side_keeps_each_rate_and_counts_both() -> None:
    """Two copies report in turn: neither resets the other's rate; the panel's rate is both
    together, bytes count both, and the ETA is the run's model over what each has left."""
    asked: list[tuple[dict[str, float], float, float]] = []

    def model(left: Mapping[str, float], rate: float, window: float) -> float:
        asked.append((dict(left), rate, window))
        return 42.0
    p = ProgressState(2, 8 * MB, 1 * MB, left={"t-0": 5 * MB, "t-1": 3 * MB}, eta_model=model,
                      quota_window_seconds=7.0)
    p.fold(_event(EventKind.STATE, "t-0", 1, state="throttling"), 0.0)
    p.fold(_event(EventKind.STATE, "t-1", 2, state="throttling"), 0.0)
    for second in range(1, 5):
        p.fold(_event(EventKind.PROGRESS, "t-0", 1, second * MB), float(second))
        p.fold(_event(EventKind.PROGRESS, "t-1", 2, second * MB // 2), float(second) + 0.5)
    assert p.rate() == pytest.approx(1.5 * MB)  # 1 MB/s + 0.5 MB/s, neither reset
    assert p.bytes_moved == 4 * MB + 2 * MB
    assert p.eta_seconds() == 42.0
    assert asked[-1] == ({"t-0": 1 * MB, "t-1": 1 * MB}, pytest.approx(0.75 * MB), 7.0)
    text = str(render_progress(p).columns[1]._cells)
    assert "2 in flight: t-0 (throttling, 80%), t-1 (throttling, 67%)" in text
    p.fold(_event(EventKind.STATE, "t-0", 1, state="done"), 5.0)
    assert p.moves_done == 1 and p.bytes_moved == 5 * MB + 2 * MB and "t-0" not in p.left


def test_the_panels_eta_is_laid_out_again_only_every_few_seconds_and_counts_down() -> None:
    """Laying out thousands of moves takes seconds: the panel redraws twice a second from the
    last layout, counted down by the events' time, and lays out again ETA_EVERY_S later or
    when the run's quota window is known."""
    calls: list[float] = []

    def model(left: Mapping[str, float], rate: float, window: float) -> float:
        calls.append(window)
        return 100.0
    p = ProgressState(1, 8 * MB, 1 * MB, left={"t-0": 8 * MB}, eta_model=model)
    p.fold(_event(EventKind.STATE, "t-0", 1, state="throttling"), 50.0)
    assert p.eta_seconds() == 100.0 and calls == [0.0]
    p.fold(_event(EventKind.PROGRESS, "t-0", 1, 1 * MB), 54.0)
    assert p.eta_seconds() == pytest.approx(96.0) and len(calls) == 1
    p.use_quota_window(11.0)
    assert p.eta_seconds() == 100.0 and calls == [0.0, 11.0]
    p.fold(_event(EventKind.PROGRESS, "t-0", 1, 2 * MB), 54.0 + ETA_EVERY_S)
    assert p.eta_seconds() == 100.0 and calls == [0.0, 11.0, 11.0]


def test_the_panels_eta_forgets_the_moves_that_ended() -> None:
    """Three moves on brokers apart, one at a time at the 1 MB/s cap: 4 s of copy each and the
    8 s gate and election between them. Once the first is done, what is left is two copies
    and one gate between them; the done move's own gate is not counted again."""
    plan = ExecutionPlan.of([Move("t", 0, (1, 2), (1, 3), 4 * MB),
                             Move("t", 1, (5, 6), (5, 7), 4 * MB),
                             Move("t", 2, (8, 9), (8, 10), 4 * MB)])
    header = header_record(plan, {"max_bytes_per_sec": 1 * MB})
    p = progress_of(replay([header]), 1 * MB, [header])
    assert p.eta_seconds() == pytest.approx(4 + 8 + 4 + 8 + 4)
    for state in ("throttling", "copying", "done"):
        p.fold(Event(EventKind.STATE, state, "t-0", 1, 3, 4 * MB, 4 * MB, state), 5.0)
    p.fold(Event(EventKind.STATE, "throttling", "t-1", 2, 3, 0, 4 * MB, "throttling"),
           5.0 + ETA_EVERY_S)
    assert p.eta_seconds() == pytest.approx(4 + 8 + 4)
