"""Durable, append-only run journal (JSON lines) and its replay into a run state.

Every state a move enters is appended and fsynced *before* the side effect of that state runs,
and the next state is appended only after the side effect is confirmed: the last state of a move
in the journal names the one step to redo (every step is idempotent). A process killed mid-write
leaves at most a torn last line, which replay ignores and the next append truncates.
"""

from __future__ import annotations

import fcntl
import json
import os
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import IO, Any, Protocol

from pydantic import ValidationError

from executor.config import RunHeader
from executor.gates import NetworkSample
from executor.milestones import MoveTiming, RunTimeline, milestone
from executor.plan import ExecutionPlan
from executor.records import (
    CancelRecord,
    CordonRecord,
    DirMoveRecord,
    DirThrottleRecord,
    EndRecord,
    GuardRecord,
    NoteRecord,
    RatesRecord,
    Record,
    RecordKind,
    ResumeRecord,
    RetryRecord,
    RunOutcome,
    RunRecord,
    StateRecord,
    ThrottlesRecord,
    UnknownKind,
    parse_record,
)
from executor.state import TERMINAL, MoveState, transition
from executor.throttle import ThrottlePlan
from kafka_rebalance.core.errors import ExecutionError, InputError
from planner.log_dirs import DirPlan
from planner.planfile_schema import (
    LOG_DIRS_ADAPTER,
    MOVES_ADAPTER,
    NOUNS,
    MoveEntry,
    log_dirs_from_entry,
    log_dirs_to_dict,
    moves_from_entries,
)
from planner.result import Move
from topology.documents import decode_json
from topology.schema import describe

JOURNAL_SUFFIX = ".journal"


def journal_of(plan: Path) -> Path:
    """Where a plan's run keeps its journal: beside it, named after it (plan.json.journal)."""
    return plan.with_name(plan.name + JOURNAL_SUFFIX)


def find_journal(plan: Path | None, journal: Path | None) -> Path:
    """A run's journal: --journal, else beside the plan, else the only one in the current
    directory."""
    if journal is not None:
        return journal
    if plan is not None:
        return journal_of(plan)
    found = sorted(Path.cwd().glob("*" + JOURNAL_SUFFIX))
    if len(found) == 1:
        return found[0]
    if not found:
        raise InputError("no journal given and no *.journal file here: pass --journal PATH "
                         "or the plan file")
    raise InputError("several journals here (" + ", ".join(p.name for p in found)
                     + "): pass --journal PATH")


def plan_beside(journal: Path) -> Path | None:
    """The plan a journal is named after (the rule of journal_of, backwards), when the name
    follows it; the file may not exist."""
    name = journal.name
    if not name.endswith(JOURNAL_SUFFIX) or len(name) == len(JOURNAL_SUFFIX):
        return None
    return journal.with_name(name.removesuffix(JOURNAL_SUFFIX))


JOURNAL_VERSION = 1


@dataclass(frozen=True)
class MoveRecord:
    """What the journal knows of one move."""

    state: MoveState = MoveState.PENDING
    throttle: ThrottlePlan | None = None
    baseline: NetworkSample | None = None
    cooldown_since: float | None = None
    reason: str = ""
    throttles_left: bool = False  # this move's throttles may be on the cluster
    submitted: bool = False  # its reassignment may have been submitted (it entered SUBMITTED)


