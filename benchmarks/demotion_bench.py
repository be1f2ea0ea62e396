"""Demotion benchmark on a sandbox: `python -m benchmarks.demotion_bench [--sandbox-dir DIR]`.

A topic of `--partitions` partitions (RF 2, every leader on one rack-a broker, the follower on
a rack-b broker) is demoted off its leader with `rebalance plan --demote-broker` and
`rebalance execute`, then demoted back the same way with Kafka's own tools (the replica order
through ReassignPartitionsCommand, then LeaderElectionCommand's preferred election), in the
same run. Reported: each tool's wall time, the time per leadership move, the leaders the
brokers report at the end, and the executor's output lines per move.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from confluent_kafka.admin import AdminClient

from benchmarks.executor_bench import create_topic
from kafka_rebalance.sandbox import cluster
from kafka_rebalance.sandbox.state import SandboxInfo

ROOT = Path(__file__).resolve().parents[1]
REASSIGN = "org.apache.kafka.tools.reassign.ReassignPartitionsCommand"
ELECT = "org.apache.kafka.tools.LeaderElectionCommand"
CAPACITIES = ROOT / "examples" / "sandbox-capacities.yaml"


def rebalance(*args: str) -> subprocess.CompletedProcess[str]:
    result = subprocess.run([sys.executable, "-c", "import cli; cli.main()", *args], cwd=ROOT,
                            capture_output=True, text=True, timeout=3600)
    if result.returncode != 0:
        raise SystemExit(f"rebalance {args[0]} failed:\n{result.stdout}\n{result.stderr}")
    return result


def leaders(info: SandboxInfo, topic: str) -> dict[int, int]:
    """How many partitions of `topic` each broker leads, as the brokers report it."""
    from topology.kafka_admin import KafkaClusterAdmin

    admin = KafkaClusterAdmin(info.bootstrap)
    try:
        counts: dict[int, int] = {}
        for p in admin.partitions([topic]):
            if p.leader is not None and p.leader >= 0:
                counts[p.leader] = counts.get(p.leader, 0) + 1
        return counts
    finally:
        admin.close()


def run_ours(info: SandboxInfo, topic: str, demoted: int, work: Path) -> tuple[float, int]:
    """Snapshot (this topic only), plan the demotion, execute it: (seconds, output lines)."""
    snap, plan = work / "snap.json", work / "demote.json"
    rebalance("snapshot", "--bootstrap", info.bootstrap, "--out", str(snap))
    doc = json.loads(snap.read_text())
    doc["partitions"] = [p for p in doc["partitions"] if p["topic"] == topic]
    snap.write_text(json.dumps(doc))
    rebalance("plan", "--snapshot", str(snap), "--capacities", str(CAPACITIES),
              "--demote-broker", str(demoted), "--out", str(plan))
    start = time.time()
    result = rebalance("execute", str(plan), "--bootstrap", info.bootstrap, "--prometheus",
                       info.prometheus_url, "--max-mbps", "10", "--journal",
                       str(work / "demote.journal"))
    return time.time() - start, len((result.stdout + result.stderr).splitlines())


def run_kafka(info: SandboxInfo, topic: str, order: list[int], partitions: int,
              work: Path) -> float:
    """Kafka's tools: every partition's replicas reordered to `order` at once, `--verify`
    polled until done, then one preferred election of them all: seconds."""
    spec = work / "kafka-order.json"
    spec.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": topic, "partition": n, "replicas": order} for n in range(partitions)]}))
    elect = work / "kafka-elect.json"
    elect.write_text(json.dumps({"partitions": [
        {"topic": topic, "partition": n} for n in range(partitions)]}))
    java = ["java", "-cp", f"{info.jar_dir}/*"]
    base = [*java, REASSIGN, "--bootstrap-server", info.bootstrap, "--reassignment-json-file",
            str(spec)]
    start = time.time()
    subprocess.run([*base, "--execute"], check=True, capture_output=True, timeout=600)
    while "still in progress" in subprocess.run([*base, "--verify"], capture_output=True,
                                                text=True, timeout=600).stdout:
        time.sleep(1)
    subprocess.run([*java, ELECT, "--bootstrap-server", info.bootstrap, "--election-type",
                    "PREFERRED", "--path-to-json-file", str(elect)], check=True,
                   capture_output=True, timeout=600)
    return time.time() - start


def bench(info: SandboxInfo, partitions: int, work: Path) -> None:
    a = sorted(b.id for b in info.brokers if b.rack == "a")
    b = sorted(b.id for b in info.brokers if b.rack == "b")
    first, second = a[0], b[0]
    topic = f"bench-demote-{int(time.time())}"
    create_topic(info, topic, [[first, second]] * partitions, 0)
    time.sleep(5)
    ours, lines = run_ours(info, topic, first, work)
    after_ours = leaders(info, topic)
    kafka = run_kafka(info, topic, [first, second], partitions, work)
    after_kafka = leaders(info, topic)
    print(f"{partitions} partitions, RF 2, every leader on broker {first}")
    print(f"ours : demote broker {first}: {ours:.1f} s ({ours / partitions * 1000:.0f} ms per "
          f"move, start-up included); leaders after {after_ours}; {lines} output lines")
    print(f"kafka: reorder + preferred election back to broker {first}: {kafka:.1f} s "
          f"({kafka / partitions * 1000:.0f} ms per partition, JVM start-ups included); "
          f"leaders after {after_kafka}")
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    admin = AdminClient({"bootstrap.servers": info.bootstrap})
    for future in admin.delete_topics([topic]).values():
        future.result(60)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else "")
    parser.add_argument("--sandbox-dir", type=Path, default=None,
                        help="A running sandbox (default: start one in a temp dir, then stop it)")
    parser.add_argument("--partitions", type=int, default=300)
    ns = parser.parse_args(sys.argv[1:] if argv is None else argv)
    with tempfile.TemporaryDirectory(prefix="demotion-bench-") as tmp:
        work = Path(tmp)
        if ns.sandbox_dir is not None:
            bench(cluster.running(ns.sandbox_dir), ns.partitions, work)
            return 0
        sandbox_dir = work / "sandbox"
        base = cluster.free_base_port(27090, 8)
        try:
            bench(cluster.up(sandbox_dir, brokers=4, racks=2, base_port=base).info,
                  ns.partitions, work)
        finally:
            cluster.down(sandbox_dir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
