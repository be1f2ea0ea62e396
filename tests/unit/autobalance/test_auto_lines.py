"""auto's log (often a cron job's file) gets one line per change, not one per gate sample."""

from __future__ import annotations

from datetime import UTC

import pytest

from executor.config import Event, EventKind
from kafka_rebalance.commands.auto_cmd import Lines


def test_a_gate_is_logged_when_its_verdict_changes(capsys: pytest.CaptureFixture[str]) -> None:
    lines = Lines(UTC)
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
        "gate after t-0: wait, settled for 1 consecutive sample(s)",
        "gate after t-0: open, settled for 4 consecutive sample(s)",
        "gate after t-1: wait, settled for 1 consecutive sample(s)",
    ]