@dataclass
class RunState:
    """A run reconstructed from its journal (only journal.py mutates it, record by record)."""

    plan: ExecutionPlan
    moves: dict[str, MoveRecord]
    outcome: RunOutcome | None = None
    end_reason: str = ""
    records: int = 0
    notes: list[str] = field(default_factory=list)
    # the SLO guard's rate ceiling per broker, where it is under the cap (executor.slo)
    guard_levels: dict[int, int] = field(default_factory=dict)
    guard_steps: int = 0  # guard records so far
    guard_lowest: int | None = None  # the lowest level any of them set
    # brokers the run cordoned for its drain, with their cordoned.log.dirs before (None: unset)
    cordons: dict[int, str | None] = field(default_factory=dict)
    # brokers whose log-dir copy throttle the run set, with its value before (None: unset)
    dir_throttles: dict[int, str | None] = field(default_factory=dict)
    # replicas (partition@broker) whose move between log dirs has ended
    dirs_ended: set[str] = field(default_factory=set)
    # the operator cancelled the run: a process that takes it over finishes the cancel (a
    # retry of its cancelled moves takes the cancel back)
    cancelled: bool = False
    # when: the first and last record after the header, the end record (None while the run is
    # going, or after a kill), and each move's milestones in its latest attempt
    started_at: float | None = None
    last_at: float | None = None
    ended_at: float | None = None
    ended_by: int = 0  # the number of the latest end record (0: none)
    # the cap the run started with (its header's; None if it keeps none), and the caps
    # resumes set after it (clock time, bytes/s), in order
    first_cap: float | None = None
    caps: list[tuple[float, int]] = field(default_factory=list)
    timings: dict[str, MoveTiming] = field(default_factory=dict)

    def cap_at(self, at: float | None = None) -> float | None:
        """The cap in force at clock time `at` (None: the latest)."""
        cap = self.first_cap
        for since, changed in self.caps:
            if at is None or since <= at:
                cap = changed
        return cap

    @property
    def timeline(self) -> RunTimeline:
        """When the run and each of its moves started, copied and ended."""
        return RunTimeline(self.started_at, self.ended_at, self.last_at, dict(self.timings))

    def state_of(self, name: str) -> MoveState:
        return self.moves[name].state

    def in_state(self, states: frozenset[MoveState]) -> list[Move]:
        """Moves (in plan order) whose journaled state is one of `states`."""
        return [m for m in self.plan.moves if self.moves[m.name].state in states]

    @property
    def unfinished(self) -> list[Move]:
        return [m for m in self.plan.moves if self.moves[m.name].state not in TERMINAL]

    @property
    def dirs_left(self) -> bool:
        """Moves between log dirs still to run, or their throttle still to put back."""
        dirs = self.plan.log_dirs
        return bool(self.dir_throttles) or (
            dirs is not None and any(m.replica not in self.dirs_ended for m in dirs.moves))


def header_record(plan: ExecutionPlan, settings: Mapping[str, Any], run_id: str = "") -> Record:
    """The first record of a journal: the plan itself, so cancel/resume need only the journal,
    and the run's id (the name it holds the cluster's lease under)."""
    return {
        "kind": RecordKind.RUN.value, "version": JOURNAL_VERSION, "plan_id": plan.plan_id,
        "fingerprint": plan.fingerprint, "settings": dict(settings),
        "moves": [{"topic": m.topic, "partition": m.partition, "current": list(m.current),
                   "target": list(m.target), "size_bytes": m.size_bytes} for m in plan.moves],
        **({"log_dirs": log_dirs_to_dict(plan.log_dirs)} if plan.log_dirs is not None else {}),
        **({"run_id": run_id} if run_id else {}),
    }


def header_settings(records: Sequence[Record]) -> dict[str, Any]:
    """The run's settings as its header keeps them (ExecutorConfig.to_journal); {} when it
    keeps none."""
    settings = records[0].get("settings", {}) if records else {}
    return dict(settings) if isinstance(settings, dict) else {}


def runs_plan(records: Sequence[Record], moves: Sequence[Move],
              log_dirs: DirPlan | None = None) -> bool:
    """The journal of `records` is a run of the plan of `moves` (and `log_dirs`): its header
    keeps their plan id (the same moves, partition, current and target replicas)."""
    return bool(records) and records[0].get("plan_id") == ExecutionPlan.of(
        moves, None, log_dirs).plan_id


def new_run_id() -> str:
    """A fresh run id: unique across machines, short enough to type."""
    return uuid.uuid4().hex[:16]


def header_run_id(records: Sequence[Record]) -> str:
    """The run id its header keeps; "" in journals written before run ids."""
    run_id = records[0].get("run_id") if records else None
    return run_id if isinstance(run_id, str) else ""


def run_id_of(records: Sequence[Record], journal: Path) -> str:
    """The run's id from its header; journals written before run ids name the plan and the
    journal file instead (unique enough: one journal is one run)."""
    run_id = header_run_id(records)
    if run_id:
        return run_id
    plan_id = records[0].get("plan_id", "") if records else ""
    return f"{str(plan_id)[:23]}@{journal.resolve()}"


def state_record(move: str, state: MoveState, at: float, *, throttle: ThrottlePlan | None = None,
                 baseline: NetworkSample | None = None, reason: str = "") -> Record:
    return StateRecord(move, state, at, throttle, baseline, reason or None).to_json()


