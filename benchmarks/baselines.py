"""A baseline the planner is measured against, run in the same process (Kafka's own --generate
placement runs as Kafka's code: benchmarks.peers).

largest_first: a simple disk mover: the most loaded broker sends its largest replica that
fits to the least loaded broker allowed by the rack rule, until disk is within tolerance.
"""

from __future__ import annotations

import heapq
import math
from collections import defaultdict

from planner.goals import Goals
from topology.model import Topology, replace_replicas


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
