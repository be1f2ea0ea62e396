"""How a run of `execute`, `resume` or `cancel` is shown and ends: the progress view fed by
the executor's events, and the summary printed however the run ends (completed, stopped,
cancelled, interrupted) with the exit code that says which.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from commands.execute_render import ProgressState, ProgressView, report_lines
from commands.execute_setup import both, journal_records, serve_metrics
from commands.render import console, err_console, note, say
from executor.config import Reporter
from executor.state import MoveState
from topology.errors import ExecutionError, RebalanceError

if TYPE_CHECKING:
    from executor.journal import Record, RunState
    from executor.runner import Executor, RunReport

# The run was cancelled as the operator asked (`rebalance cancel` from another terminal):
# not an error, but not a completed run either (see HELP in cli.py).
CANCELLED_EXIT_CODE = 8


def progress_view(run: RunState, cap: int, metrics_port: int | None, clock: Callable[[], float],
                  records: list[Record] | None = None) -> tuple[ProgressView, Reporter]:
    """The progress display for `run` (moves already done count as moved; `records`, the
    journal so far, time the moves in flight; `clock`, the executor's, which the journal's
    times are in) and the reporter feeding it (and the executor's own metrics when
    --metrics-port is given)."""
    from executor.timeline import timeline

    done = sum(m.bytes_moved for m in run.plan.moves if run.state_of(m.name) is MoveState.DONE)
    view = ProgressView(err_console, ProgressState(len(run.plan.moves), run.plan.total_bytes,
                                                   cap, bytes_before=done), clock,
                        moves={m.name: m for m in run.plan.moves},
                        times=timeline(records) if records else None)
    return view, both(view, serve_metrics(metrics_port, cap))


INTERRUPTED = ("interrupted: the journal {journal} keeps the run (a move in flight keeps "
               "copying under its throttle). `rebalance resume --journal {journal} ...` "
               "continues it; `rebalance cancel --journal {journal} ...` reverts the move in "
               "flight and restores the throttles.")


def print_summary(journal: Path, ending: str, cap: float, now: float) -> None:
    """The end-of-run summary on stdout, from the journal (so it covers the whole run); `now`
    on the clock of the journal's times."""
    from commands.run_report import run_summary
    from executor.journal import replay
    from executor.timeline import timeline

    records = journal_records(journal)
    console.print(run_summary(replay(records), timeline(records), ending, cap, now),
                  highlight=False, soft_wrap=True)


def drive(executor: Executor, view: ProgressView, journal: Path) -> RunReport:
    """Run to the end with the progress view; Ctrl-C (or an error that stops the loop)
    prints the summary so far and leaves the journal for resume/cancel."""
    try:
        with view:
            return executor.run()
    except KeyboardInterrupt:
        _summary_anyway(executor, journal, "interrupted")
        say(INTERRUPTED.format(journal=journal), err_console)
        raise typer.Exit(130) from None
    except RebalanceError:
        _summary_anyway(executor, journal, "ended by an error")
        raise


def _summary_anyway(executor: Executor, journal: Path, ending: str) -> None:
    """The summary of a run cut short; a journal that cannot be read must not hide why."""
    try:
        print_summary(journal, ending, executor.config.max_bytes_per_sec,
                      executor.ports.clock.now())
    except RebalanceError as exc:
        note(f"no summary: {exc}")


def conclude(report: RunReport, executor: Executor, journal: Path) -> None:
    """The summary, then the exit: 0 completed, CANCELLED_EXIT_CODE cancelled as asked (throttles
    restored), an ExecutionError (exit code 6) for a run that stopped or left throttles."""
    from executor.journal import RunOutcome

    print_summary(journal, report.outcome.value, executor.config.max_bytes_per_sec,
                  executor.ports.clock.now())
    if report.outcome is RunOutcome.COMPLETED:
        return
    if report.outcome is RunOutcome.CANCELLED and not report.throttles_left:
        raise typer.Exit(CANCELLED_EXIT_CODE)
    raise ExecutionError("\n".join(report_lines(report)))