def end_record(outcome: RunOutcome, at: float, reason: str = "") -> Record:
    return EndRecord(outcome, at, reason).to_json()


def _plan_from_header(record: Record) -> ExecutionPlan:
    if record.get("kind") != RecordKind.RUN or record.get("version") != JOURNAL_VERSION:
        raise ExecutionError("journal: the first record is not a version-1 run header; "
                             "is this a rebalance journal?")
    raw_moves = record.get("moves")
    if not isinstance(raw_moves, list):
        raise ExecutionError("journal: the run header has no list of 'moves'; the journal is "
                             "corrupt or edited")
    problems: list[str] = []
    try:
        moves = moves_from_entries(MOVES_ADAPTER.validate_python(raw_moves), problems)
    except ValidationError as exc:
        problems, _ = describe(exc, list[MoveEntry], _header_label, NOUNS)
    fingerprint = record.get("fingerprint")
    if not isinstance(fingerprint, str | None):
        problems.append(f"'fingerprint' must be a string, got {fingerprint!r:.40}")
    if problems:
        raise ExecutionError(f"journal: a move in the run header is malformed ({problems[0]}); "
                             "the journal is corrupt or edited")
    dirs = None
    if record.get("log_dirs") is not None:
        try:
            dirs = log_dirs_from_entry(LOG_DIRS_ADAPTER.validate_python(record["log_dirs"]))
        except ValidationError as exc:
            raise ExecutionError("journal: the run header's log_dirs are malformed "
                                 f"({_why(exc)}); the journal is corrupt or edited") from None
    plan = ExecutionPlan(moves, fingerprint, dirs)
    if plan.plan_id != record.get("plan_id"):
        raise ExecutionError("journal: the plan in the header does not match its plan_id")
    return plan


def _header_label(loc: tuple[int | str, ...]) -> str:
    return f"moves[{loc[0]}]"


def _why(exc: Exception) -> str:
    """A short reason for a malformed record: the missing key or the bad value."""
    if isinstance(exc, KeyError):
        return f"missing {exc.args[0]!r}"
    return str(exc) or type(exc).__name__


def apply_record(run: RunState, record: Record) -> None:
    """Fold one record (as a JSON line holds it) into `run`; an impossible state change or a
    malformed record raises ExecutionError naming the record (corrupt or edited journal)."""
    run.records += 1
    try:
        typed = parse_record(record)
    except UnknownKind as exc:
        raise ExecutionError(f"journal: unknown record kind {exc.kind!r} (record "
                             f"{run.records})") from None
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise ExecutionError(f"journal: record {run.records} ({record.get('kind')!r}) is "
                             f"malformed ({_why(exc)}); the journal is corrupt or edited"
                             ) from None
    fold(run, typed)


def fold(run: RunState, record: RunRecord) -> None:
    """Fold one typed record into `run` (`run.records` already counts it)."""
    _times(run, record)
    match record:
        case EndRecord(outcome=outcome, reason=reason):
            # Journals written before a cancel of a stopped run recorded its resume end it
            # again after the cancel's records; only an end right after an end is a duplicate.
            if run.outcome is not None and run.ended_by == run.records - 1:
                raise ExecutionError(f"journal: record {run.records} ends a run that its "
                                     "record before ended already; the journal is corrupt or "
                                     "edited")
            run.outcome, run.end_reason, run.ended_by = outcome, reason, run.records
        case ResumeRecord(at=at, max_bytes_per_sec=cap):
            run.outcome, run.end_reason = None, ""
            if cap is not None:
                run.caps.append((at, cap))
        case NoteRecord(message=message):
            run.notes.append(message)
        case RatesRecord(move=name, throttle=throttle):
            run.moves[_known(run, name)] = replace(run.moves[name], throttle=throttle)
        case ThrottlesRecord(move=name, present=present):
            run.moves[_known(run, name)] = replace(run.moves[name], throttles_left=present)
        case RetryRecord(move=name):
            _retry(run, name)
            run.cancelled = False
        case CancelRecord():
            run.cancelled = True
        case GuardRecord(levels=levels):
            run.guard_levels = dict(levels)
            run.guard_steps += 1
            lows = [*levels.values(), *([run.guard_lowest] if run.guard_lowest else [])]
            run.guard_lowest = min(lows, default=None)
        case CordonRecord(priors=priors, present=present):
            run.cordons = dict(priors) if present else {}
        case DirThrottleRecord(priors=priors, present=present):
            run.dir_throttles = dict(priors) if present else {}
        case DirMoveRecord(replica=replica):
            dirs = run.plan.log_dirs
            if dirs is None or replica not in dirs.replicas:
                raise ExecutionError(f"journal: record {run.records} ends a move between log "
                                     f"dirs of {replica!r}, which the plan does not have")
            run.dirs_ended.add(replica)
        case StateRecord():
            _enter(run, record)


