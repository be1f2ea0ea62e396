"""executor.drive: the one path that drives a run under the lease, with the caller's policy
for interrupts and for throttles left at the end."""

from __future__ import annotations

from typing import Any

import pytest

from executor import drive as drive_module
from executor.drive import INTERRUPT_CANCELS, drive_run
from executor.lease import LeaseHold
from executor.records import RunOutcome
from executor.runner import RunReport


class FakeExecutor:
    """run() raises KeyboardInterrupt the first `interrupts` times, then returns `report`."""

    def __init__(self, report: RunReport, interrupts: int = 0) -> None:
        self.report, self.interrupts, self.cancelled = report, interrupts, False
        self.lease_lost: Any = None
        self.run_state = self.journal = self.driver = None

    def run(self) -> RunReport:
        if self.interrupts:
            self.interrupts -= 1
            raise KeyboardInterrupt
        return self.report

    def cancel(self) -> None:
        self.cancelled = True


def report(left: tuple[str, ...] = ()) -> RunReport:
    return RunReport(RunOutcome.COMPLETED, {}, {}, left)


def test_a_run_that_ends_releases_the_lease() -> None:
    hold = LeaseHold()
    driven = drive_run(FakeExecutor(report()), hold)  # type: ignore[arg-type]
    assert driven.report.outcome is RunOutcome.COMPLETED and hold.release


def test_an_interrupt_goes_to_the_caller_and_keeps_the_lease_for_resume() -> None:
    hold = LeaseHold()
    with pytest.raises(KeyboardInterrupt):
        drive_run(FakeExecutor(report(), interrupts=1), hold)  # type: ignore[arg-type]
    assert hold.started and not hold.ended and not hold.release


def test_unattended_an_interrupt_cancels_the_run_and_says_so() -> None:
    said: list[str] = []
    executor = FakeExecutor(report(), interrupts=1)
    hold = LeaseHold()
    drive_run(executor, hold, cancel_on_interrupt=said.append)  # type: ignore[arg-type]
    assert executor.cancelled and said == [INTERRUPT_CANCELS] and hold.release


def test_throttles_left_are_restored_once_more_when_asked(
        monkeypatch: pytest.MonkeyPatch) -> None:
    answers = [["t-0: broker 3 did not answer"], []]
    monkeypatch.setattr(drive_module, "clear_throttles", lambda *_: answers.pop(0))
    hold = LeaseHold()
    left = drive_run(FakeExecutor(report(("t-0",))), hold,  # type: ignore[arg-type]
                     restore_left=True)
    assert left.unrestored == ("t-0: broker 3 did not answer",) and not hold.release
    hold = LeaseHold()
    cleared = drive_run(FakeExecutor(report(("t-0",))), hold,  # type: ignore[arg-type]
                        restore_left=True)
    assert cleared.unrestored == () and cleared.report.throttles_left == () and hold.release
    untouched = drive_run(FakeExecutor(report(("t-0",))), LeaseHold())  # type: ignore[arg-type]
    assert untouched.report.throttles_left == ("t-0",)  # execute reports them itself
