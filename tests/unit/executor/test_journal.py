"""The journal: durable appends, replay, torn last line, corruption, locking."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from executor.gates import NetworkSample
from executor.journal import (
    Journal,
    JournalFile,
    header_record,
    read_journal,
    replay,
    request_cancel,
)
from executor.plan import ExecutionPlan
from executor.records import RunOutcome
from executor.state import IllegalTransition, MoveState
from executor.throttle import ThrottlePriors, plan_throttle, uniform_rates
from kafka_rebalance.core.errors import ExecutionError, InputError
from tests.unit.executor.fakes import standard_moves

S = MoveState
PLAN = ExecutionPlan(tuple(standard_moves()), "sha256:abc")


def new_journal(path: Path) -> Journal:
    header = header_record(PLAN, {"max_bytes_per_sec": 1})
    return Journal(replay([header]), JournalFile.create(path, header))


def drive(journal: Journal) -> None:
    move = PLAN.moves[0]
    throttle = plan_throttle(move, ThrottlePriors({}, move.topic, {}), uniform_rates(move, 5))
    journal.enter(move.name, S.THROTTLING, 1.0, throttle=throttle,
                  baseline=NetworkSample({1: 1.0, 2: 2.0, 3: 3.0}, {1: 4.0, 2: 5.0, 3: 6.0}))
    journal.enter(move.name, S.SUBMITTED, 2.0)
    journal.enter(move.name, S.COPYING, 3.0)


def test_replay_reconstructs_the_run(tmp_path: Path) -> None:
    path = tmp_path / "run.journal"
    journal = new_journal(path)
    drive(journal)
    live = journal.run
    again = read_journal(path)
    assert again.plan == PLAN and again.plan.fingerprint == "sha256:abc"
    assert again.moves == live.moves
    record = again.moves["orders-0"]
    assert record.state is S.COPYING and record.throttles_left
    assert record.throttle is not None and record.throttle.follower_entries == ("0:3",)
    assert record.baseline is not None and record.baseline.net_out[3] == 6.0
    assert again.unfinished == list(PLAN.moves)


def test_every_line_is_a_complete_json_record(tmp_path: Path) -> None:
    path = tmp_path / "run.journal"
    drive(new_journal(path))
    lines = path.read_bytes().split(b"\n")
    assert lines[-1] == b""
    kinds = [json.loads(line)["kind"] for line in lines[:-1]]
    assert kinds == ["run", "state", "state", "state"]


def test_torn_last_line_is_ignored_and_repaired(tmp_path: Path) -> None:
    path = tmp_path / "run.journal"
    journal = new_journal(path)
    drive(journal)
    journal._sink.close()  # type: ignore[attr-defined]
    with path.open("ab") as f:
        f.write(b'{"kind":"state","move":"orders-0","sta')  # killed mid-write
    reopened, records = JournalFile.open(path)
    run = replay(records)
    assert run.state_of("orders-0") is S.COPYING
    resumed = Journal(run, reopened)
    resumed.enter("orders-0", S.VERIFYING, 4.0)
    reopened.close()
    assert read_journal(path).state_of("orders-0") is S.VERIFYING
    lines = path.read_bytes().splitlines()
    assert len(lines) == 5 and all(json.loads(line) for line in lines)


def test_a_torn_tail_stays_until_the_run_writes(tmp_path: Path) -> None:
    """A run refused after its journal is opened (lease, preflight, settings) writes nothing:
    the torn tail is cut off only by the first append."""
    path = tmp_path / "run.journal"
    journal = new_journal(path)
    drive(journal)
    journal._sink.close()  # type: ignore[attr-defined]
    with path.open("ab") as f:
        f.write(b'{"kind":"state","move":"orders-0","sta')
    before = path.read_bytes()
    reopened, _ = JournalFile.open(path)
    reopened.close()
    assert path.read_bytes() == before


def test_a_last_record_without_newline_counts_as_torn(tmp_path: Path) -> None:
    path = tmp_path / "run.journal"
    new_journal(path)._sink.close()  # type: ignore[attr-defined]
    with path.open("ab") as f:
        f.write(b'{"kind":"end","outcome":"completed","at":1}')
    assert read_journal(path).outcome is None


def test_a_bad_line_in_the_middle_is_corruption(tmp_path: Path) -> None:
    path = tmp_path / "run.journal"
    drive(new_journal(path))
    lines = path.read_bytes().split(b"\n")
    lines[2] = b"garbage"
    path.write_bytes(b"\n".join(lines))
    with pytest.raises(ExecutionError, match="line 3 is not a JSON record"):
        read_journal(path)


def test_an_impossible_state_change_is_refused(tmp_path: Path) -> None:
    header = header_record(PLAN, {})
    bad = {"kind": "state", "move": "orders-0", "state": "copying", "at": 1.0}
    with pytest.raises(IllegalTransition, match="pending -> copying"):
        replay([header, bad])
    journal = Journal(replay([header]), JournalFile.create(tmp_path / "j", header))
    with pytest.raises(IllegalTransition):
        journal.enter("orders-0", S.DONE, 1.0)
    assert read_journal(tmp_path / "j").records == 1  # nothing was written


def test_unknown_move_and_bad_header_are_refused() -> None:
    header = header_record(PLAN, {})
    with pytest.raises(ExecutionError, match="unknown move nope-1"):
        replay([header, {"kind": "state", "move": "nope-1", "state": "throttling", "at": 0}])
    with pytest.raises(ExecutionError, match="not a version-1 run header"):
        replay([{"kind": "state"}])
    with pytest.raises(ExecutionError, match="does not match its plan_id"):
        replay([{**header, "plan_id": "sha256:other"}])
    with pytest.raises(ExecutionError, match="empty"):
        replay([])


def test_end_and_resume_records(tmp_path: Path) -> None:
    journal = new_journal(tmp_path / "j")
    journal.end(RunOutcome.STOPPED, 5.0, "orders-0 failed")
    assert journal.run.outcome is RunOutcome.STOPPED
    journal.reopen(6.0)
    assert journal.run.outcome is None
    assert read_journal(tmp_path / "j").outcome is None
    journal.end(RunOutcome.COMPLETED, 7.0)  # ended again after the resume: a new end
    assert read_journal(tmp_path / "j").outcome is RunOutcome.COMPLETED


@pytest.mark.parametrize("cap", ["2MB", 0, 1.5, True])
def test_a_resume_with_a_malformed_cap_is_corruption(cap: object) -> None:
    resume = {"kind": "resume", "at": 2.0, "max_bytes_per_sec": cap}
    with pytest.raises(ExecutionError, match=r"record 2 \('resume'\) is malformed \(cap"):
        replay([header_record(PLAN, {}), resume])


def test_a_second_end_without_a_resume_between_is_corruption() -> None:
    header = header_record(PLAN, {})
    end = {"kind": "end", "outcome": "completed", "at": 2.0, "reason": ""}
    assert replay([header, end]).outcome is RunOutcome.COMPLETED
    with pytest.raises(ExecutionError, match="record 3 ends a run that its record before"):
        replay([header, end, {**end, "outcome": "stopped", "at": 3.0}])
    # written before a cancel of a stopped run recorded a resume: still read
    cancel = {"kind": "cancel", "at": 3.0}
    again = replay([header, {**end, "outcome": "stopped"}, cancel, {**end, "at": 4.0}])
    assert again.outcome is RunOutcome.COMPLETED


def test_throttles_left_follows_the_states(tmp_path: Path) -> None:
    journal = new_journal(tmp_path / "j")
    drive(journal)
    for state in (S.VERIFYING, S.UNTHROTTLING):
        journal.enter("orders-0", state, 4.0)
        assert journal.run.moves["orders-0"].throttles_left
    journal.enter("orders-0", S.COOLING_DOWN, 9.0)
    record = journal.run.moves["orders-0"]
    assert not record.throttles_left and record.cooldown_since == 9.0
    journal.enter("orders-1", S.THROTTLING, 10.0)
    journal.enter("orders-1", S.CANCELLING, 11.0, reason="x")
    journal.enter("orders-1", S.FAILED, 12.0, reason="restore failed")
    assert journal.run.moves["orders-1"].throttles_left
    journal.throttles("orders-1", False, 13.0)
    assert not read_journal(tmp_path / "j").moves["orders-1"].throttles_left


def test_journal_refuses_overwrite_and_second_writer(tmp_path: Path) -> None:
    path = tmp_path / "run.journal"
    first = new_journal(path)
    with pytest.raises(ExecutionError, match="already exists"):
        new_journal(path)
    with pytest.raises(ExecutionError, match="in use by a running executor"):
        JournalFile.open(path)
    first._sink.close()  # type: ignore[attr-defined]
    JournalFile.open(path)[0].close()  # free once the first writer is gone


def test_cancel_request_file(tmp_path: Path) -> None:
    path = tmp_path / "run.journal"
    journal = new_journal(path)
    assert not journal.cancel_requested()
    request_cancel(path)
    assert journal.cancel_requested()
    journal.clear_cancel_request()
    assert not journal.cancel_requested()


def test_a_cancel_request_left_from_an_ended_process_cancels_no_later_run(
        tmp_path: Path) -> None:
    """A request made to a process that ended before it saw it (or to an earlier journal at
    the same path) is not this process's: opening or creating the journal drops it, and a
    request made while this process holds the journal counts."""
    path = tmp_path / "run.journal"
    request_cancel(path)  # an earlier run's journal at this path, since deleted
    first = new_journal(path)
    assert not first.cancel_requested()
    request_cancel(path)
    first._sink.close()  # type: ignore[attr-defined]  # ended before it looked
    sink, _ = JournalFile.open(path)  # resume
    assert not sink.cancel_requested()
    request_cancel(path)
    assert sink.cancel_requested()
    sink.close()


def test_missing_journal_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no journal at"):
        JournalFile.open(tmp_path / "absent")


def test_unwritable_journal_path_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ExecutionError, match="cannot create the journal"):
        new_journal(tmp_path / "missing-dir" / "run.journal")
