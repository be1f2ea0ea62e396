"""A run's status from its journal alone (for `rebalance status`, even while a run is going)."""

from __future__ import annotations

from dataclasses import dataclass

from executor.journal import RunState
from executor.records import RunOutcome
from executor.state import MoveState


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
        if self.outcome is RunOutcome.COMPLETED:
            return "nothing: every move is done"
        if self.throttles_left and self.outcome is not None:
            return "run `rebalance clear-throttles` (throttles may be left on the brokers)"
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
    """What may still hold a throttle the run set: moves by name, and the log-dir throttle."""
    moves = tuple(m.name for m in run.plan.moves if run.moves[m.name].throttles_left)
    brokers = sorted(run.dir_throttles)
    return moves + ((f"the log-dir throttle of broker(s) {brokers}",) if brokers else ())
