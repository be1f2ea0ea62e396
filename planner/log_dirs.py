"""Log dirs of JBOD brokers (KIP-858): which dir each arriving replica goes to, and the few
replica moves between a broker's own dirs that bring each dir within the band of the broker.

Runs after the broker-level plan, which it never changes: a broker's dirs share its disk
balance between them. A dir's fair share of what its broker holds is its volume's share of the
broker's volumes (equal when the sizes are unknown); it is in band when it holds its share
x (1 +/- tolerance).

- Arriving replicas cost the same in any dir: largest first, each goes to the dir that is
  emptiest (by its share) once it holds it. A cordoned dir (KIP-1066) gets none.
- A dir still outside the band then gives a replica to the broker's emptiest dir, the one
  whose size comes closest to levelling the two, while that narrows their gap; each such move
  copies the replica on the broker's own disks, with no network traffic.

A topology with no JBOD broker gets an empty result: plans are unchanged.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property

from planner.goals import Budget, Goals
from planner.result import Move
from topology.model import Broker, KeyedByPartition, TopicPartition, Topology

# A broker is levelled in at most this many moves per replica it holds (a guard: each move
# narrows the gap it closes, so the search ends well before).
_MOVES_PER_REPLICA = 1
# A dir takes a replica only while its volume keeps this share of its size free besides.
FREE_HEADROOM = 0.05


@dataclass(frozen=True, slots=True)
class DirMove(KeyedByPartition):
    """One replica moved between two log dirs of its broker (AlterReplicaLogDirs)."""

    topic: str
    partition: int
    broker: int
    source: str
    target: str
    size_bytes: int

    @property
    def replica(self) -> str:
        """The replica's name: partition@broker."""
        return f"{self.name}@{self.broker}"


@dataclass(frozen=True, slots=True)
class DirSpread:
    """How far the dirs of JBOD brokers are from their share: how many dirs there are, how
    many lie outside the band, and the largest distance from a share (0.25 = 25% off)."""

    dirs: int = 0
    outside: int = 0
    worst: float = 0.0


@dataclass(frozen=True)
class DirPlan:
    """The log-dir part of a plan: the dir of each replica that arrives on a JBOD broker, the
    moves between a broker's dirs, and the dirs' spread before and after."""

    placements: Mapping[tuple[TopicPartition, int], str] = field(default_factory=dict)
    moves: tuple[DirMove, ...] = ()
    before: DirSpread = DirSpread()
    after: DirSpread = DirSpread()
    tolerance: float = 0.0
    # what the plan cannot do on its brokers' dirs (a replica with no dir that has room)
    warnings: tuple[str, ...] = field(default=(), compare=False)

    @property
    def empty(self) -> bool:
        return not self.placements and not self.moves

    @cached_property
    def replicas(self) -> frozenset[str]:
        """The replicas (partition@broker) the plan moves between dirs."""
        return frozenset(m.replica for m in self.moves)

    def sorted_placements(self) -> list[tuple[tuple[TopicPartition, int], str]]:
        """The placements by topic, partition and broker (the order files and ids use)."""
        return sorted(self.placements.items(),
                      key=lambda item: (item[0][0].topic, item[0][0].partition, item[0][1]))

    @property
    def bytes_moved(self) -> int:
        """Bytes the dir moves copy on their brokers' own disks."""
        return sum(m.size_bytes for m in self.moves)