def _times(run: RunState, record: RunRecord) -> None:
    """The run's first, last and end times, and the milestone a state record marks."""
    at = record.at
    run.started_at = at if run.started_at is None else min(run.started_at, at)
    run.last_at = at if run.last_at is None else max(run.last_at, at)
    match record:
        case EndRecord():
            run.ended_at = at
        case ResumeRecord():
            run.ended_at = None
        case RetryRecord(move=name):
            run.timings[name] = MoveTiming()
        case StateRecord(move=name, state=state, reason=reason):
            run.timings[name] = milestone(run.timings.get(name, MoveTiming()), state.value, at,
                                          reason or "")


def _known(run: RunState, name: str) -> str:
    if name not in run.moves:
        raise ExecutionError(f"journal: record {run.records} names unknown move {name}")
    return name


def _enter(run: RunState, record: StateRecord) -> None:
    old = run.moves[_known(run, record.move)]
    new_state = transition(record.move, old.state, record.state)
    run.moves[record.move] = MoveRecord(
        state=new_state,
        throttle=record.throttle if record.throttle is not None else old.throttle,
        baseline=record.baseline if record.baseline is not None else old.baseline,
        cooldown_since=record.at if new_state is MoveState.COOLING_DOWN
        else old.cooldown_since,
        reason=record.reason if record.reason is not None else old.reason,
        throttles_left=_throttles_left(old, new_state),
        submitted=old.submitted or new_state is MoveState.SUBMITTED,
    )


RETRYABLE = frozenset({MoveState.FAILED, MoveState.CANCELLED})


def _retry(run: RunState, name: str) -> None:
    """A failed or cancelled move starts again from nothing (its brokers are back): allowed
    only when none of its throttles can be left, so it is exactly a pending move."""
    old = run.moves[_known(run, name)]
    if old.state not in RETRYABLE or old.throttles_left:
        left = " with throttles left" if old.throttles_left else ""
        raise ExecutionError(f"journal: record {run.records} retries move {name} in state "
                             f"{old.state.value}{left}; the journal is corrupt or edited")
    run.moves[name] = MoveRecord(reason=f"retried after: {old.reason}" if old.reason else "")


def retry_record(move: str, at: float) -> Record:
    return RetryRecord(move, at).to_json()


def _throttles_left(old: MoveRecord, new_state: MoveState) -> bool:
    if new_state is MoveState.THROTTLING:
        return True
    if old.state in (MoveState.UNTHROTTLING, MoveState.CANCELLING) and new_state is not \
            MoveState.FAILED:
        return False  # restore confirmed before leaving these states
    return old.throttles_left


def replay(records: Sequence[Record]) -> RunState:
    """The run state a sequence of journal records describes."""
    if not records:
        raise ExecutionError("journal is empty: the run never started")
    plan = _plan_from_header(records[0])
    run = RunState(plan, {m.name: MoveRecord() for m in plan.moves}, records=1,
                   first_cap=RunHeader.of(header_settings(records)).cap_bytes_per_sec)
    for record in records[1:]:
        apply_record(run, record)
    return run


def leaves_work(records: Sequence[Record]) -> bool:
    """True when the journal has a move in flight or throttles that may be left: a process
    that stops on it without ending the run keeps the lease for this run."""
    run = replay(records)
    idle = {MoveState.PENDING, MoveState.DONE, MoveState.CANCELLED, MoveState.FAILED}
    return bool(run.dir_throttles) or any(
        run.state_of(m.name) not in idle or run.moves[m.name].throttles_left
        for m in run.plan.moves)


class JournalSink(Protocol):
    """Where records go: durably, in order."""

    def append(self, record: Record) -> None: ...

    def cancel_requested(self) -> bool: ...

    def clear_cancel_request(self) -> None: ...


