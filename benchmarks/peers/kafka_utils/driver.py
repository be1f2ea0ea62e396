"""Yelp kafka-utils' genetic balancer, driven from a kafka-rebalance snapshot.

Runs in the peer's own venv (see setup.sh), so it imports nothing from this project: the
snapshot is read with the standard library. It builds kafka-utils' own ClusterTopology from
the snapshot (brokers with their racks as replication groups, the snapshot's assignment)
and runs kafka-utils' GeneticBalancer as `kafka-cluster-manager --genetic-balancer` would:
`rebalance --replication-groups --brokers --leaders` for a rebalance, `decommission` when
brokers leave. The result is written as Kafka's reassignment JSON.

What the command line would take from ZooKeeper and a partition measurer, the driver takes
from the snapshot: a partition's weight is its bytes in per second (or its size, with
--weight size), its size is its bytes on disk. kafka-utils has no notion of broker capacity.

Settings that differ from the command line's defaults (each is a flag here):
- no limit on partition movements (the command line moves one partition unless told), and
  generations enough for every replica to move ten times;
- a time bound: once it passes, the remaining generations keep their population unchanged,
  and the best state found so far is the result. The command line has no time bound;
- a population of 2 and 50 candidates per generation (the command line: 50 and 10,000), so
  that many more generations, each of which moves at most one replica, fit in the time. On
  the benchmark's 12+3 / 5k cluster, in 50 s, kafka-utils' own score reached -0.32 this way,
  -0.33 with 5 / 200 and -1.44 with 10 / 1,000 (from -4.37).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--snapshot", type=Path, help="kafka-rebalance snapshot v1 file")
    parser.add_argument("--out", type=Path, help="where to write the reassignment JSON")
    parser.add_argument("--remove", default="", metavar="IDS",
                        help="brokers to decommission, comma-separated")
    parser.add_argument("--time-limit", type=float, default=60.0, metavar="S",
                        help="stop exploring after this many seconds (default 60)")
    parser.add_argument("--weight", choices=("bytes-in", "size"), default="bytes-in",
                        help="what a partition weighs on a broker (default bytes-in)")
    parser.add_argument("--max-pop", type=int, default=2,
                        help="population kept between generations (kafka-utils: 50)")
    parser.add_argument("--max-exploration", type=int, default=50,
                        help="candidate states tried per generation (kafka-utils: 10000)")
    parser.add_argument("--check", action="store_true",
                        help="only check that kafka-utils imports, then exit")
    args = parser.parse_args(argv)
    if args.check:
        _kafka_utils()
        return 0
    if args.snapshot is None or args.out is None:
        parser.error("give --snapshot and --out")
    doc = json.loads(args.snapshot.read_text())
    removed = [int(b) for b in args.remove.split(",") if b.strip()]
    assignment = _run(doc, removed, args)
    args.out.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": topic, "partition": number, "replicas": replicas}
        for (topic, number), replicas in assignment.items()]}))
    return 0


def _kafka_utils() -> Any:
    from kafka_utils.kafka_cluster_manager.cluster_info import (
        cluster_topology,
        genetic_balancer,
        partition_measurer,
    )
    return cluster_topology, genetic_balancer, partition_measurer


def _run(doc: dict[str, Any], removed: list[int],
         args: argparse.Namespace) -> dict[tuple[str, int], list[int]]:
    cluster_topology, genetic_balancer, partition_measurer = _kafka_utils()
    by_name = {(p["topic"], int(p["partition"])): p for p in doc["partitions"]}
    weight_key = "bytes_in_per_sec" if args.weight == "bytes-in" else "size_bytes"
    if not any(float(p.get(weight_key) or 0) > 0 for p in by_name.values()):
        weight_key = "size_bytes"

    class SnapshotMeasurer(partition_measurer.PartitionMeasurer):
        def get_weight(self, name: tuple[str, int]) -> float:
            return float(by_name[name].get(weight_key) or 0.0)

        def get_size(self, name: tuple[str, int]) -> float:
            return float(by_name[name].get("size_bytes") or 0.0)

    deadline = time.monotonic() + args.time_limit

    class TimedGeneticBalancer(genetic_balancer.GeneticBalancer):
        def _explore(self, pop: set[Any]) -> set[Any]:
            if time.monotonic() >= deadline:
                return set(pop)
            return super()._explore(pop)

    brokers = {int(b["id"]): ({"host": f"broker-{b['id']}", "rack": b.get("rack")}
                              if b.get("alive", True) else None)
               for b in doc["brokers"]}
    racks = {broker_id: (meta or {}).get("rack") for broker_id, meta in brokers.items()}
    assignment = {name: [int(r) for r in p["replicas"]] for name, p in sorted(by_name.items())}
    replicas = sum(len(r) for r in assignment.values())
    settings = argparse.Namespace(
        replication_groups=True, brokers=True, leaders=True, max_partition_movements=replicas,
        max_movement_size=None, max_leader_changes=None, balancer_args=[
            f"--num-gens={10 * replicas}",
            f"--max-pop={args.max_pop}", f"--max-exploration={args.max_exploration}"])
    measurer = SnapshotMeasurer(None, list(brokers), assignment, settings)
    topology = cluster_topology.ClusterTopology(
        assignment, brokers, measurer, lambda broker: racks.get(broker.id) or "default")
    balancer = TimedGeneticBalancer(topology, settings)
    start = time.monotonic()
    before = balancer.score()
    if removed:
        balancer.decommission_brokers(removed)
    else:
        balancer.rebalance()
    print(f"kafka-utils genetic balancer: score {before:.3f} -> {balancer.score():.3f} in "
          f"{time.monotonic() - start:.1f}s", file=sys.stderr)
    result: dict[tuple[str, int], list[int]] = topology.assignment
    return result


if __name__ == "__main__":
    sys.exit(main())
