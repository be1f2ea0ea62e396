"""JBOD benchmark: `python -m benchmarks.log_dirs_bench [--cases small,medium]`.

On the planner benchmark's clusters (new brokers added), every broker is given 2 to 4 log dirs
(by its id), one of them on a volume twice the size of the others on every second broker, and
each replica a dir drawn at random with half of the weight on the broker's first dir: the drift
of brokers whose dirs were added one at a time. Side by side in one run:

- the same cluster without log dirs: the broker-level plan must be the same moves;
- with them: how many dirs lie outside +/-10% of their share of their broker before and after,
  the worst, the replicas placed on arrival, the moves between dirs and their bytes (copied on
  the brokers' own disks), and the time the log-dir phase took.
"""

from __future__ import annotations

import time
from collections import defaultdict
from dataclasses import replace

import numpy as np

from benchmarks.planner_bench import CASES, main_over_cases
from planner.goals import Budget, Goals
from planner.result import PlanResult
from planner.solve import plan
from topology.model import LogDir, TopicPartition, Topology

FIRST_DIR_WEIGHT = 0.5


def with_log_dirs(topology: Topology, seed: int) -> Topology:
    """`topology` with JBOD brokers and drifted replica dirs (see the module docstring)."""
    rng = np.random.default_rng(seed)
    brokers = []
    for b in topology.brokers:
        count = 2 + b.id % 3
        volume = b.capacity.disk_bytes / count
        sizes = [volume * (2 if i == 0 and b.id % 2 == 0 else 1) for i in range(count)]
        brokers.append(replace(b, log_dirs=tuple(
            LogDir(f"/kafka/{b.id}/d{i}", int(size)) for i, size in enumerate(sizes))))
    paths = {b.id: [d.path for d in b.log_dirs] for b in brokers}
    dirs: dict[tuple[TopicPartition, int], str] = {}
    for p in topology.partitions:
        for replica in p.replicas:
            options = paths[replica]
            weights = [FIRST_DIR_WEIGHT] + [(1 - FIRST_DIR_WEIGHT) / (len(options) - 1)] * (
                len(options) - 1)
            dirs[(p.key, replica)] = options[int(rng.choice(len(options), p=weights))]
    return Topology(tuple(brokers), topology.partitions, topology.notes, dirs)


def dir_bound(topology: Topology, result: PlanResult) -> float:
    """The fewest bytes any set of moves between dirs must copy to bring every dir into the
    band, once the plan's arriving replicas are placed: per broker, the larger of the bytes
    its dirs hold above their band and the bytes they lack below it."""
    dirs = result.log_dirs
    assert dirs is not None
    targets = {m.key: m.target for m in result.moves}
    jbod = {b.id: b for b in topology.brokers if len(b.log_dirs) > 1}
    used: dict[tuple[int, str], float] = defaultdict(float)
    for p in topology.partitions:
        for b in targets.get(p.key, p.replicas):
            if b in jbod:
                where = (topology.replica_dirs.get((p.key, b)) if b in p.replicas
                         else dirs.placements.get((p.key, b)))
                if where is not None:
                    used[(b, where)] += p.size_bytes
    bound = 0.0
    for b, broker in jbod.items():
        volumes = [float(d.capacity_bytes or 1) for d in broker.log_dirs]
        total = sum(used[(b, d.path)] for d in broker.log_dirs)
        over = under = 0.0
        for d, volume in zip(broker.log_dirs, volumes, strict=True):
            target = total * volume / sum(volumes)
            over += max(0.0, used[(b, d.path)] - (1 + dirs.tolerance) * target)
            under += max(0.0, (1 - dirs.tolerance) * target - used[(b, d.path)])
        bound += max(over, under)
    return bound


def run_case(name: str, seed: int) -> None:
    case = CASES[name]
    plain = case.cluster(seed)
    jbod = with_log_dirs(plain, seed)
    added = frozenset(b.id for b in plain.brokers
                      if not any(b.id in p.replicas for p in plain.partitions))
    goals = Goals(add_brokers=added)
    budget = Budget(time_limit_s=case.time_limit_s, seed=seed)
    start = time.monotonic()
    without = plan(plain, goals, budget)
    plain_seconds = time.monotonic() - start
    start = time.monotonic()
    with_dirs = plan(jbod, goals, budget)
    jbod_seconds = time.monotonic() - start
    dirs = with_dirs.log_dirs
    assert dirs is not None
    same = [(m.key, m.target) for m in without.moves] == [(m.key, m.target)
                                                           for m in with_dirs.moves]
    phase = dict(with_dirs.phase_seconds).get("log dirs", 0.0)
    stored = sum(p.size_bytes * len(p.replicas) for p in plain.partitions)
    print(f"== {name} (seed {seed}): {len(plain.brokers)} brokers ({len(added)} added), "
          f"{len(plain.partitions)} partitions, {dirs.before.dirs} log dirs")
    bound = dir_bound(jbod, with_dirs)
    print("| | broker moves | bytes over the network | dirs off +/-10% (worst) | placed on "
          "arrival | moves between dirs | bytes on local disks (x the bound) | time (log-dir "
          "phase) |")
    print("|---|---|---|---|---|---|---|---|")
    print(f"| without log dirs | {len(without.moves)} | {without.bytes_moved / 1e12:.2f} TB | "
          f"- | - | - | - | {plain_seconds:.1f} s |")
    print(f"| with log dirs | {len(with_dirs.moves)} ({'same moves' if same else 'DIFFERENT'})"
          f" | {with_dirs.bytes_moved / 1e12:.2f} TB | {dirs.before.outside} "
          f"({dirs.before.worst:.0%}) -> {dirs.after.outside} ({dirs.after.worst:.0%}) | "
          f"{len(dirs.placements)} | {len(dirs.moves)} | {dirs.bytes_moved / 1e12:.2f} TB "
          f"({dirs.bytes_moved / max(bound, 1):.3f}; {dirs.bytes_moved / stored:.1%} of all "
          f"stored) | {jbod_seconds:.1f} s "
          f"({phase:.2f} s) |")


def main() -> None:
    main_over_cases(__doc__.splitlines()[0], run_case)


if __name__ == "__main__":
    main()
