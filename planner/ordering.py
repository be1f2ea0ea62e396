"""Order a plan's moves for the executor: spread consecutive moves over broker pairs.

A data move keeps busy the brokers that give up a replica and the brokers that receive one.
The order is a sequence of rounds; within a round no two moves share such a broker (seen as
edges between brokers, each round is a matching), so consecutive copies load different disks
and links. Candidates are taken in order of bytes copied (smallest or largest first) with a
bounded look-ahead that only reaches moves of similar size (within SIZE_SLACK of the next move
in that order), so spreading never pulls a huge copy ahead of many small ones; this keeps
ordering linear in the number of moves. Leadership-only moves copy no bytes and go last.

Moves that heal a partition short of live replicas (some on offline brokers) go before all
others, the fewest live replicas first: one more failure there loses data or stops producers.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Mapping, Sequence
from enum import StrEnum

from planner.result import Move
from topology.model import TopicPartition, Topology

LOOKAHEAD = 256
"""How many pending moves a round scans for one that shares no broker with the round."""

SIZE_SLACK = 1.5
"""A move may jump the queue only when within this factor of the next move's bytes."""


class MoveOrder(StrEnum):
    """Which moves go first."""

    SMALLEST_FIRST = "smallest-first"
    LARGEST_FIRST = "largest-first"


def changed_brokers(move: Move) -> frozenset[int]:
    """The brokers a data move keeps busy: those that receive and those that give up a replica
    (a leadership-only move changes none)."""
    return frozenset(move.added_brokers) | frozenset(move.removed_brokers)


def _size_key(order: MoveOrder) -> Callable[[Move], tuple[int, str, int]]:
    sign = 1 if order is MoveOrder.SMALLEST_FIRST else -1

    def key(move: Move) -> tuple[int, str, int]:
        return (sign * move.bytes_moved, move.topic, move.partition)

    return key


def order_moves(moves: Sequence[Move], order: MoveOrder = MoveOrder.SMALLEST_FIRST,
                lookahead: int = LOOKAHEAD,
                live_replicas: Mapping[TopicPartition, int] | None = None) -> tuple[Move, ...]:
    """The executor's order: rounds of broker-disjoint data moves, then leadership-only moves.
    Data moves of the partitions in `live_replicas` (short of live replicas: how many are
    left) go first, the fewest left first, each group in its own rounds.

    Deterministic: ties break on (topic, partition), never on input order.
    """
    short = live_replicas or {}
    groups: dict[int | None, list[Move]] = {}
    for move in sorted((m for m in moves if not m.leadership_only), key=_size_key(order)):
        groups.setdefault(short.get(move.key), []).append(move)
    data = [move for left in sorted(groups, key=lambda n: (n is None, n or 0))
            for move in _rounds(groups[left], max(1, lookahead), order)]
    leadership = sorted((m for m in moves if m.leadership_only),
                        key=lambda m: (m.topic, m.partition))
    return (*data, *leadership)


def short_of_replicas(topology: Topology) -> dict[TopicPartition, int]:
    """Partitions with replicas on offline brokers, and how many of their replicas are live."""
    offline = {b.id for b in topology.brokers if not b.alive}
    if not offline:
        return {}
    return {p.key: sum(1 for b in p.replicas if b not in offline)
            for p in topology.partitions if offline.intersection(p.replicas)}


def stranded(topology: Topology) -> frozenset[TopicPartition]:
    """Partitions with no live replica: every replica is on an offline broker, so there is no
    leader to copy from and a reassignment of them cannot complete until one is back."""
    return frozenset(key for key, live in short_of_replicas(topology).items() if live == 0)


def _similar(order: MoveOrder, head: int, candidate: int) -> bool:
    """Whether `candidate` bytes is close enough to the queue head's to go before it."""
    if order is MoveOrder.SMALLEST_FIRST:
        return candidate <= head * SIZE_SLACK
    return candidate * SIZE_SLACK >= head


def _rounds(moves: list[Move], lookahead: int, order: MoveOrder) -> list[Move]:
    pending: deque[tuple[Move, frozenset[int]]] = deque((m, changed_brokers(m)) for m in moves)
    ordered: list[Move] = []
    busy: set[int] = set()
    while pending:
        index = _first_free(pending, busy, lookahead, order)
        if index is None:
            busy.clear()  # a new round starts with the head of the queue
            index = 0
        move, brokers = pending[index]
        del pending[index]
        busy |= brokers
        ordered.append(move)
    return ordered


def _first_free(pending: deque[tuple[Move, frozenset[int]]], busy: set[int],
                lookahead: int, order: MoveOrder) -> int | None:
    head = pending[0][0].bytes_moved
    for index in range(min(lookahead, len(pending))):
        move, brokers = pending[index]
        if not _similar(order, head, move.bytes_moved):
            return None  # sorted by size: every later move is further away
        if busy.isdisjoint(brokers):
            return index
    return None


def rounds_of(ordered: Sequence[Move]) -> list[list[Move]]:
    """Split an order into its rounds: maximal runs of broker-disjoint data moves."""
    out: list[list[Move]] = []
    busy: set[int] = set()
    for move in ordered:
        brokers = changed_brokers(move)
        if not out or not busy.isdisjoint(brokers):
            out.append([])
            busy = set()
        out[-1].append(move)
        busy |= brokers
    return out
