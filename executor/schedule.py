"""When each move of a plan would run, known before it starts: the review's ETA model.

The model follows the run loop's own rules (executor.flows, executor.runner): each move copies
its bytes at the rate; one at a time, moves go in plan order; side by side (a number or
"auto"), the busiest brokers' moves first, each broker sending for at most one move and
receiving for at most one. After its copy a move holds its ends for `gap_seconds` more (leader
election and the gate while the network settles, DEFAULT_GAP_SECONDS as measured on the
sandbox; a leadership-only move copies nothing, has no gate and takes LEADERSHIP_SECONDS); a
copy starts only into a receiver whose quota window is clean (the first one a window after the
start), or one it takes over as the previous copy into it ends.
"""

from __future__ import annotations

import collections
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
    end_share,
    fits,
    full,
    move_ends,
    remaining_load,
)
from planner.result import Move

# Seconds from a copy's end until its move is done and its brokers free: the reassignment seen
# complete (a poll), throttles put back and the leader elected (a poll), and the gate's
# consecutive settled samples once the network series have dropped back (measured on the
# sandbox: benchmarks/README.md).
DEFAULT_GAP_SECONDS = 8.0

# What the review's ETA adds to the run loop's rules, as measured on shaped links
# (benchmarks/README.md, "Executor on shaped links"): Kafka's replication quota delivers about
# nine tenths of its rate over a whole copy (fetches are sized and the quota is enforced over
# windows), and a run spends a few seconds before its first copy (preflight, the run lease,
# the prior throttles read back and the start-up proof of clean quota windows).
COPY_EFFICIENCY = 0.9
START_SECONDS = 4.0
# A leadership-only move copies nothing; the run applies such moves in batches (one
# reassignment and one election request each, its journal records), 300 in 9.4 s on the
# sandbox (benchmarks/README.md, "Demotion"): about 31 ms a move.
LEADERSHIP_SECONDS = 0.031


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
    start_seconds: float = 0.0  # before the first copy: preflight, lease, throttles read back

    @property
    def eta_seconds(self) -> float:
        """The last copy's end: the last move's gate is skipped (nothing follows it)."""
        return max((m.copy_end for m in self.moves), default=0.0)

    @property
    def copy_seconds(self) -> float:
        return sum(m.copy_end - m.start for m in self.moves)


def schedule(moves: Sequence[Move], rate_bytes_per_sec: float, concurrency: Concurrency = 1,
             quota_window_seconds: float = 0.0,
             gap_seconds: float = DEFAULT_GAP_SECONDS, start_seconds: float = 0.0) -> Schedule:
    """The timeline of `moves` at `rate_bytes_per_sec` per copy under the run loop's rules,
    the first copy starting at `start_seconds`."""
    if not rate_bytes_per_sec > 0:
        raise ValueError(f"the rate must be positive, got {rate_bytes_per_sec}")
    if concurrency != AUTO and not (isinstance(concurrency, int) and concurrency >= 1):
        raise ValueError(f"concurrency must be at least 1 or auto, got {concurrency}")
    slots = concurrency if isinstance(concurrency, int) else len(moves) or 1
    order = (list(moves) if concurrency == 1
             else busiest_first(moves, remaining_load(moves)))
    sim = _Simulation(order, rate_bytes_per_sec, quota_window_seconds, gap_seconds, slots,
                      concurrency == 1)
    sim.index = {m.name: i for i, m in enumerate(moves, start=1)}
    sim.now = start_seconds
    pending = dict.fromkeys(m.name for m in order)
    sim.start_what_may(pending)
    while pending:
        if not sim.advance(pending):
            sim.start_what_may(pending)  # nothing runs: look at every pending move again
            if not sim.events:
                raise AssertionError("schedule: no move can ever start")  # unreachable
    while sim.advance(pending):
        pass
    return Schedule(tuple(sim.placed[m.name] for m in moves), rate_bytes_per_sec, concurrency,
                    quota_window_seconds, gap_seconds, start_seconds)


