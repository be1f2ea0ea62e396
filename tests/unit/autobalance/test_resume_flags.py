"""The line a resumed run logs: this process's flags apply, and each one that differs from the
run's journal header is named with both values."""

from __future__ import annotations

from autobalance.resume_flags import resume_line, setting_changes
from executor.config import ExecutorConfig

STARTED = ExecutorConfig(2_000_000, cooldown_seconds=0.0, quota_window_seconds=11.0).summary()


def test_a_changed_cap_and_cooldown_are_named_with_both_values() -> None:
    now = ExecutorConfig(1_000_000, cooldown_seconds=30.0, quota_window_seconds=11.0).summary()
    assert setting_changes(STARTED, now) == [
        "cap 1 MB/s (the run started with 2 MB/s)",
        "cooldown 30 s (the run started with 0 s)",
    ]


def test_the_same_flags_change_nothing_even_after_a_json_round_trip() -> None:
    as_read = {k: float(v) if isinstance(v, int) and not isinstance(v, bool) else v
               for k, v in STARTED.items()}
    assert setting_changes(as_read, STARTED) == []
    assert "the same as when the run started" in resume_line("plan-x.json.journal", as_read,
                                                              STARTED)


def test_settings_the_journal_did_not_record_are_said_so() -> None:
    started = {k: v for k, v in STARTED.items() if k != "quota_window_seconds"}
    assert setting_changes(started, STARTED) == [
        "quota window 11 s (not in the run's journal)"]


def test_the_line_says_whose_flags_apply_and_about_the_move_in_flight() -> None:
    now = ExecutorConfig(5_000_000, quota_window_seconds=11.0, gate_timeout_seconds=60.0)
    line = resume_line("plan-x.json.journal", STARTED, now.summary())
    assert line.startswith("resuming plan-x.json.journal with this auto process's flags: ")
    assert "cap 5 MB/s (the run started with 2 MB/s)" in line
    assert "gate timeout 60 s (the run started with none)" in line
    assert "move left in flight keeps its journaled throttle" in line
