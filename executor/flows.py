"""Where a move's bytes flow, and what that decides: which moves may run side by side, which
network directions a gate watches, and when Kafka's replication quota can be trusted.

A move copies from its partition's leader (the sender) to each broker that gains a replica (the
receivers). Kafka throttles the two ends separately: the leader rate counts what a broker sends,
the follower rate what it receives. A broker that keeps its replica carries nothing, so a move's
*ends* are (sender, out) and (receiver, in) for each receiver. A leadership-only move copies
nothing but shifts client traffic: its ends are every broker it touches, both directions.

Rules (pure, decided here):
- a broker sends for at most one move and receives for at most one move at a time (links are
  full duplex and the two quotas are separate); a move holds its ends until it is done, its gate
  included, so a gate only ever sees its own move's traffic on the ends it watches;
- Kafka measures a replication quota over a sampled window (11 samples of 1 s by default) and
  keeps a sample until it is a window old. After a flow stops, its samples make the measured rate
  lower than the real one, so a new flow through that end may copy the difference at full speed.
  A flow is held to the cap as long as one of its two ends has a clean window (unused for at
  least a window), so a move starts only when each of its flows has one.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum

from executor.gates import NetworkSample
from planner.result import Move

# Pending moves looked at per poll when moves run side by side (the busiest first): enough to
# fill every broker of a large cluster, without walking a 100k-move plan each second.
SCAN_LIMIT = 2000


class Direction(StrEnum):
    OUT = "out"  # the broker sends: its leader quota
    IN = "in"  # the broker receives: its follower quota


End = tuple[int, Direction]


def sender_of(move: Move, leader: int | None) -> int:
    """The broker the copy comes from: the live leader when it is a current replica, else the
    preferred leader (the one a healthy partition has)."""
    return leader if leader is not None and leader in move.current else move.current[0]


def move_ends(move: Move, leader: int | None) -> frozenset[End]:
    """The ends a move occupies while it runs (see the module docstring)."""
    if move.leadership_only:
        return frozenset((b, d) for b in set(move.current) | set(move.target) for d in Direction)
    return frozenset({(sender_of(move, leader), Direction.OUT)}
                     | {(b, Direction.IN) for b in move.added_brokers})


def ends_of_baseline(baseline: NetworkSample) -> frozenset[End]:
    """The ends a started move occupies, as its journaled baseline records them (the baseline is
    read for exactly those ends; a journal from before ends were kept has both directions of
    every touched broker, which is the safe reading)."""
    return frozenset({(b, Direction.IN) for b in baseline.net_in}
                     | {(b, Direction.OUT) for b in baseline.net_out})


def baseline_for(sample: NetworkSample, ends: Iterable[End]) -> NetworkSample:
    """`sample` cut down to `ends`: a receiver's in, a sender's out."""
    wanted = set(ends)
    return NetworkSample(
        {b: v for b, v in sample.net_in.items() if (b, Direction.IN) in wanted},
        {b: v for b, v in sample.net_out.items() if (b, Direction.OUT) in wanted})


def end_text(end: End) -> str:
    broker, direction = end
    return f"broker {broker} {direction.value}"


@dataclass
class QuotaWindows:
    """When each end last carried this run's throttled bytes (volatile; a process that takes
    over a run assumes every end was in use when it started, as a crash may have cut a copy)."""

    window_seconds: float
    since: float  # the moment this process started watching
    last_used: dict[End, float] = field(default_factory=dict)

    def use(self, ends: Iterable[End], now: float) -> None:
        for end in ends:
            self.last_used[end] = now

    def clean(self, end: End, now: float) -> bool:
        """True when Kafka's window on this end holds none of our samples any more."""
        last = max(self.last_used.get(end, self.since), self.since)
        return now - last >= self.window_seconds

    def unbounded_flows(self, move: Move, ends: frozenset[End], now: float) -> list[str]:
        """The flows of `move` whose both ends still remember a recent flow (empty: it may
        start); a leadership-only move copies nothing and never waits."""
        if move.leadership_only or self.window_seconds <= 0:
            return []
        senders = [e for e in ends if e[1] is Direction.OUT]
        receivers = sorted(e for e in ends if e[1] is Direction.IN)
        if not senders or self.clean(senders[0], now):
            return []
        return [f"{end_text(senders[0])} -> {end_text(r)}" for r in receivers
                if not self.clean(r, now)]

    def wait_left(self, ends: Iterable[End], now: float) -> float:
        """Seconds until the first of `ends` is clean (0 when one already is)."""
        lefts = [self.window_seconds - (now - max(self.last_used.get(e, self.since), self.since))
                 for e in ends]
        return max(0.0, min(lefts, default=0.0))


def remaining_load(moves: Iterable[Move]) -> dict[End, int]:
    """Bytes each end still has to carry for `moves` (sender by its preferred leader)."""
    load: dict[End, int] = {}
    for move in moves:
        for end in move_ends(move, None):
            share = move.bytes_moved if end[1] is Direction.OUT else move.size_bytes
            load[end] = load.get(end, 0) + share
    return load


def busiest_first(moves: Sequence[Move], load: Mapping[End, int]) -> list[Move]:
    """`moves` ordered by the load of their busiest end, heaviest first (plan order breaks
    ties): the brokers that bound the run's length are the ones never left idle."""
    order = {m.name: i for i, m in enumerate(moves)}
    return sorted(moves, key=lambda m: (-max((load.get(e, 0) for e in move_ends(m, None)),
                                             default=0), order[m.name]))