class _Broker:
    """One JBOD broker's dirs while they are levelled: bytes held per dir, and per dir its
    replicas that may move, sorted by size."""

    def __init__(self, broker: Broker) -> None:
        self.id = broker.id
        self.paths = [d.path for d in broker.log_dirs]
        self.slot = {path: i for i, path in enumerate(self.paths)}
        sizes = [d.capacity_bytes for d in broker.log_dirs]
        known = [s for s in sizes if s is not None]
        fallback = sum(known) / len(known) if known else 1.0
        volume = [float(s) if s is not None else fallback for s in sizes]
        self.share = [v / sum(volume) for v in volume]
        self.open = [not d.cordoned for d in broker.log_dirs]
        self.used = [0] * len(self.paths)
        # (size, topic, partition) of the replicas each dir may give, sorted once filled
        self.movable: list[list[tuple[int, str, int]]] = [[] for _ in self.paths]
        # what each dir may still take: its volume's free space when read, less a headroom,
        # less what the plan puts there (what leaves is not counted: it leaves later)
        self.room = [math.inf if d.free_bytes is None else
                     d.free_bytes - FREE_HEADROOM * (d.capacity_bytes or 0)
                     for d in broker.log_dirs]

    def deviation(self, d: int, used: float | None = None) -> float:
        """Dir d's distance from its share of what the broker holds (0: exactly its share),
        or, with `used`, what it would be were dir d to hold `used` bytes."""
        total = sum(self.used)
        if total <= 0:
            return 0.0
        return (self.used[d] if used is None else used) / (total * self.share[d]) - 1.0

    def spread(self, tolerance: float, used: Sequence[int] | None = None) -> DirSpread:
        """How far the dirs are from their shares, now or as `used` had them."""
        held = self.used if used is None else used
        total = sum(held)
        devs = [abs(u / (total * s) - 1.0) if total > 0 else 0.0
                for u, s in zip(held, self.share, strict=True)]
        return DirSpread(len(devs), sum(dev > tolerance + 1e-9 for dev in devs), max(devs))

    def place(self, size: int) -> int | None:
        """The open dir with room for `size` more bytes that is emptiest by its share once it
        holds them; None when no dir has room."""
        fit = [d for d in range(len(self.paths)) if self.open[d] and self.room[d] >= size]
        if not fit:
            return None
        best = min(fit, key=lambda d: ((self.used[d] + size) / self.share[d], d))
        self.used[best] += size
        self.room[best] -= size
        return best

    def level(self, tolerance: float, limit: int) -> list[tuple[TopicPartition, int, int, int]]:
        """Moves (partition, from dir, to dir, size) that bring the dirs into the band."""
        moves: list[tuple[TopicPartition, int, int, int]] = []
        while len(moves) < limit:
            devs = [self.deviation(d) for d in range(len(self.paths))]
            over = max(range(len(devs)), key=lambda d: (devs[d], -d))
            targets = [d for d in range(len(devs)) if self.open[d] and d != over]
            if not targets:
                break
            under = min(targets, key=lambda d: (devs[d], d))
            if devs[over] <= tolerance and devs[under] >= -tolerance:
                break
            pick = self._best(over, under, max(abs(devs[over]), abs(devs[under])))
            if pick is None:
                break
            size, topic, partition = self.movable[over].pop(pick)
            tp = TopicPartition(topic, partition)
            self.used[over] -= size
            self.used[under] += size
            self.room[under] -= size
            moves.append((tp, over, under, size))
        return moves

    def _best(self, over: int, under: int, now: float) -> int | None:
        """The index in `over`'s movable replicas whose move to `under` leaves the two dirs
        closest to their shares, if that is closer than `now`."""
        total = sum(self.used)
        a, b = self.share[over] * total, self.share[under] * total
        ideal = (self.used[over] * b - self.used[under] * a) / (a + b)
        sizes = self.movable[over]
        at = bisect.bisect_left(sizes, ideal, key=lambda item: item[0])
        best, best_gap = None, now - 1e-9
        for i in (at - 1, at):
            if 0 <= i < len(sizes) and 0 < sizes[i][0] <= self.room[under]:
                s = sizes[i][0]
                gap = max(abs(self.deviation(over, self.used[over] - s)),
                          abs(self.deviation(under, self.used[under] + s)))
                if gap < best_gap:
                    best, best_gap = i, gap
        return best


def log_dir_plan(topology: Topology, moves: Sequence[Move], goals: Goals,
                 budget: Budget) -> DirPlan | None:
    """The log-dir plan of `moves` under the plan's goals and budget (with --no-log-dir-moves
    or --max-bytes 0, placements only); None when no broker has several dirs."""
    dirs = plan_dirs(topology, moves, goals.tolerance,
                     move_between_dirs=goals.level_log_dirs and budget.max_bytes != 0)
    return dirs if dirs.before.dirs else None


