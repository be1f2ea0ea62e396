"""auto's log (often a cron job's file) gets one line per change, not one per gate sample,
worded as execute's run lines."""

from __future__ import annotations

from datetime import UTC

import pytest

from executor.config import Event, EventKind
from kafka_rebalance.commands.auto_cmd import Lines


def test_a_gate_is_logged_when_its_verdict_changes(capsys: pytest.CaptureFixture[str]) -> None:
    lines = Lines(UTC, 1_000_000)
    for settled in (1, 2, 3):
        lines.report(Event(EventKind.GATE, f"gate after t-0: wait, settled for {settled} "
                           "consecutive sample(s)", move="t-0", state="wait"))
    lines.report(Event(EventKind.GATE, "gate after t-0: open, settled for 4 consecutive "
                       "sample(s)", move="t-0", state="open"))
    lines.report(Event(EventKind.GATE, "gate after t-1: wait, settled for 1 consecutive "
                       "sample(s)", move="t-1", state="wait"))
    lines.report(Event(EventKind.PROGRESS, "copying", move="t-1", bytes_done=5, bytes_total=9))
    out = capsys.readouterr().out.splitlines()
    assert [line.split(" ", 2)[2] for line in out] == [
        "gate after t-0: wait (settled for 1 consecutive sample(s))",
        "gate after t-0: open (settled for 4 consecutive sample(s))",
        "gate after t-1: wait (settled for 1 consecutive sample(s))",
    ]


def test_a_move_is_told_as_execute_tells_it(capsys: pytest.CaptureFixture[str]) -> None:
    lines = Lines(UTC, 1_000_000)
    for state, reason in (("throttling", ""), ("copying", ""), ("verifying", ""),
                          ("done", "")):
        lines.report(Event(EventKind.STATE, f"t-0: {state}" + (f" ({reason})" if reason
                                                              else ""),
                           move="t-0", index=1, total=2, bytes_total=4_000_000, state=state))
    out = [line.split(" ", 2)[2] for line in capsys.readouterr().out.splitlines()]
    assert out[0] == "[1/2] t-0: started (4.00 MB to copy)"
    assert out[1].startswith("[1/2] t-0: throttle set (1.00 MB/s cap per broker)")
    assert out[2].startswith("[1/2] t-0: copied 4.00 MB in") and "of the cap" in out[2]
    assert out[3].startswith("[1/2] t-0: done in")
