"""Leader balance benchmark: `python -m benchmarks.leaders_bench [--cases small,medium]`.

On the planner benchmark's generated clusters (3 racks, mixed capacities, RF 3), drifted:
no broker added, so every byte of imbalance is the existing brokers'. For each, side by side
in one run:

- zero bytes (`plan --max-bytes 0`): how much of net out's distance outside the +/-10% band
  leadership alone removes, and with `--leader-balance 0.1` how many brokers stay off their
  fair share of leaders;
- the full plan without and with `--leader-balance 0.1`: what the goal costs in moves, bytes
  and time.

Deviation: the largest distance of a broker's utilization from its target, relative to the
target (the planner's measure); "removed" is the share of the excess over the band gone.
"""

from __future__ import annotations

import time

from benchmarks.planner_bench import CASES, main_over_cases
from planner.arrays import broker_loads, to_arrays
from planner.balance import achievable_targets, deviation
from planner.goals import Budget, Goals
from planner.leader_balance import leader_level
from planner.result import PlanResult
from planner.solve import plan
from topology.model import Topology
from topology.synthetic import generate_cluster

TOLERANCE = 0.10
LEADER_TOLERANCE = 0.10


def _row(label: str, topology: Topology, result: PlanResult, seconds: float,
         goals: Goals) -> tuple[float, str]:
    arrays = to_arrays(topology, goals)
    targets = achievable_targets(arrays, goals)
    after = to_arrays(result.after, goals)
    dev = deviation(arrays, targets, broker_loads(after, after.replicas))
    level = leader_level(after, after.replicas, LEADER_TOLERANCE)
    leadership = sum(1 for m in result.moves if set(m.current) == set(m.target))
    line = (f"| {label} | {len(result.moves) - leadership} (+{leadership}) | "
            f"{result.bytes_moved / 1e12:.2f} TB | {dev[2]:.1%} | {level.brokers_outside} | "
            f"{seconds:.1f} s |")
    return float(dev[2]), line


def run_case(name: str, seed: int) -> None:
    case = CASES[name]
    topology = generate_cluster(case.brokers, 0, 3, case.partitions, 3, seed=seed)
    goals = Goals(tolerance=TOLERANCE)
    arrays = to_arrays(topology, goals)
    dev = deviation(arrays, achievable_targets(arrays, goals),
                    broker_loads(arrays, arrays.replicas))
    level = leader_level(arrays, arrays.replicas, LEADER_TOLERANCE)
    print(f"== {name} (seed {seed}): {case.brokers} brokers, {case.partitions} partitions, "
          f"nothing added; net out {dev[2]:.1%} off target, disk {dev[0]:.1%}, net in "
          f"{dev[1]:.1%}; {level.brokers_outside} brokers off their fair share of leaders")
    print("| plan | data moves (+leadership only) | bytes | net out off target | "
          "brokers off fair leaders | time |")
    print("|---|---|---|---|---|---|")
    runs = (("zero bytes", goals, 0), ("zero bytes, --leader-balance", Goals(
        tolerance=TOLERANCE, leader_balance=LEADER_TOLERANCE), 0),
        ("full", goals, None), ("full, --leader-balance", Goals(
            tolerance=TOLERANCE, leader_balance=LEADER_TOLERANCE), None))
    for label, run_goals, max_bytes in runs:
        start = time.monotonic()
        result = plan(topology, run_goals, Budget(max_bytes=max_bytes,
                                                  time_limit_s=case.time_limit_s))
        seconds = time.monotonic() - start
        after, line = _row(label, topology, result, seconds, run_goals)
        print(line)
        if max_bytes == 0 and run_goals.leader_balance is None and dev[2] > TOLERANCE:
            removed = (dev[2] - max(after, TOLERANCE)) / (dev[2] - TOLERANCE)
            print(f"|  | zero bytes removed {removed:.0%} of net out's excess over the band "
                  f"({dev[2]:.1%} -> {after:.1%}) | | | | |")


def main() -> None:
    main_over_cases(__doc__.splitlines()[0], run_case)


if __name__ == "__main__":
    main()
