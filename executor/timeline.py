"""When each move of a run started, copied and ended, read from the journal's timestamps; the
run's observed copy pace, and an ETA from it (the end-of-run summary and `rebalance status`).

Pure functions over journal records that `replay` has already accepted: the journal is the run,
so a summary after a resume, or a status from another terminal, sees the same times.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from executor.config import Concurrency, RunHeader
from executor.journal import RunState, header_settings, replay
from executor.milestones import RunTimeline
from executor.records import Record
from executor.schedule import COPY_EFFICIENCY, DEFAULT_GAP_SECONDS, schedule
from executor.state import MoveState
from planner.result import Move

S = MoveState

# States in which a move's data is already in place (its copy ended and was verified).
COPIED: frozenset[MoveState] = frozenset({S.VERIFYING, S.UNTHROTTLING, S.ELECTING,
                                          S.COOLING_DOWN, S.DONE})


def timeline(records: Sequence[Record]) -> RunTimeline:
    """The milestones `records` (a journal, header first) describe, as their replay folds
    them."""
    return replay(records).timeline


@dataclass(frozen=True, slots=True)
class CopyPace:
    """Bytes of the copies that ended in place over the time they took."""

    bytes_copied: int
    seconds: float
    cap_seconds: float = 0.0  # each copy's time by the cap in force as it started
    caps: frozenset[float] = frozenset()  # the caps those copies started under

    @property
    def rate(self) -> float | None:
        """Mean copy rate, bytes/s; None before any copy has ended."""
        return self.bytes_copied / self.seconds if self.seconds > 0 else None

    @property
    def cap(self) -> float | None:
        """The cap the timed copies ran under, weighted by their time (a resume may have
        changed it); None when no copy was timed or no cap is known."""
        return self.cap_seconds / self.seconds if self.seconds > 0 and self.cap_seconds else None


MIN_OBSERVED_SECONDS = 5.0  # of timed copies before their mean rate times the rest


def copy_pace(run: RunState, times: RunTimeline) -> CopyPace:
    """The run's observed copy pace: moves whose data is in place and whose copy was timed."""
    copied, seconds, cap_seconds, caps = 0, 0.0, 0.0, set()
    for move in run.plan.moves:
        timing = times.of(move.name)
        took = timing.copy_seconds
        if move.bytes_moved and run.state_of(move.name) in COPIED and took:
            cap = run.cap_at(timing.copying_at) or 0.0
            copied += move.bytes_moved
            seconds += took
            cap_seconds += took * cap
            caps.add(cap)
    return CopyPace(copied, seconds, cap_seconds, frozenset(caps))


@dataclass(frozen=True, slots=True)
class Eta:
    """Time until the run's unfinished moves are done, and what it assumes."""

    seconds: float
    bytes_left: int  # to copy, the move in flight counted by its copy time so far
    rate: float  # bytes/s the remaining copies are assumed to run at
    observed: bool  # True: the run's mean copy rate so far; False: COPY_EFFICIENCY of the cap
    # seconds of settle waits (cooldown, quota window) between the moves left; side by side,
    # the wait between two moves on a broker
    waits: float
    concurrency: Concurrency = 1  # the run's: above 1 or auto, moves copy side by side


def estimate_eta(run: RunState, times: RunTimeline, cap: float | None, settle_seconds: float,
                 now: float, concurrency: Concurrency = 1,
                 quota_window_seconds: float = 0.0) -> Eta | None:
    """Remaining bytes over the observed mean copy rate (until a copy has ended, the share of
    the cap Kafka's quota delivers over whole copies, as the plan review counts), the moves
    left laid out under the run loop's rules (`remaining_seconds`): one at a time in plan
    order, or side by side with the run's concurrency above 1 (or auto). None when nothing is
    left to run or no rate is known."""
    unfinished = run.unfinished
    pace = copy_pace(run, times)
    # copies timed for only a few seconds in all (a tiny partition, such as the lease topic's)
    # measure start-up and polling, not the copy rate
    rate = pace.rate if pace.seconds >= MIN_OBSERVED_SECONDS else None
    observed = rate is not None
    if rate is None and cap is not None:
        rate = cap * COPY_EFFICIENCY  # what the plan review counts too
    if not unfinished or rate is None or rate <= 0:
        return None
    left: dict[str, float] = {}  # what each move still has to copy
    for move in to_copy(run):
        copying_at = times.of(move.name).copying_at
        copying = run.state_of(move.name) is S.COPYING
        done = rate * (now - copying_at) if copying and copying_at else 0.0
        left[move.name] = max(0.0, move.bytes_moved - done)
    seconds, waits = remaining_seconds(unfinished, left, rate, concurrency, settle_seconds,
                                       quota_window_seconds)
    return Eta(seconds, round(sum(left.values())), rate, observed, waits,
               concurrency if concurrency != 1 and left else 1)


def to_copy(run: RunState) -> list[Move]:
    """The unfinished moves with bytes still to copy: not in place yet (COPIED) and not being
    reverted."""
    return [m for m in run.unfinished
            if run.state_of(m.name) not in COPIED and run.state_of(m.name) is not S.CANCELLING]


def remaining_seconds(unfinished: Sequence[Move], left: Mapping[str, float], rate: float,
                      concurrency: Concurrency, settle_seconds: float,
                      quota_window_seconds: float = 0.0) -> tuple[float, float]:
    """Seconds until `unfinished` (plan order) are done when each still copies its `left`
    bytes (a move not in `left` copies nothing more but still holds its brokers for its
    settle wait) at `rate` per copy, and the waits in them. The moves are laid out as the
    review lays out a plan (executor.schedule: the same rules, the settle wait as the gap after
    each copy, a copy into a broker starting only once its quota window is clean again); the
    waits are the time between copies one at a time, and the gap between two moves on a
    broker side by side. `rate` must be positive."""
    remaining = [replace(m, size_bytes=math.ceil(left.get(m.name, 0.0)
                                                 / max(1, len(m.added_brokers))))
                 for m in unfinished]
    laid_out = schedule(remaining, rate, concurrency, quota_window_seconds,
                        gap_seconds=settle_seconds)
    if concurrency != 1 and left:
        return laid_out.eta_seconds, settle_seconds
    return laid_out.eta_seconds, max(0.0, laid_out.eta_seconds - laid_out.copy_seconds)


def run_settle(records: Sequence[Record]) -> float:
    """The time after each move that another follows (its gate and election, or the run's
    cooldown when that is longer). The run's cap is its RunState's (`cap_at`)."""
    return max(run_header(records).cooldown_seconds, DEFAULT_GAP_SECONDS)


def run_concurrency(records: Sequence[Record]) -> Concurrency:
    """The run's --concurrency from its journal header (1 when it has none it can read: an
    odd value only costs the ETA's layout)."""
    return run_header(records).concurrency


def run_header(records: Sequence[Record]) -> RunHeader:
    """The run's settings as its journal header keeps them, typed (executor.config.RunHeader)."""
    return RunHeader.of(header_settings(records))
