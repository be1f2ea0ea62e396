"""Executor benchmark on shaped links: `python -m benchmarks.links_bench [--link-mbps N]`.

A sandbox of 6 brokers on 2 racks, each in a network namespace of its own behind a link shaped
to --link-mbps each way (`sandbox up --link-mbps`). One topic holds a partition led by each
broker (RF 2, the follower on the other rack); the rebalance moves every follower to the next
broker of its rack, so every broker sends one copy and receives one: the physical limit is one
copy at the cap. A producer (acks=all) writes a fixed share of each link to a client topic
spread over all brokers throughout, and records every send's latency.

Side by side in one run, each from the same layout (the plan, its reverse, the plan, the
reverse):
1. `rebalance execute --concurrency auto` (the SLO guard on, with its default thresholds),
2. `rebalance execute` one move at a time (the default),
3. `rebalance execute --concurrency auto --no-slo-guard`,
4. Kafka's ReassignPartitionsCommand `--throttle CAP` with every move at once.

Reported: total time / physical limit, the peak 5-second replication-in rate of any receiver /
cap, producer p99 and p99.9 during each run against idle, the review's ETA against the
measured time, and messages lost (acked but not read back).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from confluent_kafka import Consumer, KafkaError
from confluent_kafka import TopicPartition as KafkaPartition

from benchmarks.executor_bench import (
    MB,
    ROOT,
    LatencyProducer,
    counter_series,
    create_topic,
    journal_times,
    plan_file,
    rates,
    run_kafka_tool,
)
from kafka_rebalance.sandbox import cluster
from kafka_rebalance.sandbox.state import SandboxInfo

TARGET_TOTAL, TARGET_PEAK, TARGET_ETA = 1.25, 1.10, 0.15
REASSIGNMENT_IN = "kafka_broker_reassignment_bytes_in_total"
JOURNALS = {"ours auto": "auto.journal", "ours one at a time": "one.journal",
            "ours auto, no guard": "bare.journal"}


@dataclass(frozen=True)
class Args:
    link_mbps: int
    cap_mbps: float
    partition_mb: int
    client_share: float


def parse(argv: list[str]) -> Args:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else "")
    parser.add_argument("--link-mbps", type=int, default=32,
                        help="Each broker's link, Mbit/s each way (default 32: 4 MB/s)")
    parser.add_argument("--cap-mbps", type=float, default=2.0, help="--max-mbps, MB/s")
    parser.add_argument("--partition-mb", type=int, default=60,
                        help="MB per moved partition (60 MB: 30 s at 2 MB/s)")
    parser.add_argument("--client-share", type=float, default=0.10,
                        help="Client produce traffic into each broker, a share of its link")
    ns = parser.parse_args(argv)
    return Args(ns.link_mbps, ns.cap_mbps, ns.partition_mb, ns.client_share)


def rotation(info: SandboxInfo) -> tuple[list[list[int]], list[list[int]]]:
    """Per partition (one led by each broker): the replicas now, and after the move (the
    follower moves to the next broker of its rack: every broker receives exactly one copy)."""
    racks: dict[str, list[int]] = {}
    for broker in sorted(info.brokers, key=lambda x: x.id):
        racks.setdefault(broker.rack, []).append(broker.id)
    first, second = sorted(racks)[:2]
    now, after = [], []
    for leaders, followers in ((racks[first], racks[second]), (racks[second], racks[first])):
        for i, leader in enumerate(leaders):
            now.append([leader, followers[i % len(followers)]])
            after.append([leader, followers[(i + 1) % len(followers)]])
    return now, after


def run_ours(info: SandboxInfo, plan: Path, journal: Path, args: Args, concurrency: str,
             *extra: str) -> tuple[float, float]:
    command = [sys.executable, "-c", "import cli; cli.main()", "execute", str(plan),
               "--bootstrap", info.bootstrap, "--prometheus", info.prometheus_url,
               "--max-mbps", str(args.cap_mbps), "--journal", str(journal),
               "--concurrency", concurrency, "--allow-worse-balance", "--poll-seconds", "0.5",
               *extra]
    start = time.time()
    result = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, timeout=3600)
    if result.returncode != 0:
        raise SystemExit(f"rebalance execute failed:\n{result.stdout}\n{result.stderr}")
    (journal.parent / f"{journal.stem}.log").write_text(result.stdout + result.stderr)
    return start, time.time()


def read_back(info: SandboxInfo, topic: str) -> int:
    """Messages in `topic` (every partition from the start to its end)."""
    consumer = Consumer({"bootstrap.servers": info.bootstrap, "group.id": f"bench-{time.time()}",
                         "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    try:
        meta = consumer.list_topics(topic, timeout=30).topics[topic].partitions
        total = 0
        for p in meta:
            low, high = consumer.get_watermark_offsets(KafkaPartition(topic, p), timeout=30)
            total += high - low
        consumer.assign([KafkaPartition(topic, p, 0) for p in meta])
        seen, idle = 0, 0
        while seen < total and idle < 30:
            msg = consumer.poll(1.0)
            error = None if msg is None else msg.error()
            if msg is None:
                idle += 1
            elif error is None:
                seen += 1
            elif error.code() != KafkaError._PARTITION_EOF:
                raise SystemExit(f"reading {topic} back failed: {error}")
        return seen
    finally:
        consumer.close()


def peak_in(info: SandboxInfo, receivers: list[int], start: float, end: float) -> float:
    """The highest 5-second reassignment-in rate (the copies' bytes, not the client topic's
    replication) of any receiver over [start, end]."""
    return max(rates(counter_series(info, b, start, end, REASSIGNMENT_IN), start, end)[1]
               for b in receivers)


def review_eta(journal: Path, cap: int, concurrency: str) -> float:
    """The review's model (executor.schedule) for the run's moves at the cap."""
    from executor.config import parse_concurrency
    from executor.journal import read_journal
    from executor.schedule import expected_schedule

    run = read_journal(journal)
    return expected_schedule(run.plan.moves, cap, parse_concurrency(concurrency),
                             11.0).eta_seconds


def bench(info: SandboxInfo, args: Args, work: Path) -> None:
    cap = int(args.cap_mbps * MB)
    now, after = rotation(info)
    tag = str(int(time.time()))
    topic, client = f"bench-links-{tag}", f"bench-clients-{tag}"
    t0 = time.time()
    create_topic(info, topic, now, args.partition_mb * MB)
    loaded = time.time() - t0
    ids = sorted(b.id for b in info.brokers)
    clients = [[ids[i], ids[(i + 3) % len(ids)]] for i in range(len(ids))]
    create_topic(info, client, clients, 0)
    link = args.link_mbps * 1_000_000 / 8
    # each broker leads one client partition and follows another: in = 2 x its share
    value = 20_000  # few requests: on 2 cores the brokers' CPU, not the link, would be measured
    per_second = max(1, int(args.client_share * link * len(ids) / 2 / value))
    forward, backward = work / "forward.json", work / "backward.json"
    plan_file(info, forward, topic, after)
    limit = args.partition_mb * MB / cap
    print(f"{len(ids)} brokers, links {args.link_mbps} Mbit/s ({link / MB:.1f} MB/s) each way, "
          f"cap {args.cap_mbps:g} MB/s, {len(now)} moves of {args.partition_mb} MB (loaded in "
          f"{loaded:.0f}s); every broker sends one copy and receives one: physical limit "
          f"{limit:.0f}s; client traffic {per_second * value / MB:.2f} MB/s acks=all "
          f"({args.client_share:.0%} of each link in)")
    receivers = sorted({t[1] for t in after} | {t[1] for t in now})
    runs: dict[str, tuple[float, float]] = {}
    time.sleep(12)
    with LatencyProducer(info.bootstrap, client, per_second=per_second, value_bytes=value
                         ) as producer:
        time.sleep(20)
        idle = (time.time() - 15, time.time())
        runs["ours auto"] = run_ours(info, forward, work / "auto.journal", args, "auto")
        time.sleep(15)
        plan_file(info, backward, topic, now)
        runs["ours one at a time"] = run_ours(info, backward, work / "one.journal", args, "1")
        time.sleep(15)
        plan_file(info, forward, topic, after)
        runs["ours auto, no guard"] = run_ours(info, forward, work / "bare.journal", args,
                                               "auto", "--no-slo-guard")
        time.sleep(15)
        runs["kafka --throttle"] = run_kafka_tool(info, topic, now, cap, work)
        time.sleep(5)
    time.sleep(3)  # the last scrape
    lat = producer.latencies
    acked = len(lat.samples)
    print(f"idle : producer p99 {lat.quantile_ms(0.99, *idle):.1f} ms, p99.9 "
          f"{lat.quantile_ms(0.999, *idle):.1f} ms")
    for name, (start, end) in runs.items():
        took = end - start
        line = (f"{name:19}: {took:6.1f}s = {took / limit:.2f} x the limit; peak 5s in "
                f"{peak_in(info, receivers, start, end) / cap:.2f} x cap; producer p99 "
                f"{lat.quantile_ms(0.99, start, end):.1f} ms, p99.9 "
                f"{lat.quantile_ms(0.999, start, end):.1f} ms")
        if name.startswith("ours"):
            journal = work / JOURNALS[name]
            times = journal_times(journal)
            last = max(t["done"] for t in times.values())
            model = review_eta(journal, cap, "1" if "one" in name else "auto")
            measured = last - start
            line += (f"; review ETA {model:.0f}s vs {measured:.0f}s from the command's start "
                     f"to the last move done ({(model - measured) / measured:+.0%})")
        print(line)
    read = read_back(info, client)
    print(f"messages: {acked} acked, {read} read back, {max(0, acked - read)} lost; producer "
          f"errors {lat.errors}; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} "
          f"cores")
    print(f"targets: auto <= {TARGET_TOTAL} x the limit, peak <= {TARGET_PEAK} x cap, ETA "
          f"within {TARGET_ETA:.0%}, 0 lost")


@contextmanager
def shaped_sandbox(prefix: str, link_mbps: int) -> Iterator[tuple[SandboxInfo, Path]]:
    """Six brokers on two racks behind links shaped to `link_mbps`, and a work directory;
    both gone afterwards."""
    with tempfile.TemporaryDirectory(prefix=prefix) as tmp:
        work = Path(tmp)
        sandbox_dir = work / "sandbox"
        base = cluster.free_base_port(26090, 10)
        try:
            yield cluster.up(sandbox_dir, brokers=6, racks=2, base_port=base,
                             link_mbps=link_mbps).info, work
        finally:
            cluster.down(sandbox_dir)


def main(argv: list[str] | None = None) -> int:
    args = parse(sys.argv[1:] if argv is None else argv)
    with shaped_sandbox("links-bench-", args.link_mbps) as (info, work):
        bench(info, args, work)
        for log in sorted(work.glob("*.log")):
            lines = log.read_text().splitlines()
            said = [line for line in lines if "SLO guard" in line or "waits up to" in line]
            print(f"--- {log.name}: the guard's and the quota window's lines, then the end")
            print("\n".join(said[:40] + lines[-14:]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