def parse_lines(data: bytes, origin: str) -> tuple[list[Record], int]:
    """Records in `data` and the byte length of the intact prefix (a torn last line is dropped).

    A bad line that is not the last one is corruption, not a crash artefact, and raises.
    """
    records: list[Record] = []
    good = 0
    lines = data.split(b"\n")
    for number, line in enumerate(lines, start=1):
        is_last = number == len(lines)
        if not line.strip():
            good += len(line) + (0 if is_last else 1)
            continue
        try:
            record = decode_json(line)
            # The writer ends each record with its newline in one write and fsyncs it before
            # the record's side effect runs: a last line without one was never confirmed, so
            # its side effect never ran and the line is a torn tail, even when it parses.
            if not isinstance(record, dict) or (is_last and not data.endswith(b"\n")):
                raise ValueError("incomplete record")
        except ValueError as exc:
            if is_last:
                break
            if not records:
                raise ExecutionError(f"{origin} is not a rebalance journal: its first line is "
                                     f"not a JSON record ({exc}); give the run's "
                                     "PLAN.json.journal file") from exc
            raise ExecutionError(f"journal {origin}: line {number} is not a JSON record ({exc}); "
                                 "the journal is corrupt, not torn; inspect it by hand") from exc
        records.append(record)
        good += len(line) + 1
    return records, good


class JournalFile:
    """A journal on disk: exclusive lock, fsync per record, a torn tail cut off before the
    first record is appended (never on open: a run refused after opening writes nothing)."""

    def __init__(self, path: Path, handle: IO[bytes], intact_bytes: int | None = None) -> None:
        self.path = path
        self._handle = handle
        self._torn_from = intact_bytes  # where a torn tail begins, until it is cut off

    @classmethod
    def create(cls, path: Path, header: Record) -> JournalFile:
        """Start a new journal; refuses to overwrite an existing one."""
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError as exc:
            raise ExecutionError(f"journal {path} already exists: resume or cancel that run, "
                                 "or choose another --journal path") from exc
        except OSError as exc:
            raise ExecutionError(f"cannot create the journal {path}: {exc.strerror}; "
                                 "choose a writable --journal path") from exc
        journal = cls(path, _locked(os.fdopen(fd, "ab"), path))
        journal.clear_cancel_request()  # left by a run of an earlier journal at this path
        journal.append(header)
        _fsync_dir(path)
        return journal

    @classmethod
    def open(cls, path: Path) -> tuple[JournalFile, list[Record]]:
        """Open an existing journal for appending; returns its intact records."""
        if not path.exists():
            raise InputError(f"no journal at {path}: nothing to resume, cancel or clear; give "
                             "the run's journal (--journal PATH)")
        try:
            raw = open(path, "r+b")  # noqa: SIM115 (kept open for appends)
        except OSError as exc:
            raise ExecutionError(f"cannot open the journal {path}: {exc.strerror}; give the "
                                 "journal file (--journal PATH)") from None
        handle = _locked(raw, path)
        data = handle.read()
        records, good = parse_lines(data, str(path))
        try:
            _require_header(records, path)
        except ExecutionError:
            handle.close()
            raise
        handle.seek(good)
        # a torn tail is repaired only on a file proven to be a journal, and only when the
        # run writes to it: a refusal after this point leaves the file's bytes as they were
        journal = cls(path, handle, good if good < len(data) else None)
        # A cancel request is for the process that held the journal when it was made; one
        # still here was made to a process that ended before it saw it, and would cancel this
        # one at once. Requests made from now on (this process holds the lock) count.
        journal.clear_cancel_request()
        return journal, records

    def append(self, record: Record) -> None:
        if self._torn_from is not None:
            self._handle.truncate(self._torn_from)
            self._torn_from = None
        line = json.dumps(record, sort_keys=True, separators=(",", ":")) + "\n"
        self._handle.write(line.encode())
        self._handle.flush()
        os.fsync(self._handle.fileno())

    @property
    def cancel_path(self) -> Path:
        return self.path.with_name(self.path.name + ".cancel")

    def cancel_requested(self) -> bool:
        return self.cancel_path.exists()

    def clear_cancel_request(self) -> None:
        self.cancel_path.unlink(missing_ok=True)

    def close(self) -> None:
        self._handle.close()


def _require_header(records: Sequence[Record], path: Path) -> None:
    """Refuse (changing nothing) a file whose first complete record is not a valid journal
    header: a file cut inside its header, a plan or any other JSON given as --journal."""
    if not records:
        raise ExecutionError(f"{path} holds no complete journal record (cut inside its header, "
                             "or not a journal at all); nothing was changed. A run that never "
                             "wrote its header changed nothing on the cluster; give the run's "
                             "PLAN.json.journal otherwise")
    replay(records[:1])


