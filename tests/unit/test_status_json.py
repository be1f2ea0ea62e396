"""`rebalance status --json`: a stable document of where a run stands, from its journal alone;
and the ETA of the text view, which says what it rests on."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from executor.journal import JournalFile, end_record, header_record, state_record
from executor.plan import ExecutionPlan
from executor.records import RunOutcome
from executor.state import MoveState
from planner.result import Move

MB = 1_000_000
S = MoveState
PLAN = ExecutionPlan.of([Move("t", 0, (1, 2), (1, 3), 10 * MB),
                         Move("t", 1, (1, 2), (1, 4), 4 * MB),
                         Move("t", 2, (2, 3), (2, 4), 6 * MB)])
SETTINGS = {"max_bytes_per_sec": 2_500_000, "cooldown_seconds": 5.0,
            "quota_window_seconds": 11.0}
DONE_PATH = (S.THROTTLING, S.SUBMITTED, S.COPYING, S.VERIFYING, S.UNTHROTTLING, S.ELECTING,
             S.COOLING_DOWN, S.DONE)
KEYS = {"version", "journal", "plan", "plan_id", "state", "running", "moves_done",
        "moves_total", "moves_by_state", "bytes_done", "bytes_total", "current_moves",
        "started_at", "ended_at", "last_record_at", "elapsed_seconds", "eta_seconds",
        "eta_basis", "eta_rate_bytes_per_sec", "eta_concurrency", "mean_copy_rate_bytes_per_sec",
        "cap_bytes_per_sec", "end_reason", "next_step", "throttles_left", "notable_moves"}


def iso(at: float) -> str:
    return datetime.fromtimestamp(at, UTC).isoformat(timespec="seconds")


def write_run(directory: Path, start: float, *, finished: bool = False,
              settings: dict[str, Any] = SETTINGS) -> JournalFile:
    """plan.json and its journal: t-0 copied 10 MB in 5 s and is done; t-1 is copying (since
    start + 20), t-2 pending; or, `finished`, every move done and the run ended."""
    (directory / "plan.json").write_text("{}")
    journal = JournalFile.create(directory / "plan.json.journal",
                                 header_record(PLAN, settings, "run-1"))
    times = (0, 0, 1, 6, 6, 6, 7, 18)
    steps = [(at, "t-0", s) for at, s in zip(times, DONE_PATH, strict=True)]
    if finished:
        steps += [(19 + at, "t-1", s) for at, s in zip((0, 0, 1, 3, 3, 3, 3, 4), DONE_PATH,
                                                          strict=True)]
        steps += [(24 + at, "t-2", s) for at, s in zip((0, 0, 1, 4, 4, 4, 4, 5), DONE_PATH,
                                                          strict=True)]
    else:
        steps += [(19, "t-1", S.THROTTLING), (19, "t-1", S.SUBMITTED), (20, "t-1", S.COPYING)]
    for at, move, state in steps:
        journal.append(state_record(move, state, start + at))
    if finished:
        journal.append(end_record(RunOutcome.COMPLETED, start + 30))
    return journal


def status_json(rebalance_main: Any, journal: Path) -> dict[str, Any]:
    result = rebalance_main("status", "--journal", str(journal), "--json")
    assert result.code == 0, result.err
    doc = json.loads(result.out)
    assert isinstance(doc, dict) and set(doc) == KEYS
    return doc


def test_an_interrupted_run_as_json(tmp_path: Path, rebalance_main: Any) -> None:
    start = time.time() - 60
    write_run(tmp_path, start).close()
    doc = status_json(rebalance_main, tmp_path / "plan.json.journal")
    assert {k: doc[k] for k in ("version", "plan", "state", "running", "moves_done",
                                "moves_total", "bytes_done", "bytes_total")} == {
        "version": 1, "plan": str(tmp_path / "plan.json"), "state": "interrupted",
        "running": False, "moves_done": 1, "moves_total": 3, "bytes_done": 10 * MB,
        "bytes_total": 20 * MB}
    assert doc["moves_by_state"] == {"copying": 1, "done": 1, "pending": 1}
    assert doc["current_moves"] == [{"index": 2, "partition": "t-1", "state": "copying",
                                     "bytes": 4 * MB, "started_at": iso(start + 19)}]
    assert (doc["started_at"], doc["ended_at"], doc["last_record_at"]) == (
        iso(start), None, iso(start + 20))
    assert doc["elapsed_seconds"] == 20.0  # to the last record: the time since is not the run's
    # t-1 has copied for 40 s at the observed 2 MB/s: in place by now; t-2's 6 MB take 3 s,
    # from the end of t-1's copy: it takes receiver 4 over from t-1 (the run's hand-over, as
    # the review lays moves out), so neither a gate nor the quota window comes between
    assert (doc["eta_seconds"], doc["eta_basis"], doc["eta_rate_bytes_per_sec"]) == (
        3.0, "observed", 2_000_000.0)
    assert doc["mean_copy_rate_bytes_per_sec"] == 2_000_000.0
    assert doc["cap_bytes_per_sec"] == 2_500_000.0
    assert doc["throttles_left"] == ["t-1"]
    assert doc["notable_moves"] == [{"index": 2, "partition": "t-1", "state": "copying",
                                     "bytes": 4 * MB, "reason": "", "throttles_left": True}]


def test_a_running_run_as_json_counts_time_up_to_now(tmp_path: Path,
                                                     rebalance_main: Any) -> None:
    start = time.time() - 60
    journal = write_run(tmp_path, start)  # kept open: its lock says an executor runs
    try:
        doc = status_json(rebalance_main, tmp_path / "plan.json.journal")
    finally:
        journal.close()
    assert (doc["state"], doc["running"]) == ("running", True)
    assert doc["elapsed_seconds"] == pytest.approx(60, abs=5)


def test_a_completed_run_as_json(tmp_path: Path, rebalance_main: Any) -> None:
    start = time.time() - 600
    write_run(tmp_path, start, finished=True).close()
    doc = status_json(rebalance_main, tmp_path / "plan.json.journal")
    assert (doc["state"], doc["moves_done"], doc["bytes_done"]) == ("completed", 3, 20 * MB)
    assert (doc["ended_at"], doc["elapsed_seconds"], doc["eta_seconds"]) == (
        iso(start + 30), 30.0, 0.0)
    assert doc["current_moves"] == [] and doc["eta_basis"] is None
    # 20 MB copied in 5 + 2 + 3 s
    assert doc["mean_copy_rate_bytes_per_sec"] == 2_000_000.0
    assert doc["next_step"] == "nothing: every move is done"


def test_the_text_view_says_what_the_eta_rests_on(tmp_path: Path, rebalance_main: Any) -> None:
    start = time.time() - 60
    write_run(tmp_path, start).close()
    result = rebalance_main("status", str(tmp_path / "plan.json"))
    assert result.code == 0, result.err
    text = " ".join(result.out.split())
    assert "state interrupted: no executor holds the journal" in text
    assert "in flight t-1: copying since" in text
    assert ("ETA 3s once resumed: 6.00 MB left to copy at the observed mean copy rate, "
            "2.00 MB/s") in text
    assert "waits between moves" not in text  # t-2 takes receiver 4 over from t-1
    assert "copy rate copying took 5s in all: mean 2.00 MB/s of the 2.50 MB/s cap (80%)" in text
    assert "elapsed 20s " in text and "last record" in text


def test_before_any_copy_ends_the_eta_rests_on_the_cap(tmp_path: Path,
                                                        rebalance_main: Any) -> None:
    journal = JournalFile.create(tmp_path / "run.journal", header_record(PLAN, SETTINGS))
    journal.append(state_record("t-0", S.THROTTLING, time.time() - 1))
    journal.close()
    doc = status_json(rebalance_main, tmp_path / "run.journal")
    assert doc["plan"] is None  # no plan file beside the journal
    # 20 MB at 90% of the 2.5 MB/s cap (as the plan review counts), each move taking a
    # broker over from the one before (t-1 sender 1 from t-0, t-2 receiver 4 from t-1): no
    # gate or quota window between them
    assert doc["eta_basis"] == "cap"
    assert doc["eta_seconds"] == pytest.approx(20 / (2.5 * 0.9), abs=0.05)
    result = rebalance_main("status", "--journal", str(tmp_path / "run.journal"))
    shown = " ".join(result.out.split())
    assert ("2.25 MB/s, 90% of the cap as Kafka's quota delivers it (no copy has finished yet)"
            in shown)


def test_a_resume_under_a_lower_cap_times_and_rates_what_follows_by_it(
        tmp_path: Path, rebalance_main: Any) -> None:
    """`resume --max-mbps 1` after t-0 copied at 80% of the run's 2.5 MB/s: the ETA rests on
    the new cap, and the mean rate and the table rate t-0 against the cap it copied under."""
    from executor.records import ResumeRecord

    journal = JournalFile.create(tmp_path / "run.journal", header_record(PLAN, SETTINGS))
    start = time.time() - 60
    for at, state in zip((0, 0, 1, 6, 6, 6, 7, 18), DONE_PATH, strict=True):
        journal.append(state_record("t-0", state, start + at))
    journal.append(ResumeRecord(start + 20, 1_000_000).to_json())
    journal.close()
    doc = status_json(rebalance_main, tmp_path / "run.journal")
    assert doc["cap_bytes_per_sec"] == 1_000_000
    assert doc["eta_basis"] == "observed"  # t-0's 2 MB/s; before any copy it would be the cap
    text = " ".join(rebalance_main("status", "--journal", str(tmp_path / "run.journal")
                                   ).out.split())
    # against the cap t-0 copied under, as its row is (not 200% of a cap set after it)
    assert "mean 2.00 MB/s of the 2.50 MB/s cap (80%)" in text, text
    from rich.console import Console

    from executor.journal import read_journal
    from kafka_rebalance.report.run_status import moves_table

    run = read_journal(tmp_path / "run.journal")
    console = Console(width=200, record=True)
    console.print(moves_table(run, run.timeline, time.time()))
    assert "2.00 MB/s (80%)" in console.export_text()  # against the cap it copied under


def test_copies_under_two_caps_are_rated_against_their_time_weighted_cap(
        tmp_path: Path, rebalance_main: Any) -> None:
    """t-0 copies 10 MB in 5 s under 2.5 MB/s, then `resume --max-mbps 1` and t-1 copies 4 MB
    in 5 s: 14 MB in 10 s is 1.40 MB/s, against (5 x 2.5 + 5 x 1) / 10 = 1.75 MB/s, 80%."""
    from executor.records import ResumeRecord

    journal = JournalFile.create(tmp_path / "run.journal", header_record(PLAN, SETTINGS))
    start = time.time() - 120
    for at, state in zip((0, 0, 1, 6, 6, 6, 7, 18), DONE_PATH, strict=True):
        journal.append(state_record("t-0", state, start + at))
    journal.append(ResumeRecord(start + 20, 1_000_000).to_json())
    for at, state in zip((21, 21, 22, 27, 27, 27, 28, 39), DONE_PATH, strict=True):
        journal.append(state_record("t-1", state, start + at))
    journal.close()
    text = " ".join(rebalance_main("status", "--journal", str(tmp_path / "run.journal")
                                   ).out.split())
    assert "mean 1.40 MB/s of the 1.75 MB/s mean cap (80%)" in text, text


def test_a_run_side_by_side_gets_the_eta_of_its_concurrency(tmp_path: Path,
                                                            rebalance_main: Any) -> None:
    start = time.time() - 60
    write_run(tmp_path, start, settings={**SETTINGS, "concurrency": "auto"}).close()
    doc = status_json(rebalance_main, tmp_path / "plan.json.journal")
    assert doc["eta_concurrency"] == "auto"
    assert doc["eta_seconds"] is not None and doc["eta_seconds"] <= 11.0
    shown = rebalance_main("status", "--journal", str(tmp_path / "plan.json.journal"))
    assert shown.code == 0 and "moves side by side" in " ".join(shown.out.split()), shown.out


def test_the_eta_waits_out_the_quota_window_the_run_chose(tmp_path: Path,
                                                         rebalance_main: Any) -> None:
    """u-0 and u-2 copy into broker 4, with u-1 (brokers 2 and 5) between them: one at a time,
    u-2 waits for u-1's gate and election (8 s) and, when the run's header says the brokers'
    quota window is 30 s, for broker 4's window after u-0's copy."""
    plan = ExecutionPlan.of([Move("u", 0, (1, 2), (1, 4), 4 * MB),
                             Move("u", 1, (2, 3), (2, 5), 4 * MB),
                             Move("u", 2, (1, 3), (1, 4), 4 * MB)])
    copy = 4 / 2.25  # seconds at 90% of the 2.5 MB/s cap
    for window, eta in ((0.0, 3 * copy + 2 * 8), (30.0, copy + 30 + copy)):
        path = tmp_path / f"window-{window:g}.journal"
        journal = JournalFile.create(path, header_record(
            plan, {**SETTINGS, "quota_window_seconds": window}))
        journal.append(state_record("u-0", S.THROTTLING, time.time() - 1))
        journal.close()
        assert status_json(rebalance_main, path)["eta_seconds"] == pytest.approx(eta, abs=0.05)


def test_a_tiny_first_copy_does_not_time_the_rest(tmp_path: Path, rebalance_main: Any) -> None:
    """The first move copied 10 kB in 1 s (a tiny partition: start-up and polling, not the
    copy rate): the ETA of the 10 MB left rests on the cap, not on 10 kB/s (hours)."""
    tiny = ExecutionPlan.of([Move("lease", 0, (1, 2), (1, 3), 10_000),
                             Move("t", 0, (1, 2), (1, 4), 10 * MB)])
    journal = JournalFile.create(tmp_path / "run.journal", header_record(tiny, SETTINGS))
    start = time.time() - 60
    for at, state in zip((0, 0, 1, 2, 2, 2, 2, 3), DONE_PATH, strict=True):
        journal.append(state_record("lease-0", state, start + at))
    journal.close()
    doc = status_json(rebalance_main, tmp_path / "run.journal")
    assert doc["eta_basis"] == "cap"
    assert doc["eta_seconds"] == pytest.approx(10 / (2.5 * 0.9), abs=0.5)