def plan_dirs(topology: Topology, moves: Sequence[Move], tolerance: float,
              move_between_dirs: bool = True) -> DirPlan:
    """The log-dir plan of `moves` on `topology` (see the module docstring); without
    `move_between_dirs`, arriving replicas are placed and nothing else moves."""
    jbod = {b.id: _Broker(b) for b in topology.brokers if len(b.log_dirs) > 1 and b.alive}
    if not jbod:
        return DirPlan(tolerance=tolerance)
    # keyed by (topic, partition) tuples: a tuple hashes and compares in C, and this walks
    # every replica of a JBOD broker (1.2 million on the large benchmark cluster)
    parts = {(p.topic, p.partition): p for p in topology.partitions}
    targets = {(m.topic, m.partition): m.target for m in moves}
    held = {b: [0] * len(broker.paths) for b, broker in jbod.items()}  # before any move
    for (tp, b), path in topology.replica_dirs.items():
        broker = jbod.get(b)
        p = parts.get((tp.topic, tp.partition)) if broker is not None else None
        d = broker.slot.get(path) if broker is not None else None
        if broker is None or p is None or d is None or b not in p.replicas:
            continue
        held[b][d] += p.size_bytes
        if b in targets.get((p.topic, p.partition), p.replicas):  # it stays on the broker
            broker.used[d] += p.size_bytes
            broker.movable[d].append((p.size_bytes, p.topic, p.partition))
    arriving = [(parts[(m.topic, m.partition)].size_bytes, m.key, b)
                for m in moves for b in m.added_brokers if b in jbod]
    before = _spread(jbod.values(), tolerance, held)
    placements: dict[tuple[TopicPartition, int], str] = {}
    homeless: list[tuple[TopicPartition, int, int]] = []
    for size, tp, b in sorted(arriving, key=lambda a: (-a[0], a[1].topic, a[1].partition, a[2])):
        d = jbod[b].place(size)
        if d is None:
            homeless.append((tp, b, size))
        else:
            placements[(tp, b)] = jbod[b].paths[d]
    dir_moves: list[DirMove] = []
    for b, broker in sorted(jbod.items()):
        if not move_between_dirs:
            break
        for movable in broker.movable:
            movable.sort()
        limit = _MOVES_PER_REPLICA * sum(len(m) for m in broker.movable)
        for tp, source, target, size in broker.level(tolerance, limit):
            dir_moves.append(DirMove(tp.topic, tp.partition, b, broker.paths[source],
                                     broker.paths[target], size))
    after = _spread(jbod.values(), tolerance)
    return DirPlan(placements, tuple(dir_moves), before, after, tolerance,
                   _homeless_warnings(homeless))


def _homeless_warnings(homeless: Sequence[tuple[TopicPartition, int, int]]) -> tuple[str, ...]:
    """One warning per broker whose open dirs have no room for a replica the plan brings."""
    by_broker: dict[int, list[tuple[TopicPartition, int]]] = {}
    for tp, broker, size in homeless:
        by_broker.setdefault(broker, []).append((tp, size))
    return tuple(
        f"log dirs: no open dir of broker {broker} has room for {len(items)} replica(s) the "
        f"plan brings (e.g. {items[0][0].topic}-{items[0][0].partition}, {items[0][1]:,} "
        f"bytes, with {FREE_HEADROOM:.0%} of each volume kept free): the broker picks their "
        "dir; free space on its volumes first" for broker, items in sorted(by_broker.items()))


def _spread(brokers: Iterable[_Broker], tolerance: float,
            held: Mapping[int, list[int]] | None = None) -> DirSpread:
    """The dirs' spread over `brokers`, now or as `held` had them."""
    spreads = [b.spread(tolerance, None if held is None else held[b.id]) for b in brokers]
    return DirSpread(sum(s.dirs for s in spreads), sum(s.outside for s in spreads),
                     max((s.worst for s in spreads), default=0.0))
