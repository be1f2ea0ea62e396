"""When each move of a plan would run, known before it starts: the review's ETA model.

The model follows the run loop's own rules (executor.flows, executor.runner): each move copies
its bytes at the rate; one at a time, moves go in plan order; side by side (a number or
"auto"), the busiest brokers' moves first, each broker sending for at most one move and
receiving for at most one. After its copy a move holds its ends for `gap_seconds` more (leader
election and the gate while the network settles, DEFAULT_GAP_SECONDS as measured on the
sandbox); a copy starts only from an end whose quota window is clean.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Sequence
from dataclasses import dataclass

from executor.config import AUTO, Concurrency
from executor.flows import (
    SCAN_LIMIT,
    Direction,
    End,
    busiest_first,
    move_ends,
    remaining_load,
)
from planner.result import Move

# Seconds from a copy's end until its move is done and its brokers free: the reassignment seen
# complete (a poll), throttles put back and the leader elected (a poll), and the gate's
# consecutive settled samples once the network series have dropped back (measured on the
# sandbox: benchmarks/README.md).
DEFAULT_GAP_SECONDS = 8.0


@dataclass(frozen=True, slots=True)
class ScheduledMove:
    """One move on the timeline, in seconds from the start: copying from `start` to
    `copy_end`; its ends free again at `release` (after its gate)."""

    index: int  # 1-based position in the plan
    move: Move
    start: float
    copy_end: float
    release: float


@dataclass(frozen=True)
class Schedule:
    """Every move's slot, in plan order, and when the last move is done (the ETA)."""

    moves: tuple[ScheduledMove, ...]
    rate_bytes_per_sec: float
    concurrency: Concurrency
    quota_window_seconds: float
    gap_seconds: float

    @property
    def eta_seconds(self) -> float:
        """The last copy's end: the last move's gate is skipped (nothing follows it)."""
        return max((m.copy_end for m in self.moves), default=0.0)

    @property
    def copy_seconds(self) -> float:
        return sum(m.copy_end - m.start for m in self.moves)


def schedule(moves: Sequence[Move], rate_bytes_per_sec: float, concurrency: Concurrency = 1,
             quota_window_seconds: float = 0.0,
             gap_seconds: float = DEFAULT_GAP_SECONDS) -> Schedule:
    """The timeline of `moves` at `rate_bytes_per_sec` per copy under the run loop's rules."""
    if not rate_bytes_per_sec > 0:
        raise ValueError(f"the rate must be positive, got {rate_bytes_per_sec}")
    if concurrency != AUTO and not (isinstance(concurrency, int) and concurrency >= 1):
        raise ValueError(f"concurrency must be at least 1 or auto, got {concurrency}")
    slots = concurrency if isinstance(concurrency, int) else len(moves) or 1
    order = (list(moves) if concurrency == 1
             else busiest_first(moves, remaining_load(moves)))
    sim = _Simulation(moves, rate_bytes_per_sec, quota_window_seconds, gap_seconds)
    pending = dict.fromkeys(m.name for m in order)
    while pending:
        sim.start_what_may(pending, slots, one_at_a_time=concurrency == 1)
        if pending and not sim.advance():
            raise AssertionError("schedule: no move can ever start")  # unreachable by design
    return Schedule(tuple(sim.placed[m.name] for m in moves), rate_bytes_per_sec, concurrency,
                    quota_window_seconds, gap_seconds)


class _Simulation:
    """The clock, the ends held by running moves and when each end last carried a copy."""

    def __init__(self, moves: Sequence[Move], rate: float, window: float, gap: float) -> None:
        self.by_name = {m.name: m for m in moves}
        self.ends = {m.name: move_ends(m, None) for m in moves}
        self.receiving = {(b, Direction.IN) for m in moves for b in m.added_brokers}
        self.index = {m.name: i for i, m in enumerate(moves, start=1)}
        self.rate, self.window, self.gap = rate, window, gap
        self.now = 0.0
        self.placed: dict[str, ScheduledMove] = {}
        self.held: dict[End, str] = {}
        self.last_used: dict[End, float] = {}
        self.releases: list[tuple[float, str]] = []  # a heap of (release time, move)

    def _clean_at(self, end: End) -> float:
        last = self.last_used.get(end)
        return float("-inf") if last is None else last + self.window

    def _ready_at(self, move: Move, ends: frozenset[End]) -> float:
        """When each copy of `move` has a clean end (executor.flows.QuotaWindows)."""
        if move.leadership_only or self.window <= 0:
            return self.now
        senders = [e for e in ends if e[1] is Direction.OUT]
        if not senders:
            return self.now
        sender = self._clean_at(senders[0])
        return max([self.now] + [min(sender, self._clean_at(e)) for e in ends
                                 if e[1] is Direction.IN])

    def start_what_may(self, pending: dict[str, None], slots: int, *,
                       one_at_a_time: bool) -> None:
        taken = set(self.held)
        running = len(set(self.held.values()))
        for name in list(itertools.islice(pending, 1 if one_at_a_time else SCAN_LIMIT)):
            if running >= slots or (self.receiving and self.receiving <= taken):
                return  # every slot, or every receiving broker, is in use
            move, ends = self.by_name[name], self.ends[name]
            if ends & taken:
                continue
            ready = self._ready_at(move, ends)
            if ready > self.now:
                heapq.heappush(self.releases, (ready, ""))  # wake up then
                if one_at_a_time:
                    return
                taken |= ends
                continue
            copy_end = self.now + move.bytes_moved / self.rate
            release = copy_end + (self.gap if move.bytes_moved or move.leadership_only else 0.0)
            self.placed[name] = ScheduledMove(self.index[name], move, self.now, copy_end, release)
            for end in ends:
                self.held[end] = name
                if not move.leadership_only:
                    self.last_used[end] = copy_end
            heapq.heappush(self.releases, (release, name))
            taken |= ends
            running += 1
            del pending[name]

    def advance(self) -> bool:
        """Move the clock to the next release (or quota wake-up); False when none is left."""
        if not self.releases:
            return False
        self.now, name = heapq.heappop(self.releases)
        for end in [e for e, holder in self.held.items() if holder == name]:
            del self.held[end]
        return True


@dataclass(frozen=True)
class PlanEta:
    """The review's times: one move at a time (the default), side by side (--concurrency
    auto) and the physical limit (the busiest broker's bytes to send, or to receive, at the
    rate: no schedule is shorter)."""

    one_at_a_time: Schedule
    side_by_side: Schedule
    limit_seconds: float

    @property
    def between_moves_seconds(self) -> float:
        """One at a time: the time not spent copying (gates, elections, quota waits)."""
        return max(0.0, self.one_at_a_time.eta_seconds - self.one_at_a_time.copy_seconds)


def plan_eta(moves: Sequence[Move], rate_bytes_per_sec: float,
             quota_window_seconds: float) -> PlanEta:
    load = remaining_load(moves)
    return PlanEta(schedule(moves, rate_bytes_per_sec, 1, quota_window_seconds),
                   schedule(moves, rate_bytes_per_sec, AUTO, quota_window_seconds),
                   max(load.values(), default=0) / rate_bytes_per_sec)
