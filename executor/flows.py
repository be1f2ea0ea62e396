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
  keeps a sample until it is a window old. After a copy into a broker stops, its samples make
  the broker's measured follower rate lower than the real one, and a new copy into it runs at
  the difference: measured on the sandbox (Kafka 4.3, RF 2, 2 MB/s), a copy into a receiver
  whose last copy ended 6 s earlier ran at 4.6 MB/s whether or not its sender's window was
  clean, while a receiver with a clean window held 1.9 MB/s even from a sender that had just
  sent. So a move starts only when each of its receivers' windows is clean (unused for a
  window), or *hot*: still carrying a copy that is about to end, which the new move takes over
  (its bytes join the same quota without a gap, see `executor.runner`).
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


def sender_of(move: Move, leader: int | None, live: frozenset[int] | None = None) -> int:
    """The broker the copy comes from: the live leader when it is a current replica, else the
    preferred leader (the one a healthy partition has), or with `live` brokers known, the
    first current replica on a live broker (Kafka elects its leader among those)."""
    if leader is not None and leader in move.current:
        return leader
    if live is not None:
        return next((b for b in move.current if b in live), move.current[0])
    return move.current[0]


def move_ends(move: Move, leader: int | None,
              live: frozenset[int] | None = None) -> frozenset[End]:
    """The ends a move occupies while it runs (see the module docstring)."""
    if move.leadership_only:
        return frozenset((b, d) for b in set(move.current) | set(move.target) for d in Direction)
    return frozenset({(sender_of(move, leader, live), Direction.OUT)}
                     | {(b, Direction.IN) for b in move.added_brokers})


def end_share(move: Move, end: End) -> float:
    """The part of an end's cap `move` uses: a receiver of a move that adds k replicas gets
    1/k of it (executor.throttle.follower_share); a sender, and every end of a leadership-only
    move, the whole. Moves may share an end while their parts sum to at most 1."""
    if end[1] is Direction.OUT or move.leadership_only or not move.added_brokers:
        return 1.0
    return 1.0 / len(move.added_brokers)


def fits(move: Move, ends: frozenset[End], holders: Mapping[End, Mapping[str, float]],
         ending: set[str]) -> tuple[bool, str | None]:
    """May `move` take `ends` now, given what each end's holders use? Returns (yes, the move
    whose copy is ending that it takes ends over from, if any): an end is free, or has room
    for `move`'s part, or is held by exactly one move whose copy is ending (a hand-over). At
    most one such move is taken over from."""
    taking: set[str] = set()
    for end in ends:
        held = holders.get(end, {})
        if not held:
            continue
        share = end_share(move, end)
        if share < 1.0 and sum(held.values()) + share <= 1.0 + 1e-9:
            continue
        handing = _handing_over(held, ending)
        if handing is not None:
            taking.add(handing)
            continue
        return False, None
    if len(taking) > 1 or (taking and move.leadership_only):
        return False, None
    return True, next(iter(taking), None)


def full(held: Mapping[str, float] | None, ending: set[str]) -> bool:
    """Does an end, held as `held`, refuse every move now, whatever its share (see `fits`):
    its holders use all of it and none is one move whose copy is ending?"""
    if not held or _handing_over(held, ending) is not None:
        return False
    return sum(held.values()) >= 1.0 - 1e-12


def _handing_over(held: Mapping[str, float], ending: set[str]) -> str | None:
    """The one move holding an end whose copy is ending (it may hand the end over), or None."""
    only = next(iter(held)) if len(held) == 1 else None
    return only if only in ending else None


def ends_of_baseline(baseline: NetworkSample) -> frozenset[End]:
    """The ends a started move occupies, as its journaled baseline records them (the baseline is
    read for exactly those ends; a journal from before ends were kept has both directions of
    every touched broker, which is the safe reading)."""
    return frozenset({(b, Direction.IN) for b in baseline.net_in}
                     | {(b, Direction.OUT) for b in baseline.net_out})


