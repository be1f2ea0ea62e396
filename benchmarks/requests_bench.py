"""Request balance benchmark: `python -m benchmarks.requests_bench [--cases small,medium]`.

On the planner benchmark's generated clusters (3 racks, mixed capacities, RF 3, three new
brokers), each partition is given produce and fetch requests a second: a tenth of the topics
are chatty (200-400 a partition, many small requests), the rest quiet (1-20). Side by side in
one run, the same cluster planned without and with `--request-balance 0.2`: what the goal
costs in moves, bytes and time, how many brokers end outside their fair share of requests,
the busiest broker's requests over its fair share, and the bytes' balance (the largest
deviation of disk, net in or net out from target) to show it is kept.
"""

from __future__ import annotations

import time
from dataclasses import replace

import numpy as np

from benchmarks.planner_bench import CASES, main_over_cases
from planner.arrays import broker_loads, to_arrays
from planner.balance import achievable_targets, deviation
from planner.goals import Budget, Goals
from planner.requests import request_level
from planner.solve import plan
from topology.model import Topology
from topology.synthetic import generate_cluster

TOLERANCE = 0.10
REQUEST_TOLERANCE = 0.20
NEW_BROKERS = 3


def with_requests(topology: Topology, seed: int) -> Topology:
    """`topology` with request rates: a tenth of the topics chatty, the rest quiet."""
    rng = np.random.default_rng(seed)
    topics = sorted({p.topic for p in topology.partitions})
    chatty = set(rng.choice(topics, size=max(1, len(topics) // 10), replace=False).tolist())
    return topology.with_partitions(
        replace(p, requests_per_sec=round(float(rng.uniform(200, 400) if p.topic in chatty
                                                else rng.uniform(1, 20)), 1))
        for p in topology.partitions)


def run_case(name: str, seed: int) -> None:
    case = CASES[name]
    topology = with_requests(generate_cluster(case.brokers, NEW_BROKERS, 3, case.partitions, 3,
                                              seed=seed), seed)
    added = frozenset(b.id for b in topology.brokers[-NEW_BROKERS:])
    goals = Goals(tolerance=TOLERANCE, add_brokers=added)
    arrays = to_arrays(topology, goals)
    level = request_level(arrays, arrays.replicas, REQUEST_TOLERANCE)
    print(f"== {name} (seed {seed}): {len(topology.brokers)} brokers ({NEW_BROKERS} new), "
          f"{case.partitions} partitions, {level.total_per_sec:,.0f} requests/s; before: "
          f"{level.brokers_outside} brokers outside +/-{REQUEST_TOLERANCE:.0%} of their fair "
          f"share of requests, the busiest {level.over_fair:.2f}x")
    print("| plan | data moves (+leadership only) | bytes | brokers outside (requests) | "
          "busiest / fair | bytes' balance off target | time |")
    print("|---|---|---|---|---|---|---|")
    targets = achievable_targets(arrays, goals)
    for label, run_goals in (("without", goals),
                             ("--request-balance 0.2",
                              replace(goals, request_balance=REQUEST_TOLERANCE))):
        start = time.monotonic()
        result = plan(topology, run_goals, Budget(time_limit_s=case.time_limit_s))
        seconds = time.monotonic() - start
        after = to_arrays(result.after, goals)
        after_level = request_level(after, after.replicas, REQUEST_TOLERANCE)
        dev = deviation(arrays, targets, broker_loads(after, after.replicas))
        leadership = sum(1 for m in result.moves if m.leadership_only)
        print(f"| {label} | {len(result.moves) - leadership} (+{leadership}) | "
              f"{result.bytes_moved / 1e12:.2f} TB | {after_level.brokers_outside} | "
              f"{after_level.over_fair:.2f} | {float(dev.max()):.1%} | {seconds:.1f} s |")


def main() -> None:
    main_over_cases(__doc__.splitlines()[0], run_case)


if __name__ == "__main__":
    main()
