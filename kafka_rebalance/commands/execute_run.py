"""How a run of `execute`, `resume` or `cancel` is shown and ends: the run use cases' hooks
(`RunScreen`: notes, the progress view fed by the executor's events, Ctrl-C), and the summary
printed however the run ends (completed, stopped, cancelled, interrupted) with the exit code
that says which.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from executor.config import Reporter
from executor.journal import read_records
from executor.progress import progress_of
from kafka_rebalance.commands.render import NoteHold, console, err_console, note, say
from kafka_rebalance.core.errors import ExecutionError, RebalanceError
from kafka_rebalance.report.run_progress import ProgressView, report_lines
from kafka_rebalance.usecases.run_settings import both, serve_metrics
from kafka_rebalance.usecases.signals import sigterm_as_ctrl_c

if TYPE_CHECKING:
    from executor.journal import RunState
    from executor.records import Record
    from executor.runner import Executor
    from kafka_rebalance.usecases.run import RunResult

# The run was cancelled as the operator asked (`rebalance cancel` from another terminal):
# not an error, but not a completed run either (see HELP in cli.py).
CANCELLED_EXIT_CODE = 8


def progress_view(run: RunState, cap: int, metrics_port: int | None, clock: Callable[[], float],
                  records: list[Record] | None = None) -> tuple[ProgressView, Reporter]:
    """The progress display for `run` (moves already done count as moved; `records`, the
    journal so far, time the moves in flight; `clock`, the executor's, which the journal's
    times are in) and the reporter feeding it (and the executor's own metrics when
    --metrics-port is given)."""
    state = progress_of(run, cap, records)
    view = ProgressView(err_console, state, clock, moves={m.name: m for m in run.plan.moves},
                        times=run.timeline if records and len(records) > 1 else None)
    return view, both(view, serve_metrics(metrics_port, cap))


INTERRUPTED = ("interrupted: the journal {journal} keeps the run (a move in flight keeps "
               "copying under its throttle). `rebalance resume --journal {journal} ...` "
               "continues it; `rebalance cancel --journal {journal} ...` reverts the move in "
               "flight and restores the throttles.")


def print_summary(journal: Path, ending: str, now: float) -> None:
    """The end-of-run summary on stdout, from the journal (so it covers the whole run); `now`
    on the clock of the journal's times."""
    from executor.journal import replay
    from kafka_rebalance.report.run_status import run_summary

    run = replay(read_records(journal))
    console.print(run_summary(run, run.timeline, ending, now),
                  highlight=False, soft_wrap=True)


class RunScreen:
    """The terminal side of a run use case (`kafka_rebalance.usecases.run.RunHooks`): notes on
    stderr, the progress view (and the executor's own /metrics on `metrics_port`), and around the
    run loop the summary so far when Ctrl-C (or an error) stops it. `notes`, held until a new run
    starts so that a refused run's error line comes first, are released then."""

    def __init__(self, metrics_port: int | None = None, notes: NoteHold | None = None) -> None:
        self.metrics_port = metrics_port
        self.notes = notes
        self.view: ProgressView | None = None

    def note(self, message: str) -> None:
        note(message)

    def rate_window(self, window: str) -> None:
        note(f"{window} (from the scrape interval; --rate-window sets it)",
             label="gate rate window", style="")

    def watch(self, run: RunState, cap: int, clock: Callable[[], float],
              records: list[Record] | None) -> Reporter:
        self.view, reporter = progress_view(run, cap, self.metrics_port, clock, records)
        return reporter

    def started(self, journal: Path, run_id: str) -> None:
        if self.notes is not None:
            self.notes.release()
        say(f"journal: {journal} (run {run_id})", err_console)

    @contextmanager
    def running(self, executor: Executor, journal: Path) -> Iterator[None]:
        """Run to the end with the progress view; Ctrl-C (or an error that stops the loop)
        prints the summary so far and leaves the journal for resume/cancel."""
        if self.view is None:
            raise RuntimeError("the progress view is made by watch(), before the run")
        # the window the run chose from its brokers' own, which the header read by watch()
        # (made before the brokers were asked) may not have held yet
        self.view.state.use_quota_window(executor.config.quota_window)
        with sigterm_as_ctrl_c():  # (the summary too may go to a terminal that closed)
            try:
                with self.view:
                    yield
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
        print_summary(journal, ending, executor.ports.clock.now())
    except RebalanceError as exc:
        note(f"no summary: {exc}")


def conclude(result: RunResult) -> None:
    """The summary, then the exit: 0 completed, CANCELLED_EXIT_CODE cancelled as asked (throttles
    restored, no move failed), an ExecutionError (exit code 6) for a run that stopped or failed a
    move, and for one that left throttles (every move done, but a broker that was offline kept
    a rate until `clear-throttles`)."""
    from executor.records import RunOutcome

    report = result.report
    print_summary(result.journal, report.outcome.value, result.clock.now())
    for warning in result.warnings:
        note(warning, label="warning", style="bold red")
    if report.outcome is RunOutcome.COMPLETED and not report.throttles_left:
        return
    if report.cancelled_cleanly:
        raise typer.Exit(CANCELLED_EXIT_CODE)
    raise ExecutionError("\n".join(report_lines(report)))
