"""Executor benchmark on a sandbox: `python -m benchmarks.executor_bench [--sandbox-dir DIR]`.

Two identical topics (RF 2, leader on rack a, follower on rack b, random data) get the same
follower moves to a spare broker on rack b: one through `rebalance execute --max-mbps CAP`, the
other through Kafka's own ReassignPartitionsCommand `--throttle CAP` (all at once, as operators
run it), one after the other in the same run. A producer (acks=all) writes to a third topic on
the source brokers throughout, and its latency is split by phase.

Reported against the targets: replication rate into the target broker that Prometheus sees while
each move copies and from the first copy to the last (mean / cap: no idle tail; peak 5-second
window / cap), total time against bytes / cap, and the review's ETA against the measured time.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import requests
from confluent_kafka import KafkaError, Message, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from kafka_rebalance.sandbox import cluster
from kafka_rebalance.sandbox.state import SandboxInfo

MB = 1_000_000
RECORD_BYTES = 10_000
REASSIGN = "org.apache.kafka.tools.reassign.ReassignPartitionsCommand"
TARGET_MEAN, TARGET_PEAK, TARGET_TOTAL = 0.85, 1.10, 1.2
ROOT = Path(__file__).resolve().parents[1]
REPLICATION_IN = "kafka_broker_replication_bytes_in_total"


@dataclass
class Latencies:
    """Producer send -> ack latency samples (wall-clock send time, seconds)."""

    samples: list[tuple[float, float]] = field(default_factory=list)
    errors: int = 0

    def p99_ms(self, start: float, end: float) -> float:
        return self.quantile_ms(0.99, start, end)

    def quantile_ms(self, q: float, start: float, end: float) -> float:
        """The q-quantile of the latencies of the sends in [start, end], ms."""
        window = sorted(lat for at, lat in self.samples if start <= at <= end)
        return window[int(q * (len(window) - 1))] * 1000 if window else float("nan")


class LatencyProducer:
    """Writes small messages (acks=all) at a steady pace in a thread and records latencies."""

    def __init__(self, bootstrap: str, topic: str, per_second: int = 200,
                 value_bytes: int = 200) -> None:
        self.bootstrap, self.topic, self.per_second = bootstrap, topic, per_second
        self.value = b"x" * value_bytes
        self.latencies = Latencies()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> LatencyProducer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(60)

    def _run(self) -> None:
        producer = Producer({"bootstrap.servers": self.bootstrap, "acks": "all", "linger.ms": 0})
        while not self._stop.is_set():
            sent = time.time()

            def done(err: KafkaError | None, _msg: Message, sent: float = sent) -> None:
                if err is None:
                    self.latencies.samples.append((sent, time.time() - sent))
                else:
                    self.latencies.errors += 1
            producer.produce(self.topic, value=self.value, on_delivery=done)
            producer.poll(1.0 / self.per_second)
        producer.flush(30)


def create_topic(info: SandboxInfo, name: str, assignment: list[list[int]],
                 bytes_each: int) -> None:
    """Create `name` with one partition per entry of `assignment` (its replicas) and write
    `bytes_each` of incompressible data to every partition, the partitions in turn."""
    admin = AdminClient({"bootstrap.servers": info.bootstrap})
    topic = NewTopic(name, len(assignment), replica_assignment=assignment)
    admin.create_topics([topic])[name].result(timeout=60)
    if not bytes_each:
        return
    producer = Producer({"bootstrap.servers": info.bootstrap, "linger.ms": 50,
                         "compression.type": "none", "acks": "all"})
    payload = bytes(range(256)) * (RECORD_BYTES // 256) + b"\0" * (RECORD_BYTES % 256)
    for _ in range(bytes_each // RECORD_BYTES):
        for partition in range(len(assignment)):
            while True:
                try:
                    producer.produce(name, value=payload, partition=partition)
                    break
                except BufferError:
                    producer.poll(0.1)
        producer.poll(0)
    producer.flush(600)


def plan_file(info: SandboxInfo, path: Path, topic: str, targets: list[list[int]]) -> None:
    """A plan file (planner's format) moving partition n of `topic` to `targets[n]`, from a
    live snapshot."""
    from datetime import UTC, datetime

    from kafka_rebalance.files.planfile import write_plan
    from planner.goals import Budget, Goals
    from planner.planfile import SolverInfo, make_plan_file
    from planner.result import Move, SolverStatus
    from topology.capacities import CAPACITY_KEYS, Capacities
    from topology.kafka_admin import KafkaClusterAdmin
    from topology.live import read_live_topology
    from topology.snapshot import topology_from_dict

    caps = Capacities(default={k: 1e15 for k in CAPACITY_KEYS})
    admin = KafkaClusterAdmin(info.bootstrap)
    try:
        topology = topology_from_dict(read_live_topology(admin, None, caps).document, caps, "")
    finally:
        admin.close()
    parts = {(p.topic, p.partition): p for p in topology.partitions}
    moves = [Move(topic, n, parts[(topic, n)].replicas, tuple(t), parts[(topic, n)].size_bytes)
             for n, t in enumerate(targets)]
    write_plan(path, make_plan_file(topology, moves, Goals(tolerance=0.99), Budget(),
                                    SolverInfo(SolverStatus.FEASIBLE, 0),
                                    datetime.now(UTC).isoformat(timespec="seconds")))


def counter_series(info: SandboxInfo, broker: int, start: float, end: float,
                   metric: str = REPLICATION_IN) -> list[tuple[float, float]]:
    """The target broker's replication-in counter: every raw sample with its own scrape
    timestamp (a query_range step would repeat a late scrape's old value and make a 5-second
    window look like 6 or 7 seconds of traffic on a loaded machine)."""
    span = int(end - start) + 2
    query = f'{metric}{{broker_id="{broker}"}}[{span}s]'
    answer = requests.get(f"{info.prometheus_url}/api/v1/query", timeout=30, params={
        "query": query, "time": end}).json()
    result = answer["data"]["result"]
    return [(float(t), float(v)) for t, v in result[0]["values"]] if result else []


def rates(series: list[tuple[float, float]], start: float, end: float) -> tuple[float, float]:
    """Mean rate over [start, end] and the peak rate over any 5-second window overlapping it
    (a copy shorter than 5 s is judged by the 5 s around it)."""
    inside = [(t, v) for t, v in series if start - 1 <= t <= end + 1]
    if len(inside) < 2:
        return float("nan"), float("nan")
    mean = (inside[-1][1] - inside[0][1]) / (inside[-1][0] - inside[0][0])
    around = [(t, v) for t, v in series if start - 5 <= t <= end + 5]
    peak = 0.0
    for i, (t0, v0) in enumerate(around):
        for t1, v1 in around[i + 1:]:
            if t1 - t0 >= 5:
                if t0 <= end and t1 >= start:
                    peak = max(peak, (v1 - v0) / (t1 - t0))
                break
    return mean, peak


def journal_times(path: Path) -> dict[str, dict[str, float]]:
    """Per move, the first time it entered each state (wall clock)."""
    times: dict[str, dict[str, float]] = {}
    for line in path.read_text().splitlines():
        record = json.loads(line)
        if record.get("kind") == "state":
            times.setdefault(record["move"], {}).setdefault(record["state"], record["at"])
    return times


PHASES = ("throttling", "submitted", "copying", "verifying", "unthrottling", "electing",
          "cooling_down", "done")


def phases(times: dict[str, float]) -> str:
    """Seconds spent in each state of one move, in order (states it skipped left out)."""
    seen = [(state, times[state]) for state in PHASES if state in times]
    return ", ".join(f"{a} {t2 - t1:.2f}s" for (a, t1), (_, t2) in itertools.pairwise(seen))


def run_ours(info: SandboxInfo, plan: Path, cap_mbps: float, quota_window: float,
             work: Path) -> tuple[float, float, Path]:
    journal = work / "bench.journal"
    command = [sys.executable, "-c", "import cli; cli.main()", "execute", str(plan),
               "--bootstrap", info.bootstrap, "--prometheus", info.prometheus_url,
               "--max-mbps", str(cap_mbps), "--journal", str(journal), "--poll-seconds", "0.5",
               "--quota-window", str(quota_window)]
    start = time.time()
    result = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, timeout=3600)
    end = time.time()
    if result.returncode != 0:
        raise SystemExit(f"rebalance execute failed:\n{result.stdout}\n{result.stderr}")
    return start, end, journal


def run_kafka_tool(info: SandboxInfo, topic: str, targets: list[list[int]], cap_bytes: int,
                   work: Path) -> tuple[float, float]:
    """Kafka's ReassignPartitionsCommand moving partition n of `topic` to `targets[n]`, every
    move at once under `--throttle`; `--verify` polled until done (which also removes the
    throttles)."""
    spec = work / "kafka-plan.json"
    spec.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": topic, "partition": n, "replicas": t} for n, t in enumerate(targets)]}))
    base = ["java", "-cp", f"{info.jar_dir}/*", REASSIGN, "--bootstrap-server", info.bootstrap,
            "--reassignment-json-file", str(spec)]
    start = time.time()
    subprocess.run([*base, "--execute", "--throttle", str(cap_bytes)], check=True,
                   capture_output=True, timeout=300)
    while True:
        out = subprocess.run([*base, "--verify"], capture_output=True, text=True, timeout=300)
        if "still in progress" not in out.stdout:
            return start, time.time()
        time.sleep(1)


@dataclass
class Args:
    sandbox_dir: Path | None
    cap_mbps: float
    partitions: int
    partition_mb: int
    quota_window: float


def parse(argv: list[str]) -> Args:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else "")
    parser.add_argument("--sandbox-dir", type=Path, default=None,
                        help="A running sandbox (default: start one in a temp dir, then stop it)")
    parser.add_argument("--cap-mbps", type=float, default=2.0)
    parser.add_argument("--partitions", type=int, default=3)
    parser.add_argument("--partition-mb", type=int, default=20)
    parser.add_argument("--quota-window", type=float, default=11.0,
                        help="execute --quota-window (a wait between moves, like a cooldown)")
    ns = parser.parse_args(argv)
    return Args(ns.sandbox_dir, ns.cap_mbps, ns.partitions, ns.partition_mb, ns.quota_window)


def bench(info: SandboxInfo, args: Args, work: Path) -> None:
    a = sorted(b.id for b in info.brokers if b.rack == "a")
    b = sorted(b.id for b in info.brokers if b.rack == "b")
    leader, follower, spare = a[0], b[0], b[1]
    cap = int(args.cap_mbps * MB)
    tag = str(int(time.time()))
    ours_topic, kafka_topic, probe = f"bench-ours-{tag}", f"bench-kafka-{tag}", f"probe-{tag}"
    for topic in (ours_topic, kafka_topic):
        create_topic(info, topic, [[leader, follower]] * args.partitions,
                     args.partition_mb * MB)
    create_topic(info, probe, [[leader, follower]], 0)
    targets = [[leader, spare]] * args.partitions
    plan = work / "plan.json"
    plan_file(info, plan, ours_topic, targets)
    total_bytes = json.loads(plan.read_text())
    moved = sum(m["size_bytes"] for m in total_bytes["moves"])
    time.sleep(12)  # let the 10 s gate window forget the data loading
    with LatencyProducer(info.bootstrap, probe) as producer:
        quiet = time.time()
        time.sleep(10)
        ours_start, ours_end, journal = run_ours(info, plan, args.cap_mbps, args.quota_window,
                                                 work)
        time.sleep(15)
        kafka_start, kafka_end = run_kafka_tool(info, kafka_topic, targets, cap, work)
    report(info, spare, cap, moved, args.quota_window, journal, producer.latencies,
           (quiet, quiet + 10), (ours_start, ours_end), (kafka_start, kafka_end))
    admin = AdminClient({"bootstrap.servers": info.bootstrap})
    for future in admin.delete_topics([ours_topic, kafka_topic, probe]).values():
        future.result(60)  # a reused sandbox stays light for the next run


def report(info: SandboxInfo, target: int, cap: int, moved: int, window: float, journal: Path,
           latencies: Latencies, quiet: tuple[float, float], ours: tuple[float, float],
           kafka: tuple[float, float]) -> None:
    time.sleep(3)  # the last scrape
    series = counter_series(info, target, quiet[0], kafka[1] + 2)
    times = journal_times(journal)
    print(f"cap {cap / MB:.1f} MB/s, {len(times)} moves, {moved / MB:.1f} MB moved per tool")
    for name, t in times.items():
        mean, peak = rates(series, t["copying"], t["verifying"])
        print(f"  {name}: copy {t['verifying'] - t['copying']:.1f}s, mean {mean / cap:.2f} x cap"
              f", peak 5s {peak / cap:.2f} x cap; phases " + phases(t))
    first = min(t["throttling"] for t in times.values())
    first_copy = min(t["copying"] for t in times.values())
    last_copy = max(t["verifying"] for t in times.values())
    last = max(t["done"] for t in times.values())
    ideal = moved / cap
    span_mean, span_peak = rates(series, first_copy, last_copy)
    k_mean, k_peak = rates(series, kafka[0], kafka[1])
    model = _review_eta(journal, cap, window)
    measured = last_copy - ours[0]
    print(f"ours : from the first copy to the last {last_copy - first_copy:.1f}s: mean "
          f"{span_mean / cap:.2f} x cap into the target (target >= {TARGET_MEAN}: no idle "
          f"tail), peak 5s {span_peak / cap:.2f} x cap (target <= {TARGET_PEAK}); "
          f"first throttle to last move done {last - first:.1f}s = "
          f"{(last - first) / ideal:.2f} x bytes/cap ({ideal:.1f}s; target <= {TARGET_TOTAL}, "
          f"with the {window:.0f}s quota window a new process waits first); "
          f"command wall time {ours[1] - ours[0]:.1f}s; "
          f"producer p99 {latencies.p99_ms(*ours):.1f} ms")
    print(f"eta  : the review's model (executor.schedule, one at a time) {model:.1f}s against "
          f"{measured:.1f}s measured from the command's start to the last copy "
          f"({(model - measured) / measured:+.0%}; start-up and preflight included)")
    k_total = kafka[1] - kafka[0]
    print(f"kafka: --execute to --verify complete {k_total:.1f}s = {k_total / ideal:.2f} x "
          f"bytes/cap; mean {k_mean / cap:.2f} x cap, peak 5s {k_peak / cap:.2f} x cap; "
          f"producer p99 {latencies.p99_ms(*kafka):.1f} ms")
    print(f"idle : producer p99 {latencies.p99_ms(*quiet):.1f} ms; producer errors "
          f"{latencies.errors}; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")


def _review_eta(journal: Path, cap: int, window: float) -> float:
    """The review's ETA for the run's moves, at the cap, one at a time."""
    from executor.journal import read_journal
    from executor.schedule import expected_schedule

    return expected_schedule(read_journal(journal).plan.moves, cap, 1, window).eta_seconds


def main(argv: list[str] | None = None) -> int:
    args = parse(sys.argv[1:] if argv is None else argv)
    with tempfile.TemporaryDirectory(prefix="executor-bench-") as tmp:
        work = Path(tmp)
        if args.sandbox_dir is not None:
            bench(cluster.running(args.sandbox_dir), args, work)
            return 0
        sandbox_dir = work / "sandbox"
        base = cluster.free_base_port(27090, 8)
        try:
            info = cluster.up(sandbox_dir, brokers=4, racks=2, base_port=base).info
            bench(info, args, work)
        finally:
            cluster.down(sandbox_dir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
