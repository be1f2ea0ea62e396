"""What the run report shows, from the journal's records alone (pure; no I/O).

Every record after the header carries `at` (seconds since the epoch), so the journal is also
the run's timeline: when each move entered each state, which throttle rates it set (and when
adaptive re-derivation changed them), how long it copied, how long its gate held it. Times in
the view are seconds from the run's first record.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum

from executor.config import RunHeader
from executor.journal import header_run_id, replay
from executor.records import (
    DirMoveRecord,
    DirThrottleRecord,
    GuardRecord,
    NoteRecord,
    RatesRecord,
    Record,
    RetryRecord,
    RunOutcome,
    RunRecord,
    StateRecord,
    parse_record,
)
from executor.state import TERMINAL, MoveState
from executor.status import RunStatus, summarize
from executor.throttle import FOLLOWER_RATE, ThrottlePlan
from executor.timeline import run_header
from planner.result import Move


class Phase(StrEnum):
    """The parts of a move's life the timeline colours."""

    PREPARING = "preparing"  # throttling, submitted
    COPYING = "copying"
    FINISHING = "finishing"  # verifying, unthrottling, electing
    GATE = "cooling down / gate"
    CANCELLING = "cancelling"


_S = MoveState
PHASE_OF: dict[MoveState, Phase] = {
    _S.THROTTLING: Phase.PREPARING, _S.SUBMITTED: Phase.PREPARING, _S.COPYING: Phase.COPYING,
    _S.VERIFYING: Phase.FINISHING, _S.UNTHROTTLING: Phase.FINISHING,
    _S.ELECTING: Phase.FINISHING, _S.COOLING_DOWN: Phase.GATE, _S.CANCELLING: Phase.CANCELLING,
}


@dataclass(frozen=True, slots=True)
class Span:
    """A move in one state from `start` to `end` (seconds from the run's start)."""

    state: MoveState
    start: float
    end: float

    @property
    def phase(self) -> Phase:
        return PHASE_OF[self.state]


@dataclass(frozen=True, slots=True)
class CapSegment:
    """The follower (receiving) throttle rate a move set on `broker`, in force from `start` to
    `end` (until the move restored its throttles, or the rate was re-derived)."""

    broker: int
    move: str
    start: float
    end: float
    bytes_per_sec: int


@dataclass(frozen=True, slots=True)
class CopySegment:
    """A finished copy onto `broker`: the partition's bytes over the time the reassignment was
    listed (polled, so the measured rate is a little below the true one)."""

    broker: int
    move: str
    start: float
    end: float
    bytes_copied: int

    @property
    def bytes_per_sec(self) -> float:
        return self.bytes_copied / (self.end - self.start) if self.end > self.start else 0.0


@dataclass(frozen=True, slots=True)
class GuardSegment:
    """The SLO guard's ceiling on `broker` below the cap, from `start` to `end`: every move's
    rate on that broker was at most this, whatever the move's own rate."""

    broker: int
    start: float
    end: float
    bytes_per_sec: int


@dataclass(frozen=True, slots=True)
class RateChange:
    """A re-derived throttle rate (--adaptive): when, for which move and broker, old -> new."""

    at: float
    move: str
    broker: int
    config: str
    old: int | None
    new: int


@dataclass(frozen=True)
class MoveRun:
    """One move's life in the journal."""

    index: int
    move: Move
    state: MoveState
    reason: str
    spans: tuple[Span, ...]
    attempts: int
    gate_hold: float  # seconds the gate kept the move past its settle time

    @property
    def started(self) -> float | None:
        return self.spans[0].start if self.spans else None

    @property
    def ended(self) -> float | None:
        return self.spans[-1].end if self.spans and self.state in TERMINAL else None

    @property
    def copy_seconds(self) -> float:
        return sum(s.end - s.start for s in self.spans if s.state is MoveState.COPYING)


