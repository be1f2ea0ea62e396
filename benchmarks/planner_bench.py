"""Planner benchmark: `python -m benchmarks.planner_bench [--case small|medium|large]`.

Per case: plan time, partitions moved, bytes moved / lower bound, partitions that break the
rack rule, and max/avg, min/avg utilization per resource for the planner and its peers run on
the same cluster in the same run (Kafka's own --generate placement, a largest-first disk
mover, and any `--peer NAME=COMMAND`), plus the planner's validity and peak RSS.
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from benchmarks.baselines import largest_first
from benchmarks.peers import external, kafka_generate, kafka_utils_command, topicmappr_command
from planner.arrays import to_arrays
from planner.balance import achievable_targets
from planner.bounds import lower_bounds
from planner.goals import Budget, Goals
from planner.solve import plan
from planner.spread import crowding
from planner.validate import validate_plan
from topology.load import balance, bytes_moved
from topology.model import RESOURCES, Topology
from topology.synthetic import generate_cluster, generate_zoned


@dataclass(frozen=True)
class Case:
    """One benchmark cluster and its targets."""

    name: str
    brokers: int
    new_brokers: int
    partitions: int
    max_seconds: float
    max_ratio: float
    time_limit_s: float
    zoned: bool = False  # three equal zones of equal brokers, the new ones spread over them

    def cluster(self, seed: int) -> Topology:
        if self.zoned:
            return generate_zoned((self.brokers // 3,) * 3, (self.new_brokers // 3,) * 3, 3,
                                  self.partitions, seed)
        return generate_cluster(self.brokers, self.new_brokers, 3, self.partitions, 3,
                                seed=seed)


CASES = {
    "small": Case("small", 12, 3, 5_000, 10, 1.02, 8),
    "zoned": Case("zoned", 12, 3, 5_000, 10, 1.02, 8, zoned=True),
    "medium": Case("medium", 60, 6, 50_000, 60, 1.03, 50),
    "large": Case("large", 200, 10, 400_000, 180, 1.05, 150),
}


def main_over_cases(description: str, run: Callable[[str, int], None]) -> None:
    """The command line of a benchmark that runs `run(case name, seed)` for each case of
    `--cases` (small,medium,large by default) at `--seed`."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--cases", default="small,medium,large")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    for name in args.cases.split(","):
        run(name, args.seed)


def _peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _rack_breaks(topology: Topology) -> int:
    """Partitions with two replicas in one rack although the cluster has racks enough."""
    racks = {b.id: b.rack for b in topology.brokers}
    spread = len(set(racks.values()))
    return sum(1 for p in topology.partitions
               if len({racks[b] for b in p.replicas}) < min(len(p.replicas), spread))


def _row(label: str, before: Topology, after: Topology, seconds: float, lower_bound: int,
         goals: Goals) -> str:
    members = tuple(b for b in after.brokers if b.alive and b.id not in goals.remove_brokers)
    pairs = list(zip(before.partitions, after.partitions, strict=True))
    moved = sum(bytes_moved(p, q.replicas) for p, q in pairs)
    moves = sum(1 for p, q in pairs if set(p.replicas) != set(q.replicas))
    bal = balance(after, members)
    ratio = moved / lower_bound if lower_bound else float("nan")
    cells = "  ".join(f"{res.value:>7} {bal[res].max_over_avg:5.3f}/{bal[res].min_over_avg:5.3f}"
                      for res in RESOURCES)
    return (f"{label:<16} {seconds:7.1f}s  moves {moves:>6}  bytes/LB {ratio:6.3f}  "
            f"rack breaks {_rack_breaks(after):>5}  max/min over avg: {cells}")


def _timed(fn: Callable[[], Topology]) -> tuple[Topology, float]:
    start = time.monotonic()
    out = fn()
    return out, time.monotonic() - start


