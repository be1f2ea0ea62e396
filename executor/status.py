"""A run's status from its journal alone (for `rebalance status`, even while a run is going):
the counts (`summarize`) and the whole view `status` shows (`status_view`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from executor.journal import RunState, replay
from executor.milestones import RunTimeline
from executor.records import Record, RunOutcome
from executor.state import TERMINAL, MoveState
from executor.timeline import Eta, estimate_eta, run_header


@dataclass(frozen=True, slots=True)
class MoveStatus:
    index: int  # 1-based position in the plan
    name: str
    state: MoveState
    bytes_total: int
    reason: str
    throttles_left: bool


@dataclass(frozen=True)
class RunStatus:
    """Counts, bytes and the moves worth showing (in flight, failed, cancelled)."""

    plan_id: str
    outcome: RunOutcome | None  # None while running (or killed: resume it)
    end_reason: str
    total_moves: int
    counts: dict[MoveState, int]
    bytes_done: int
    bytes_total: int
    notable: tuple[MoveStatus, ...]
    throttles_left: tuple[str, ...]
    dir_moves_total: int = 0  # replicas the plan moves between log dirs (JBOD)
    dir_moves_ended: int = 0

    @property
    def next_step(self) -> str:
        """What an operator should do next, in one sentence, when it is not known whether an
        executor holds the journal."""
        return self.next_step_for(None)

    def next_step_for(self, running: bool | None) -> str:
        """What an operator should do next, knowing whether an executor holds the journal
        (None: not known)."""
        if self.throttles_left and self.outcome is not None:
            return "run `rebalance clear-throttles` (throttles may be left on the brokers)"
        if self.outcome is RunOutcome.COMPLETED:
            return "nothing: every move is done"
        if self.outcome is None and running:
            return ("nothing: an executor is running this run (`rebalance cancel` asks it to "
                    "revert)")
        if self.outcome is None and running is False:
            return ("`rebalance resume` continues the interrupted run and `rebalance cancel` "
                    "reverts it")
        if self.outcome is None:
            return ("if no executor is running on this journal, `rebalance resume` continues "
                    "and `rebalance cancel` reverts")
        pending = self.counts.get(MoveState.PENDING, 0)
        return f"`rebalance resume` to run the {pending} pending move(s)" if pending \
            else "nothing left to run"


def summarize(run: RunState) -> RunStatus:
    """The status of `run`."""
    counts: dict[MoveState, int] = {}
    notable: list[MoveStatus] = []
    bytes_done = 0
    for index, move in enumerate(run.plan.moves, start=1):
        record = run.moves[move.name]
        counts[record.state] = counts.get(record.state, 0) + 1
        if record.state is MoveState.DONE:
            bytes_done += move.bytes_moved
        elif record.state is not MoveState.PENDING:
            notable.append(MoveStatus(index, move.name, record.state, move.bytes_moved,
                                      record.reason, record.throttles_left))
    left = throttles_left(run)
    dirs = run.plan.log_dirs
    return RunStatus(run.plan.plan_id, run.outcome, run.end_reason, len(run.plan.moves),
                     counts, bytes_done, run.plan.bytes_moved, tuple(notable), left,
                     len(dirs.moves) if dirs is not None else 0, len(run.dirs_ended))


def throttles_left(run: RunState) -> tuple[str, ...]:
    """What may still hold a config the run set: moves by name, the log-dir throttle, and the
    drain's cordon once the run was cancelled (a drain done keeps it on purpose)."""
    moves = tuple(m.name for m in run.plan.moves if run.moves[m.name].throttles_left)
    brokers = sorted(run.dir_throttles)
    cordoned = sorted(run.cordons) if run.outcome is RunOutcome.CANCELLED else []
    return (moves + ((f"the log-dir throttle of broker(s) {brokers}",) if brokers else ())
            + ((f"the drain's cordon on broker(s) {cordoned}",) if cordoned else ()))


@dataclass(frozen=True)
class StatusView:
    """Everything `status` shows, from the journal's records and whether an executor holds
    the journal now."""

    journal: str
    plan: str | None
    running: bool
    run: RunState
    status: RunStatus
    times: RunTimeline
    eta: Eta | None
    cap: float | None
    now: float

    @property
    def state(self) -> str:
        """completed / stopped / cancelled, or running / interrupted while it has no end."""
        if self.status.outcome is not None:
            return self.status.outcome.value
        return "running" if self.running else "interrupted"

    @property
    def elapsed(self) -> float | None:
        """From the first record to the end, to now while running, or to the last record of
        a run no executor holds (the time since then is not the run's)."""
        times = self.times
        if times.ended_at is None and not self.running and times.last_at is not None:
            return times.elapsed(times.last_at)
        return times.elapsed(self.now)

    @property
    def in_flight(self) -> list[tuple[int, str, MoveState, int, float | None]]:
        """(index, name, state, bytes, started_at) of the moves between pending and an end."""
        return [(i, m.name, self.run.state_of(m.name), m.bytes_moved,
                 self.times.of(m.name).started_at)
                for i, m in enumerate(self.run.plan.moves, start=1)
                if self.run.state_of(m.name) not in TERMINAL | {MoveState.PENDING}]


def status_view(records: Sequence[Record], journal: str, plan: str | None, running: bool,
                settle_seconds: float, now: float) -> StatusView:
    """The status of the run `records` (a journal accepted by `replay`) at clock time `now`,
    timed and rated by the cap in force now (a resume may have changed the run's own)."""
    run = replay(records)
    cap = run.cap_at()
    times = run.timeline
    header = run_header(records)
    eta = estimate_eta(run, times, cap, settle_seconds, now, header.concurrency,
                       header.quota_window_seconds)
    return StatusView(journal, plan, running, run, summarize(run), times, eta, cap, now)
