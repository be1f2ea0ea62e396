"""The line a resumed run logs: the run's own settings apply, and each journaled setting that
differs from the run's journal header (this process's cap) is named with both values."""

from __future__ import annotations

from executor.config import ExecutorConfig, RunOverrides
from kafka_rebalance.autobalance.resume_flags import resume_line, setting_changes

STARTED = ExecutorConfig(max_bytes_per_sec=2_000_000, cooldown_seconds=0.0,
                         quota_window_seconds=11.0).to_journal()


def test_a_changed_cap_and_cooldown_are_named_with_both_values() -> None:
    now = ExecutorConfig(max_bytes_per_sec=1_000_000, cooldown_seconds=30.0,
                         quota_window_seconds=11.0).to_journal()
    assert setting_changes(STARTED, now) == [
        "cap 1 MB/s (the run started with 2 MB/s)",
        "cooldown 30 s (the run started with 0 s)",
    ]


def test_the_same_flags_change_nothing_even_after_a_json_round_trip() -> None:
    as_read = {k: float(v) if isinstance(v, int) and not isinstance(v, bool) else v
               for k, v in STARTED.items()}
    assert setting_changes(as_read, STARTED) == []
    assert resume_line("plan-x.json.journal", as_read, STARTED) == (
        "resuming plan-x.json.journal with the run's own settings; a move left in flight "
        "keeps its journaled throttle until it is done")


def test_settings_the_journal_did_not_record_are_said_so() -> None:
    started = {k: v for k, v in STARTED.items() if k != "quota_window_seconds"}
    assert setting_changes(started, STARTED) == [
        "quota window 11 s (not in the run's journal)"]


def test_executor_tuning_an_older_journal_did_not_keep_is_not_said() -> None:
    tuning = ("stall_intervals", "adaptive_floor_bytes_per_sec", "adaptive_every_polls",
              "adaptive_change")
    started = {k: v for k, v in STARTED.items() if k not in tuning}
    assert setting_changes(started, STARTED) == []


def test_the_line_names_the_new_cap_of_a_run_that_keeps_its_own_settings() -> None:
    started = ExecutorConfig(max_bytes_per_sec=2_000_000, quota_window_seconds=11.0,
                             gate_timeout_seconds=60.0).to_journal()
    now = ExecutorConfig.from_journal(
        started, overrides=RunOverrides(max_bytes_per_sec=5_000_000)).to_journal()
    line = resume_line("plan-x.json.journal", started, now)
    assert line == ("resuming plan-x.json.journal with the run's own settings except cap "
                    "5 MB/s (the run started with 2 MB/s); a move left in flight keeps its "
                    "journaled throttle until it is done")
