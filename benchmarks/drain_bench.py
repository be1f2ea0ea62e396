"""Draining a dead broker on shaped links: `python -m benchmarks.drain_bench [--link-mbps N]`.

A sandbox of 6 brokers on 2 racks, each behind a link shaped to --link-mbps each way. One
topic holds a partition led by each broker of the other rack with its follower on broker D
(the last broker of D's rack); a client topic (RF 2, one partition led by each broker, some
with a replica on D) takes acks=all produce traffic throughout. The drain plan (the follower
of every bench partition moves off D to the other brokers of its rack) is made while D is
alive; then D is killed for good (kill -9), and `rebalance execute --concurrency auto` runs the
plan with D dead: the client topic's partitions on D stay under-replicated outside the run.

Reported: total time against the physical limit (the receivers of D's rack each take their
share of the copies at the cap), the peak 5-second reassignment-in rate of any receiver
against the cap, producer p99 during the drain against before D died, and messages lost
(acked but not read back).
"""

from __future__ import annotations

import argparse
import math
import os
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.executor_bench import MB, ROOT, LatencyProducer, create_topic, plan_file
from benchmarks.links_bench import peak_in, read_back, shaped_sandbox
from kafka_rebalance.sandbox import cluster
from kafka_rebalance.sandbox.state import SandboxInfo


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else "")
    parser.add_argument("--link-mbps", type=int, default=32,
                        help="Each broker's link, Mbit/s each way (default 32: 4 MB/s)")
    parser.add_argument("--cap-mbps", type=float, default=2.0, help="--max-mbps, MB/s")
    parser.add_argument("--partition-mb", type=int, default=30,
                        help="MB per drained partition (30 MB: 15 s at 2 MB/s)")
    return parser.parse_args(argv)


def layout(info: SandboxInfo) -> tuple[int, list[list[int]], list[list[int]]]:
    """The broker to drain, and per bench partition its replicas now and after the drain."""
    racks: dict[str, list[int]] = {}
    for broker in sorted(info.brokers, key=lambda x: x.id):
        racks.setdefault(broker.rack, []).append(broker.id)
    first, second = sorted(racks)[:2]
    dead = racks[second][-1]
    keep = [b for b in racks[second] if b != dead]
    now = [[leader, dead] for leader in racks[first]]
    after = [[leader, keep[i % len(keep)]] for i, leader in enumerate(racks[first])]
    return dead, now, after


def run_drain(info: SandboxInfo, plan: Path, journal: Path, cap_mbps: float
              ) -> tuple[float, float, str]:
    command = [sys.executable, "-c", "import cli; cli.main()", "execute", str(plan),
               "--bootstrap", info.bootstrap, "--prometheus", info.prometheus_url,
               "--max-mbps", str(cap_mbps), "--journal", str(journal),
               "--concurrency", "auto", "--poll-seconds", "0.5"]
    start = time.time()
    result = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, timeout=3600)
    output = result.stdout + result.stderr
    if result.returncode != 0:
        raise SystemExit(f"rebalance execute failed (exit {result.returncode}):\n{output}")
    return start, time.time(), output


def wait_out_of_isr(info: SandboxInfo, dead: int, topic: str, timeout_s: float = 90) -> float:
    """Seconds until the controller has D out of every ISR of `topic`."""
    from topology.kafka_admin import KafkaClusterAdmin

    admin = KafkaClusterAdmin(info.bootstrap)
    start = time.time()
    try:
        while any(dead in p.isr for p in admin.partitions([topic])):
            if time.time() - start > timeout_s:
                raise SystemExit(f"broker {dead} still in the ISR after {timeout_s:.0f} s")
            time.sleep(1)
    finally:
        admin.close()
    return time.time() - start


def bench(info: SandboxInfo, args: argparse.Namespace, work: Path) -> None:
    cap = int(args.cap_mbps * MB)
    dead, now, after = layout(info)
    tag = str(int(time.time()))
    topic, client = f"bench-drain-{tag}", f"bench-drain-clients-{tag}"
    create_topic(info, topic, now, args.partition_mb * MB)
    ids = sorted(b.id for b in info.brokers)
    create_topic(info, client, [[ids[i], ids[(i + 3) % len(ids)]] for i in range(len(ids))], 0)
    plan = work / "drain.json"
    plan_file(info, plan, topic, after)  # made while D is alive: it dies before the run
    receivers = sorted({r[1] for r in after})
    copies_each = math.ceil(len(after) / len(receivers))
    limit = copies_each * args.partition_mb * MB / cap
    print(f"{len(ids)} brokers, links {args.link_mbps} Mbit/s each way, cap {args.cap_mbps:g} "
          f"MB/s; drain broker {dead}: {len(after)} partitions of {args.partition_mb} MB onto "
          f"{receivers} ({copies_each} copies each at most): physical limit {limit:.0f}s")
    time.sleep(12)
    with LatencyProducer(info.bootstrap, client, per_second=20, value_bytes=20_000) as producer:
        time.sleep(15)
        healthy = (time.time() - 12, time.time())
        cluster.kill_broker(info.dir, dead)
        fenced = wait_out_of_isr(info, dead, topic)
        start, end, output = run_drain(info, plan, work / "drain.journal", args.cap_mbps)
        time.sleep(5)
    time.sleep(3)  # the last scrape
    lat = producer.latencies
    took = end - start
    print(f"broker {dead} out of the ISR {fenced:.0f}s after kill -9")
    during, before = lat.quantile_ms(0.99, start, end), lat.quantile_ms(0.99, *healthy)
    print(f"drain: {took:.1f}s = {took / limit:.2f} x the limit; peak 5s in "
          f"{peak_in(info, receivers, start, end) / cap:.2f} x cap; producer p99 "
          f"{during:.1f} ms (healthy {before:.1f} ms)")
    told = [line for line in output.splitlines() if "under-replicated" in line]
    print("told: " + (told[0] if told else "(nothing about under-replicated partitions)"))
    acked = len(lat.samples)
    read = read_back(info, client)
    print(f"messages: {acked} acked, {read} read back, {max(0, acked - read)} lost; producer "
          f"errors {lat.errors}; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} "
          "cores")
    print("\n".join(output.splitlines()[-12:]))


def main(argv: list[str] | None = None) -> int:
    args = parse(sys.argv[1:] if argv is None else argv)
    with shaped_sandbox("drain-bench-", args.link_mbps) as (info, work):
        bench(info, args, work)
    return 0


if __name__ == "__main__":
    sys.exit(main())