def request_cancel(path: Path) -> None:
    """Ask the executor running on journal `path` (another process) to cancel its run."""
    path.with_name(path.name + ".cancel").touch()


def read_records(path: Path) -> list[Record]:
    """A journal's intact records, read without locking it (a run may hold it); replay them
    to check them."""
    if not path.exists():
        raise InputError(f"no journal at {path}: give the run's journal (--journal PATH, or "
                         "the plan it sits beside)")
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ExecutionError(f"cannot read the journal {path}: {exc.strerror}; give the "
                             "journal file (--journal PATH)") from None
    return parse_lines(data, str(path))[0]


def read_journal(path: Path) -> RunState:
    """Replay a journal without locking it (for status while a run is going)."""
    return replay(read_records(path))


def journal_in_use(path: Path) -> bool:
    """True when another process (a running executor) holds the journal's lock."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # closing releases a lock taken here
    return False


def _locked(handle: IO[bytes], path: Path) -> IO[bytes]:
    try:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError as exc:
        handle.close()
        raise ExecutionError(f"journal {path} is in use by a running executor; wait for it, "
                             "or ask it to cancel (rebalance cancel)") from exc
    return handle


def _fsync_dir(path: Path) -> None:
    fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class Journal:
    """The run state plus its durable sink: every change is appended before it is applied."""

    def __init__(self, run: RunState, sink: JournalSink) -> None:
        self.run = run
        self._sink = sink

    def _write(self, record: RunRecord) -> None:
        """Append `record` durably, then fold it into the run exactly as replay will read it
        back (from its JSON form)."""
        line = record.to_json()
        self._sink.append(line)
        apply_record(self.run, line)

    def enter(self, move: str, state: MoveState, at: float, *,
              throttle: ThrottlePlan | None = None, baseline: NetworkSample | None = None,
              reason: str = "") -> None:
        """Record that `move` enters `state` (checked against the table), durably."""
        transition(move, self.run.state_of(move), state)
        self._write(StateRecord(move, state, at, throttle, baseline, reason or None))

    def end(self, outcome: RunOutcome, at: float, reason: str = "") -> None:
        self._write(EndRecord(outcome, at, reason))

    def cancel(self, at: float) -> None:
        """Record that the operator cancelled the run, before any move is reverted."""
        self._write(CancelRecord(at))

    def reopen(self, at: float, cap: int | None = None) -> None:
        """Mark a stopped run as resumed, or the cap it goes on under (None: unchanged)."""
        self._write(ResumeRecord(at, cap))

    def throttles(self, move: str, present: bool, at: float) -> None:
        """Record that `move`'s throttles are (about to be) present or are confirmed gone."""
        self._write(ThrottlesRecord(move, present, at))

    def update_throttle(self, move: str, throttle: ThrottlePlan, at: float) -> None:
        """Record new rates for `move` (same priors and entries) before they are set."""
        self._write(RatesRecord(move, throttle, at))

    def guard(self, levels: Mapping[int, int], changes: Sequence[str], at: float) -> None:
        """Record the SLO guard's new levels (every broker under the cap) and why, before the
        rates are set."""
        self._write(GuardRecord(dict(levels), tuple(changes), at))

    def cordon(self, priors: Mapping[int, str | None], present: bool, at: float) -> None:
        """Record the drained brokers' cordon: about to be set (with the values it replaces),
        or those values put back."""
        self._write(CordonRecord(dict(priors), present, at))

    def dir_throttle(self, priors: Mapping[int, str | None], present: bool, at: float) -> None:
        """Record the log-dir copy throttle: about to be set (with the values it replaces), or
        its priors back."""
        self._write(DirThrottleRecord(dict(priors), present, at))

    def dir_moved(self, replica: str, at: float, reason: str = "") -> None:
        """Record that a replica's move between log dirs ended (a reason: given up)."""
        self._write(DirMoveRecord(replica, at, reason))

    def note(self, message: str, at: float) -> None:
        self._write(NoteRecord(message, at))

    def cancel_requested(self) -> bool:
        return self._sink.cancel_requested()

    def clear_cancel_request(self) -> None:
        self._sink.clear_cancel_request()