@dataclass(frozen=True)
class RunView:
    """Everything the run report shows."""

    run_id: str
    started_at: float | None  # epoch seconds of the first record after the header
    elapsed: float  # seconds from the start to the last record (or `now` while running)
    outcome: RunOutcome | None
    end_reason: str
    header: RunHeader
    status: RunStatus
    moves: tuple[MoveRun, ...]
    caps: tuple[CapSegment, ...]
    copies: tuple[CopySegment, ...]
    guard: tuple[GuardSegment, ...]
    rate_changes: tuple[RateChange, ...]
    notes: tuple[tuple[float, str], ...]
    cap_bytes_per_sec: float | None  # in force at the end (a resume may change the header's)

    @property
    def settle_seconds(self) -> float:
        """The wait after a data move before its gate may open: the run's cooldown."""
        return self.header.cooldown_seconds

    @property
    def target_brokers(self) -> tuple[int, ...]:
        return tuple(sorted({c.broker for c in self.caps} | {c.broker for c in self.copies}))

    @property
    def gate_held(self) -> tuple[MoveRun, ...]:
        return tuple(m for m in self.moves if m.gate_hold > 0)


@dataclass
class _MoveTrack:
    """Mutable while the records are folded; frozen into a MoveRun at the end."""

    state: MoveState = MoveState.PENDING
    since: float = 0.0
    spans: list[Span] = field(default_factory=list)
    reason: str = ""
    attempts: int = 0
    gate_hold: float = 0.0
    caps: dict[int, tuple[float, int]] = field(default_factory=dict)  # broker -> since, rate


# A move's throttles are restored before it enters one of these (or, failed, left unknown).
_THROTTLES_GONE = frozenset({MoveState.ELECTING, MoveState.COOLING_DOWN, MoveState.CANCELLED,
                             MoveState.FAILED})


class _Fold:
    """Folds journal records into spans, caps, copies and rate changes, in record order."""

    def __init__(self, moves: Sequence[Move], t0: float, settle: float) -> None:
        self.moves = {m.name: m for m in moves}
        self.tracks = {m.name: _MoveTrack() for m in moves}
        self.t0, self.settle = t0, settle
        self.caps: list[CapSegment] = []
        self.copies: list[CopySegment] = []
        self.rate_changes: list[RateChange] = []
        self.notes: list[tuple[float, str]] = []
        self.guard: list[GuardSegment] = []
        self._levels: dict[int, tuple[float, int]] = {}  # broker -> since, level

    def record(self, record: RunRecord) -> None:
        at = record.at - self.t0
        match record:
            case StateRecord(move=name, state=state):
                self._state(name, state, at, record)
            case RatesRecord(move=name, throttle=throttle):
                self._rates(name, throttle, at)
            case RetryRecord(move=name):
                track = self.tracks[name]
                track.state, track.reason = MoveState.PENDING, ""
            case NoteRecord(message=message):
                self.notes.append((at, message))
            case GuardRecord(levels=levels, changes=changes):
                self.notes.append((at, f"SLO guard: {'; '.join(changes)}"))
                self._guard_levels(levels, at)
            case DirThrottleRecord(priors=priors, present=present):
                said = "set" if present else "put back as it was"
                self.notes.append((at, f"log-dir throttle {said} on broker(s) {sorted(priors)}"))
            case DirMoveRecord(replica=replica, reason=reason):
                self.notes.append((at, f"{replica}: not moved between log dirs ({reason})"
                                   if reason else f"{replica}: moved to its new log dir"))

    def _guard_levels(self, levels: Mapping[int, int], at: float) -> None:
        """A guard record lists every broker under the cap; one it leaves out is back at it."""
        now = dict(levels)
        for broker, (since, level) in sorted(self._levels.items()):
            if now.get(broker) != level:
                self.guard.append(GuardSegment(broker, since, at, level))
                del self._levels[broker]
        for broker, level in now.items():
            self._levels.setdefault(broker, (at, level))

    def _state(self, name: str, state: MoveState, at: float, record: StateRecord) -> None:
        track, move = self.tracks[name], self.moves[name]
        if track.state is not MoveState.PENDING:
            track.spans.append(Span(track.state, track.since, at))
        if track.state is MoveState.COPYING and state is MoveState.VERIFYING:
            self.copies.extend(CopySegment(b, name, track.since, at, move.size_bytes)
                               for b in move.added_brokers)
        if track.state is MoveState.COOLING_DOWN and state is MoveState.DONE:
            settle = self.settle if move.bytes_moved else 0.0
            track.gate_hold = max(0.0, at - track.since - settle)
        if state is MoveState.THROTTLING:
            track.attempts += 1
            if record.throttle is not None:
                track.caps = {b: (at, rate) for b, rate in
                              _follower_rates(record.throttle).items()}
        if state in _THROTTLES_GONE:
            self._close_caps(name, track, at)
        track.state, track.since = state, at
        track.reason = record.reason if record.reason is not None else track.reason

    def _rates(self, name: str, throttle: ThrottlePlan, at: float) -> None:
        track = self.tracks[name]
        for broker, rate in sorted(_follower_rates(throttle).items()):
            since, old = track.caps.get(broker, (at, None))
            if old == rate:
                continue
            if old is not None:
                self.caps.append(CapSegment(broker, name, since, at, old))
            self.rate_changes.append(RateChange(at, name, broker, FOLLOWER_RATE, old, rate))
            track.caps[broker] = (at, rate)

    def _close_caps(self, name: str, track: _MoveTrack, at: float) -> None:
        for broker, (since, rate) in sorted(track.caps.items()):
            self.caps.append(CapSegment(broker, name, since, at, rate))
        track.caps = {}

    def finish(self, now: float) -> None:
        """Moves still in a state at the end get a span (and caps) up to `now`."""
        for name, track in self.tracks.items():
            if track.state not in TERMINAL and track.state is not MoveState.PENDING:
                track.spans.append(Span(track.state, track.since, max(now, track.since)))
                self._close_caps(name, track, max(now, track.since))
        self._guard_levels({}, now)


