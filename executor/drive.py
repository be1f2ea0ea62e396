"""Driving a run to its end under the cluster's run lease: the one path `execute`, `resume`,
`cancel` and `auto` take once their executor is built.

The run stops the moment the lease passes to another process. What differs between the
commands is policy, given by the caller: the context the run goes on in (the terminal's
progress view and its Ctrl-C handling), whether an interrupt cancels the run (unattended
`auto`: the move in flight is reverted and its throttles restored) or leaves it to the journal
(`execute`: `resume` or `cancel` decide later), and whether throttles still left at the end are
tried once more.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, replace

from executor.lease import LeaseHold
from executor.runner import Executor, RunReport, clear_throttles

INTERRUPT_CANCELS = ("interrupted: cancelling the run (the move in flight is reverted and its "
                     "throttles restored); interrupt again to leave it to the journal")


@dataclass(frozen=True)
class Driven:
    """How a driven run ended, and the throttles a last restore could not clear."""

    report: RunReport
    unrestored: tuple[str, ...] = ()


def drive_run(executor: Executor, hold: LeaseHold, *,
              running: AbstractContextManager[None] | None = None,
              cancel_on_interrupt: Callable[[str], None] | None = None,
              restore_left: bool = False) -> Driven:
    """Run `executor` to its end inside `running`. With `cancel_on_interrupt` an interrupt is
    told through it and cancels the run, which then runs to its end; without, the interrupt
    goes to the caller. With `restore_left`, throttles the run left are restored once more.
    The lease is kept past a run that did not end (an interrupt, an error), for its resume or
    cancel, and released after one that did."""
    executor.lease_lost = hold.lost
    hold.started = True
    with running if running is not None else nullcontext():
        try:
            report = executor.run()
        except KeyboardInterrupt:
            if cancel_on_interrupt is None:
                raise
            cancel_on_interrupt(INTERRUPT_CANCELS)
            executor.cancel()
            report = executor.run()
    if not (restore_left and report.throttles_left):
        hold.ended = True
        return Driven(report)
    problems = clear_throttles(executor.run_state, executor.journal, executor.driver)
    if problems:  # the lease stays with the run until its throttles are gone
        return Driven(report, tuple(problems))
    hold.ended = True
    return Driven(replace(report, throttles_left=()))