def held_ends(move: Move, baseline: NetworkSample | None) -> frozenset[End]:
    """The ends a started move holds, as its journaled baseline records them (a move with no
    baseline journaled yet: the ends its preferred leader would give it)."""
    return ends_of_baseline(baseline) if baseline is not None else move_ends(move, None)


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
    """When each end last carried this run's throttled bytes (volatile). A process assumes every
    end was in use when it started (a crash may have cut a copy a moment ago, and another run
    or Kafka's own tool may have just finished on the same brokers), but those that Prometheus
    shows carried no reassignment bytes over the last window (`proven_clean`)."""

    window_seconds: float
    since: float  # the moment this process started watching
    last_used: dict[End, float] = field(default_factory=dict)
    proven_clean: frozenset[End] = frozenset()

    def use(self, ends: Iterable[End], now: float) -> None:
        for end in ends:
            self.last_used[end] = now

    def _last(self, end: End) -> float | None:
        """When `end` last carried a copy as far as this process knows (None: not within a
        window before it started, and not since)."""
        if end in self.last_used:
            return self.last_used[end]  # used since this process started
        return None if end in self.proven_clean else self.since

    def clean(self, end: End, now: float) -> bool:
        """True when Kafka's window on this end holds none of our samples any more."""
        last = self._last(end)
        return last is None or now - last >= self.window_seconds

    def dirty_receivers(self, move: Move, ends: frozenset[End], now: float,
                        hot: frozenset[End] = frozenset()) -> list[End]:
        """The receiving ends of `move` whose window still holds a finished copy's samples
        (empty: it may start); `hot` ends carry a copy the move takes over. A leadership-only
        move copies nothing and never waits."""
        if move.leadership_only or self.window_seconds <= 0:
            return []
        return sorted(e for e in ends if e[1] is Direction.IN and e not in hot
                      and not self.clean(e, now))

    def wait_left(self, ends: Iterable[End], now: float) -> float:
        """Seconds until every one of `ends` is clean."""
        lefts = [self.window_seconds - (now - last) for e in ends
                 if (last := self._last(e)) is not None]
        return max(0.0, max(lefts, default=0.0))


@dataclass(frozen=True, slots=True)
class WindowChoice:
    """The quota window a run waits on, and what the operator should read about it."""

    seconds: float
    note: str | None = None


def choose_quota_window(asked: float | None, described: Mapping[int, float],
                        default: float) -> WindowChoice:
    """The quota window to wait on: the longest the brokers describe (`default`, Kafka's own,
    when none does) unless the operator `asked` for a longer one. A shorter one asked for is
    lengthened: a copy onto a broker whose window still holds an earlier copy's bytes makes up
    the difference at full speed (measured on the sandbox: 8 MB in 0.5 s under a 1 MB/s cap,
    with 3 s asked of brokers whose window is 11 s). `asked` 0 turns the wait off."""
    longest = max(described.values(), default=None)
    if asked is None:
        return WindowChoice(default if longest is None else longest)
    if asked == 0:
        if longest is None:
            return WindowChoice(0.0)
        return WindowChoice(0.0, (
            f"--quota-window 0: moves do not wait out the brokers' replication quota window "
            f"({longest:g} s); a copy onto a broker that carried one within it may run above "
            "--max-mbps in its first seconds"))
    if longest is None or asked >= longest:
        return WindowChoice(asked)
    names = ", ".join(str(b) for b in sorted(b for b, w in described.items() if w == longest))
    return WindowChoice(longest, (
        f"--quota-window {asked:g} s is shorter than the replication quota window of broker(s) "
        f"{names} ({longest:g} s: replication.quota.window.num x .size.seconds): waiting "
        f"{longest:g} s, since a copy onto a broker whose window still holds an earlier copy's "
        "bytes runs at full speed until it has made up the difference"))


def remaining_load(moves: Iterable[Move]) -> dict[End, int]:
    """Bytes each end still has to carry for `moves` (sender by its preferred leader)."""
    load: dict[End, int] = {}
    for move in moves:
        if move.leadership_only:
            continue  # it carries no bytes
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