def _follower_rates(throttle: ThrottlePlan) -> dict[int, int]:
    """Follower (receiving) rates per broker in a journaled throttle plan."""
    return {b: rates[FOLLOWER_RATE] for b, rates in throttle.broker_rates.items()
            if FOLLOWER_RATE in rates}


def run_view(records: Sequence[Record], now: float | None = None) -> RunView:
    """The view of a run from its journal records (validated by replaying them first).

    `now` (epoch seconds) closes the spans of moves still in flight; without it they end at
    the last record."""
    run = replay(records)
    header = run_header(records)
    t0 = run.started_at if run.started_at is not None else (now or 0.0)
    last = run.last_at if run.last_at is not None else t0
    end = last if now is None or run.outcome is not None else max(now, last)
    fold = _Fold(run.plan.moves, t0, header.cooldown_seconds)
    for record in records[1:]:
        fold.record(parse_record(record))  # replay accepted every one of them
    fold.finish(end - t0)
    moves = tuple(MoveRun(i, m, run.state_of(m.name), fold.tracks[m.name].reason,
                          tuple(fold.tracks[m.name].spans), fold.tracks[m.name].attempts,
                          fold.tracks[m.name].gate_hold)
                  for i, m in enumerate(run.plan.moves, start=1))
    return RunView(
        run_id=header_run_id(records), started_at=run.started_at,
        elapsed=end - t0, outcome=run.outcome, end_reason=run.end_reason, header=header,
        status=summarize(run), moves=moves,
        caps=tuple(sorted(fold.caps, key=lambda c: (c.broker, c.start))),
        copies=tuple(sorted(fold.copies, key=lambda c: (c.broker, c.start))),
        guard=tuple(sorted(fold.guard, key=lambda g: (g.broker, g.start))),
        rate_changes=tuple(fold.rate_changes), notes=tuple(fold.notes),
        cap_bytes_per_sec=run.cap_at())
