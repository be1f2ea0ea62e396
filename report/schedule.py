"""When each move of a plan would run: the review's ETA model, with concurrency.

The review's ETA (`executor.plan_eta`) times moves one at a time: each copies its bytes at the
rate, and a move that copied data is followed by Kafka's replication quota window before the
next starts. `schedule` is that model for any concurrency: moves start in plan order while a slot is
free, a move whose brokers are busy is passed over for a later, disjoint one (as the executor's
run loop does), and a move's brokers stay busy through its quota-window wait when moves remain.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from dataclasses import dataclass

from planner.result import Move


@dataclass(frozen=True, slots=True)
class ScheduledMove:
    """One move on the timeline, in seconds from the start: copying from `start` to
    `copy_end`; its brokers free again at `release` (after the quota-window wait, if any)."""

    index: int  # 1-based position in the plan
    move: Move
    start: float
    copy_end: float
    release: float


@dataclass(frozen=True)
class Schedule:
    """Every move's slot, in plan order, and the time the last copy ends (the ETA)."""

    moves: tuple[ScheduledMove, ...]
    rate_bytes_per_sec: float
    concurrency: int
    quota_window_seconds: float

    @property
    def eta_seconds(self) -> float:
        return max((m.copy_end for m in self.moves), default=0.0)

    @property
    def copy_seconds(self) -> float:
        return sum(m.copy_end - m.start for m in self.moves)


def _brokers(move: Move) -> frozenset[int]:
    return frozenset(move.current) | frozenset(move.target)


def schedule(moves: Sequence[Move], rate_bytes_per_sec: float, concurrency: int = 1,
             quota_window_seconds: float = 0.0) -> Schedule:
    """The timeline of `moves` at `rate_bytes_per_sec` per move, at most `concurrency` at
    once and never two on one broker. With concurrency 1 the last copy ends exactly at the
    review's ETA (copy time plus one window per data move that is not the last)."""
    if not rate_bytes_per_sec > 0:
        raise ValueError(f"the rate must be positive, got {rate_bytes_per_sec}")
    if concurrency < 1:
        raise ValueError(f"concurrency must be at least 1, got {concurrency}")
    pending = list(range(len(moves)))
    placed: dict[int, ScheduledMove] = {}
    running: list[tuple[float, int]] = []  # (copy end, move position): a heap
    busy: dict[int, frozenset[int]] = {}  # move position -> brokers, until released
    releases: list[tuple[float, int]] = []  # (release time, move position): a heap
    now = 0.0
    while pending:
        _start_moves(moves, pending, placed, running, busy, now, rate_bytes_per_sec,
                     concurrency)
        now = _advance(moves, pending, placed, running, releases, busy,
                       quota_window_seconds)
    return Schedule(tuple(placed[i] for i in range(len(moves))), rate_bytes_per_sec,
                    concurrency, quota_window_seconds)


def _start_moves(moves: Sequence[Move], pending: list[int], placed: dict[int, ScheduledMove],
                 running: list[tuple[float, int]], busy: dict[int, frozenset[int]],
                 now: float, rate: float, concurrency: int) -> None:
    """Start pending moves in plan order while a slot is free, skipping busy brokers."""
    taken = frozenset().union(*busy.values())
    for position in list(pending):
        if len(busy) >= concurrency:
            return
        brokers = _brokers(moves[position])
        if brokers & taken:
            continue
        end = now + moves[position].bytes_moved / rate
        placed[position] = ScheduledMove(position + 1, moves[position], now, end, end)
        heapq.heappush(running, (end, position))
        busy[position] = brokers
        taken |= brokers
        pending.remove(position)


def _advance(moves: Sequence[Move], pending: list[int], placed: dict[int, ScheduledMove],
             running: list[tuple[float, int]], releases: list[tuple[float, int]],
             busy: dict[int, frozenset[int]], window: float) -> float:
    """Move the clock to the next event (a copy ends or brokers are released); free what
    that event frees. Returns the new time."""
    next_end = running[0][0] if running else float("inf")
    next_release = releases[0][0] if releases else float("inf")
    if next_release <= next_end:
        now, position = heapq.heappop(releases)
        del busy[position]
        return now
    now, position = heapq.heappop(running)
    slot = placed[position]
    if moves[position].bytes_moved and pending and window > 0:
        placed[position] = ScheduledMove(slot.index, slot.move, slot.start, slot.copy_end,
                                         now + window)
        heapq.heappush(releases, (now + window, position))
    else:
        del busy[position]
    return now