def run_case(case: Case, seed: int = 0, peers: tuple[tuple[str, str], ...] = (),
             topicmappr: Path | None = None, kafka_utils: Path | None = None,
             peer_time_factor: float = 5.0, topic_spread: float | None = None) -> bool:
    """Run one case, print the table, return True when every target is met."""
    topology, gen_s = _timed(lambda: case.cluster(seed))
    goals = Goals(tolerance=0.10)
    arrays = to_arrays(topology, goals)
    bounds = lower_bounds(arrays, goals, achievable_targets(arrays, goals))
    lower_bound = bounds.combined
    shape = "3 zones of equal brokers" if case.zoned else "3 racks, mixed capacities"
    print(f"== {case.name} (seed {seed}): {case.brokers}+{case.new_brokers} brokers, "
          f"{case.partitions} partitions, RF 3, {shape} (generated in {gen_s:.1f}s); lower bound "
          f"{lower_bound / 1e12:.2f} TB (disk alone {bounds.disk / 1e12:.2f} TB)")
    start, cpu_start = time.monotonic(), time.process_time()
    result = plan(topology, goals, Budget(time_limit_s=case.time_limit_s))
    seconds, cpu = time.monotonic() - start, time.process_time() - cpu_start
    rss = _peak_rss_mib()
    report = validate_plan(topology, result.moves, goals)
    print(_row("planner", topology, result.after, seconds, lower_bound, goals))
    generated, generate_s = _timed(lambda: kafka_generate(topology, goals))
    print(_row("kafka --generate", topology, generated, generate_s, lower_bound, goals))
    lf, lf_s = _timed(lambda: largest_first(topology, goals))
    print(_row("largest-first", topology, lf, lf_s, lower_bound, goals))
    if topicmappr is not None:
        peers = (("topicmappr", topicmappr_command(topicmappr, topology, goals)), *peers)
    if kafka_utils is not None:
        peers = (("kafka-utils genetic",
                  kafka_utils_command(kafka_utils, goals, case.max_seconds * peer_time_factor)),
                 *peers)
    for name, command in peers:
        theirs, their_s = _timed(lambda command=command: external(command, topology))
        print(_row(name, topology, theirs, their_s, lower_bound, goals))
    ratio = result.bytes_moved / lower_bound if lower_bound else 1.0
    if topic_spread is not None:
        _spread_row(case, topology, goals, topic_spread, lower_bound, result.after)
    print(f"planner bytes / disk-only bound: {result.bytes_moved / max(bounds.disk, 1):.3f}")
    met = (seconds <= case.max_seconds and ratio <= case.max_ratio and report.valid
           and report.balanced and (case.name != "large" or rss <= 4096))
    print(f"planner: wall {seconds:.1f}s, CPU {cpu:.1f}s, load average "
          f"{os.getloadavg()[0]:.1f}; status {result.status.value}, "
          f"{result.data_moves} data moves, "
          f"{len(result.moves) - result.data_moves} leadership-only, valid={report.valid}, "
          f"balanced={report.balanced}, peak RSS {rss:.0f} MiB (after planning)")
    print("planner phases: " + ", ".join(f"{name} {secs:.1f}s"
                                         for name, secs in result.phase_seconds))
    print(f"targets: <= {case.max_seconds:.0f}s, <= {case.max_ratio:.2f} x LB, +/-10%"
          f"{', <= 4096 MiB' if case.name == 'large' else ''}: {'MET' if met else 'NOT MET'}")
    for line in report.errors[:5] + result.binding:
        print("  ", line)
    return met


def _peer(text: str, parser: argparse.ArgumentParser) -> tuple[str, str]:
    name, sep, command = text.partition("=")
    if not sep or not name or "{snapshot}" not in command or "{out}" not in command:
        parser.error(f"--peer {text!r}: give NAME=COMMAND with {{snapshot}} and {{out}} in it")
    return name, command


def _spread_row(case: Case, topology: Topology, goals: Goals, tolerance: float,
                lower_bound: int, plain_after: Topology) -> None:
    """The same case with --topic-spread: its cost in moves, bytes and time, and how many
    topics crowd a broker before, after the plain plan and after the spread one."""
    spread_goals = replace(goals, topic_spread=tolerance)
    start = time.monotonic()
    spread = plan(topology, spread_goals, Budget(time_limit_s=case.time_limit_s))
    seconds = time.monotonic() - start
    report = validate_plan(topology, spread.moves, spread_goals)
    print(_row(f"planner +spread {tolerance:g}", topology, spread.after, seconds, lower_bound,
               goals))

    def crowd(placed: Topology) -> str:
        arrays = to_arrays(placed, spread_goals)
        c = crowding(arrays, arrays.replicas, tolerance)
        return f"{c.topics} topics ({c.replicas} replicas, {c.leaders} leaders over)"

    print(f"topic spread +{tolerance:.0%}: before {crowd(topology)}; plain plan "
          f"{crowd(plain_after)}; spread plan {crowd(spread.after)}; "
          f"{spread.data_moves} data moves, {len(spread.moves) - spread.data_moves} "
          f"leadership-only, valid={report.valid}, balanced={report.balanced}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--case", choices=sorted(CASES), action="append",
                        help="case to run (repeatable); default: small and medium")
    parser.add_argument("--seed", type=int, action="append",
                        help="cluster seed (repeatable); default: 0")
    parser.add_argument("--peer", action="append", default=[], metavar="NAME=COMMAND",
                        help="another placement tool: a shell command template that reads "
                             "{snapshot} and writes Kafka's reassignment JSON to {out} "
                             "(repeatable)")
    parser.add_argument("--topicmappr", type=Path, metavar="PATH",
                        help="DataDog topicmappr built by benchmarks/peers/topicmappr/build.sh")
    parser.add_argument("--kafka-utils", type=Path, metavar="PYTHON",
                        help="the python of the venv benchmarks/peers/kafka_utils/setup.sh "
                             "made (kafka-utils' genetic balancer, given the case's time "
                             "limit times --peer-time-factor)")
    parser.add_argument("--peer-time-factor", type=float, default=5.0, metavar="X",
                        help="a time-bound peer gets X times the case's time target "
                             "(default 5)")
    parser.add_argument("--topic-spread", type=float, metavar="TOL",
                        help="also plan each case with --topic-spread TOL and report its cost "
                             "and the topics crowding a broker")
    args = parser.parse_args(argv)
    peers = tuple(_peer(text, parser) for text in args.peer)
    names = args.case or ["small", "medium"]
    results = [run_case(CASES[name], seed, peers, args.topicmappr, args.kafka_utils,
                        args.peer_time_factor, args.topic_spread)
               for name in names for seed in args.seed or [0]]
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