class _Simulation:
    """The clock, what each end's holders use of it, and when each end last carried a copy.
    Events: a copy ends (its ends may pass to a next move: executor.runner's hand-over), a
    move's gate ends (its ends are free), a receiver's quota window is clean again."""

    def __init__(self, moves: Sequence[Move], rate: float, window: float, gap: float,
                 slots: int, one_at_a_time: bool) -> None:
        self.by_name = {m.name: m for m in moves}
        self.ends = {m.name: move_ends(m, None) for m in moves}
        self.index: dict[str, int] = {}  # 1-based plan position
        self.position = {m.name: i for i, m in enumerate(moves)}  # in the order they may start
        self.by_end: dict[End, collections.deque[str]] = {}
        for m in moves:
            for end in self.ends[m.name]:
                self.by_end.setdefault(end, collections.deque()).append(m.name)
        self.slot_bound = False
        self.waking: set[str] = set()
        self.rate, self.window, self.gap = rate, window, gap
        self.slots, self.one_at_a_time = slots, one_at_a_time
        self.now = 0.0
        self.placed: dict[str, ScheduledMove] = {}
        self.holders: dict[End, dict[str, float]] = {}
        self.running: set[str] = set()  # started and not yet released
        self.copying: set[str] = set()
        self.handing: set[str] = set()
        self.taken: dict[str, frozenset[End]] = {}
        self.last_used: dict[End, float] = {}
        self.events: list[tuple[float, int, str]] = []  # heap: (time, kind, move)

    def _clean_at(self, end: End) -> float:
        """When a receiver's window is clean: a window after its last copy; at the start, at
        once (the executor reads from Prometheus that nothing copied into it just before;
        where it cannot, its first copy waits a window more than this says)."""
        last = self.last_used.get(end)
        return 0.0 if last is None else last + self.window

    def _candidates(self, pending: dict[str, None], changed: frozenset[End] | None,
                    holders: dict[End, dict[str, float]]) -> list[str]:
        """Pending moves that may start now, in order: the first (one at a time); otherwise
        those on an end that just changed (nothing else did), or all when a slot freed. An
        end still full after its change starts none of the moves that need it: skipped."""
        if self.one_at_a_time:
            return list(itertools.islice(pending, 1))
        if changed is None or self.slot_bound:
            return list(itertools.islice(pending, SCAN_LIMIT))
        found: set[str] = set()
        for end in changed:
            if full(holders.get(end), self.handing):
                continue
            queue = self.by_end.get(end, collections.deque())
            while queue and queue[0] not in pending:
                queue.popleft()
            found.update(itertools.islice((n for n in queue if n in pending), _PER_END))
        return sorted(found, key=self.position.__getitem__)[:SCAN_LIMIT]

    def start_what_may(self, pending: dict[str, None],
                       changed: frozenset[End] | None = None) -> None:
        holders = {e: dict(h) for e, h in self.holders.items()}
        # as the run loop counts (executor.starts): one at a time, a move handing its brokers
        # over leaves its slot to the next; with --concurrency N every move in flight counts
        busy = (len(self.running - self.handing - set(self.taken)) if self.one_at_a_time
                else len(self.running))
        self.slot_bound = False
        for name in self._candidates(pending, changed, holders):
            if busy >= self.slots:
                self.slot_bound = True
                return
            move, ends = self.by_name[name], self.ends[name]
            free, taking = fits(move, ends, holders, self.handing)
            if not free or (self.one_at_a_time and self.running and taking is None):
                continue
            carrying = {e for e in ends if holders.get(e)}
            dirty = [self._clean_at(e) for e in ends
                     if e[1] is Direction.IN and e not in carrying]
            ready = max([self.now] + ([] if move.leadership_only or self.window <= 0 else dirty))
            if ready > self.now:
                if name not in self.waking:
                    self.waking.add(name)
                    heapq.heappush(self.events, (ready, _WAKE, name))
                for end in ends:  # kept for it meanwhile
                    holders.setdefault(end, {})[name] = 1.0
                continue
            self._start(move, ends, taking)
            for end in ends:
                holders.setdefault(end, {})[name] = end_share(move, end)
            busy += 1
            del pending[name]

    def _start(self, move: Move, ends: frozenset[End], taking: str | None) -> None:
        copy_end = self.now + (LEADERSHIP_SECONDS if move.leadership_only
                               else move.bytes_moved / self.rate)
        self.placed[move.name] = ScheduledMove(self.index[move.name], move, self.now, copy_end,
                                               copy_end + self.gap)
        for end in ends:
            self.holders.setdefault(end, {})[move.name] = end_share(move, end)
            if not move.leadership_only:
                self.last_used[end] = max(self.last_used.get(end, copy_end), copy_end)
        self.running.add(move.name)
        self.copying.add(move.name)
        heapq.heappush(self.events, (copy_end, _COPY_END, move.name))
        if taking is not None:
            self.taken[taking] = ends & self.ends[taking]
            self.handing.discard(taking)
            for end in self.taken[taking]:
                self.holders[end].pop(taking, None)

    def advance(self, pending: dict[str, None]) -> bool:
        """Take the next event; False when none is left."""
        if not self.events:
            return False
        self.now, kind, name = heapq.heappop(self.events)
        if kind == _COPY_END:
            self.copying.discard(name)
            self.handing.add(name)
            self.start_what_may(pending, self.ends[name])
            self.handing.discard(name)
            carried = {e for e in self.ends[name]
                       if any(h in self.copying for h in self.holders.get(e, {}))}
            left = self.ends[name] - self.taken.get(name, frozenset()) - carried
            gated = left and not self.by_name[name].leadership_only  # copies nothing: no gate
            release = self.now + self.gap if gated else self.now
            slot = self.placed[name]
            self.placed[name] = ScheduledMove(slot.index, slot.move, slot.start, slot.copy_end,
                                              release)
            heapq.heappush(self.events, (release, _RELEASE, name))
        elif kind == _RELEASE:
            for end in self.ends[name]:
                self.holders.get(end, {}).pop(name, None)
            self.running.discard(name)
            self.start_what_may(pending, self.ends[name])
        else:
            self.waking.discard(name)
            self.start_what_may(pending, self.ends[name])
        return True


_COPY_END, _RELEASE, _WAKE = 0, 1, 2
_PER_END = 64  # pending moves looked at per changed end


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
        """One at a time: the time between copies (gates, elections, quota waits)."""
        one = self.one_at_a_time
        return max(0.0, one.eta_seconds - one.copy_seconds - one.start_seconds)


def expected_schedule(moves: Sequence[Move], rate_bytes_per_sec: float,
                      concurrency: Concurrency, quota_window_seconds: float) -> Schedule:
    """The schedule a run at `rate_bytes_per_sec` can expect: copies at COPY_EFFICIENCY of
    the rate, the first after START_SECONDS."""
    return schedule(moves, rate_bytes_per_sec * COPY_EFFICIENCY, concurrency,
                    quota_window_seconds, start_seconds=START_SECONDS)


def plan_eta(moves: Sequence[Move], rate_bytes_per_sec: float,
             quota_window_seconds: float) -> PlanEta:
    load = remaining_load(moves)
    return PlanEta(expected_schedule(moves, rate_bytes_per_sec, 1, quota_window_seconds),
                   expected_schedule(moves, rate_bytes_per_sec, AUTO, quota_window_seconds),
                   max(load.values(), default=0) / rate_bytes_per_sec)
