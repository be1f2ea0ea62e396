"""Demotion: take every preferred leadership off some brokers, moving no data.

A broker about to be patched, or one under watch, should lead nothing: its clients' produce and
fetch traffic then goes to other brokers while it keeps its replicas (and catches up as a
follower). Each partition it leads gets a new preferred leader among its other live replicas
by reordering the replica list (a leadership-only move: no byte copied; the executor elects the
new preferred leader). A partition whose preferred leader is offline is led by its first live
replica, and demoted when that is the broker. The new leader is the candidate that leads the
least net out so far (leader net out: OUT + IN x (RF - 1), topology.load), partitions taken
heaviest first, so the demoted broker's net out spreads instead of piling onto one follower; the
demoted broker goes to the end of the list, the other replicas keep their order.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from kafka_rebalance.core.errors import InputError
from planner.result import Move
from topology.load import leader_net_out
from topology.model import Partition, Topology


@dataclass(frozen=True)
class Demotion:
    """The leadership-only moves, and the partitions the demoted brokers must keep leading
    (no other live replica, or every other one is demoted too)."""

    moves: tuple[Move, ...]
    stuck: tuple[str, ...]


def demote(topology: Topology, brokers: Iterable[int]) -> Demotion:
    """The moves that take preferred leadership off `brokers` (InputError for an unknown id)."""
    demoted = frozenset(brokers)
    known = set(topology.broker_ids)
    unknown = sorted(demoted - known)
    if unknown:
        raise InputError(f"--demote-broker {unknown[0]}: no broker {unknown[0]} in the cluster "
                         f"(brokers are {sorted(known)})")
    alive = {b.id for b in topology.brokers if b.alive}
    led: dict[int, float] = dict.fromkeys(known, 0.0)
    for p in topology.partitions:
        led[_leader(p, alive)] += leader_net_out(p)
    moves: list[Move] = []
    stuck: list[str] = []
    leading = [p for p in topology.partitions if _leader(p, alive) in demoted]
    for p in sorted(leading, key=lambda p: (-leader_net_out(p), p.topic, p.partition)):
        candidates = [b for b in p.replicas if b not in demoted and b in alive]
        if not candidates:
            stuck.append(p.name)
            continue
        leader = min(candidates, key=lambda b: (led[b], p.replicas.index(b)))
        led[_leader(p, alive)] -= leader_net_out(p)
        led[leader] += leader_net_out(p)
        moves.append(Move(p.topic, p.partition, p.replicas, _reordered(p, leader, demoted),
                          p.size_bytes))
    return Demotion(tuple(sorted(moves, key=lambda m: (m.topic, m.partition))), tuple(stuck))


def _leader(p: Partition, alive: set[int]) -> int:
    """Who leads `p`: its preferred leader, or while that broker is offline the first live
    replica after it (the one Kafka elects when the ISR allows; a demoted broker leading so
    must be demoted too)."""
    return next((b for b in p.replicas if b in alive), p.replicas[0])


def _reordered(p: Partition, leader: int, demoted: frozenset[int]) -> tuple[int, ...]:
    """`leader` first, the demoted brokers last, the others in their order."""
    middle = [b for b in p.replicas if b != leader and b not in demoted]
    return (leader, *middle, *(b for b in p.replicas if b in demoted))
