"""Two baselines the planner is measured against, run in the same process.

- round_robin_regenerate: what `kafka-reassign-partitions --generate` does: a fresh rack-aware
  round-robin assignment over all target brokers that ignores where replicas are now.
- largest_first: a simple disk mover: the most loaded broker sends its largest replica that
  fits to the least loaded broker allowed by the rack rule, until disk is within tolerance.
"""

from __future__ import annotations

import heapq
import math
import random
from collections import defaultdict

from planner.goals import Goals
from topology.model import Broker, TopicPartition, Topology, replace_replicas


def _rack_alternating(brokers: list[Broker]) -> list[Broker]:
    """Brokers ordered rack by rack in turn (a1, b1, c1, a2, ...), as Kafka's generator does."""
    by_rack: dict[str, list[Broker]] = defaultdict(list)
    for b in sorted(brokers, key=lambda b: b.id):
        by_rack[str(b.rack)].append(b)
    racks = sorted(by_rack)
    ordered: list[Broker] = []
    for i in range(max(len(v) for v in by_rack.values())):
        ordered.extend(by_rack[r][i] for r in racks if i < len(by_rack[r]))
    return ordered


def _assign_topic(count: int, rf: int, ordered: list[Broker],
                  rng: random.Random) -> list[tuple[int, ...]]:
    n = len(ordered)
    racks = len({b.rack for b in ordered})
    start, shift = rng.randrange(n), rng.randrange(n)
    lists = []
    for p in range(count):
        if p > 0 and p % n == 0:
            shift += 1
        first = (start + p) % n
        chosen = [ordered[first]]
        used_racks = {ordered[first].rack}
        k = 0
        while len(chosen) < rf and k < 4 * n:
            b = ordered[(first + 1 + (shift + k) % max(n - 1, 1)) % n]
            k += 1
            if b in chosen or (b.rack in used_racks and len(used_racks) < racks):
                continue
            chosen.append(b)
            used_racks.add(b.rack)
        lists.append(tuple(b.id for b in chosen))
    return lists


def round_robin_regenerate(topology: Topology, goals: Goals, seed: int = 0) -> Topology:
    """Kafka's --generate: every topic re-laid round robin over the remaining brokers."""
    rng = random.Random(seed)
    ordered = _rack_alternating([b for b in topology.brokers
                                 if b.alive and b.id not in goals.remove_brokers])
    by_topic: dict[str, list[int]] = defaultdict(list)
    rf: dict[str, int] = {}
    for p in topology.partitions:
        by_topic[p.topic].append(p.partition)
        rf[p.topic] = p.replication_factor
    target: dict[TopicPartition, tuple[int, ...]] = {}
    for topic in sorted(by_topic):
        numbers = sorted(by_topic[topic])
        for number, replicas in zip(numbers, _assign_topic(len(numbers), rf[topic], ordered,
                                                           rng), strict=True):
            target[TopicPartition(topic, number)] = replicas
    return replace_replicas(topology, target)


def largest_first(topology: Topology, goals: Goals) -> Topology:
    """Disk-only greedy: largest replicas off the fullest broker onto the emptiest allowed."""
    members = [b for b in topology.brokers if b.alive and b.id not in goals.remove_brokers]
    cap = {b.id: b.capacity.disk_bytes for b in members}
    rack = {b.id: b.rack for b in topology.brokers}
    disk = dict.fromkeys(cap, 0.0)
    hosted: dict[int, list[int]] = defaultdict(list)
    replicas = [list(p.replicas) for p in topology.partitions]
    sizes = [p.size_bytes for p in topology.partitions]
    for i, reps in enumerate(replicas):
        for r in reps:
            disk[r] = disk.get(r, 0.0) + sizes[i]
            hosted[r].append(i)
    avg = sum(disk.values()) / sum(cap.values())
    limit = avg * (1 + goals.tolerance)
    racks = len({rack[b] for b in cap})
    for source in sorted(cap, key=lambda b: -disk[b] / cap[b]):
        heap = [(-sizes[i], i) for i in hosted[source]]
        heapq.heapify(heap)
        while disk[source] / cap[source] > limit and heap:
            _, i = heapq.heappop(heap)
            max_per_rack = math.ceil(len(replicas[i]) / racks)
            dests = sorted((b for b in cap if b not in replicas[i] and sum(
                rack[r] == rack[b] for r in replicas[i] if r != source) < max_per_rack),
                key=lambda b: (disk[b] / cap[b], b))
            if not dests or (disk[dests[0]] + sizes[i]) / cap[dests[0]] > limit:
                continue
            dest = dests[0]
            replicas[i][replicas[i].index(source)] = dest
            disk[source] -= sizes[i]
            disk[dest] += sizes[i]
    return replace_replicas(topology, {p.key: tuple(replicas[i])
                                       for i, p in enumerate(topology.partitions)})
