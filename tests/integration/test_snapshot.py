"""`rebalance snapshot` against the real sandbox: replicas, racks, sizes and rates as reported.

Sizes are checked against the brokers' own log files on disk, rates against Prometheus; the
CLI runs in a subprocess exactly as a user runs it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
import requests
from confluent_kafka import Consumer

from kafka_rebalance.core.errors import ClusterError
from kafka_rebalance.sandbox.state import SandboxInfo
from tests.integration.kafka_topics import (
    create_topic,
    disk_size,
    free_port,
    produce,
    wait_for,
    wait_in_sync,
)
from topology import promql
from topology.prom_source import PrometheusMetrics
from topology.security import ENV_KEYS

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]


def run_cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "cli", *args], cwd=REPO, capture_output=True,
                          text=True, timeout=180, env=env)


def topic_partitions(doc: dict[str, Any], topic: str) -> dict[int, dict[str, Any]]:
    return {p["partition"]: p for p in doc["partitions"] if p["topic"] == topic}


def test_snapshot_matches_what_the_brokers_report(sandbox: SandboxInfo, tmp_path: Path) -> None:
    ids = sorted(b.id for b in sandbox.brokers)[:4]
    topic = f"snap-{uuid.uuid4().hex[:8]}"
    assignment = [[ids[0], ids[1]], [ids[1], ids[2]], [ids[2], ids[3]], [ids[3], ids[0]]]
    create_topic(sandbox.bootstrap, topic, assignment)
    produce(sandbox.bootstrap, topic, {0: 3000, 1: 1200, 2: 300})
    wait_in_sync(sandbox.bootstrap, topic, 4)

    out = tmp_path / "snapshot.json"
    result = run_cli("snapshot", "--bootstrap", sandbox.bootstrap, "--out", str(out))
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"wrote {out}")
    doc = json.loads(out.read_text())

    racks = {b["id"]: b["rack"] for b in doc["brokers"]}
    for broker in sandbox.brokers:
        assert racks[broker.id] == broker.rack
    assert all("capacity" not in b and b.get("alive", True) for b in doc["brokers"])
    parts = topic_partitions(doc, topic)
    assert sorted(parts) == [0, 1, 2, 3]
    for index, replicas in enumerate(assignment):
        assert parts[index]["replicas"] == replicas
        on_disk = [disk_size(sandbox, b, topic, index) for b in replicas]
        assert parts[index]["size_bytes"] == max(on_disk)
    assert parts[0]["size_bytes"] > parts[1]["size_bytes"] > parts[2]["size_bytes"] > 0
    assert parts[3]["size_bytes"] == 0
    assert any("no Prometheus" in note for note in doc["notes"])

    caps = tmp_path / "caps.yaml"
    caps.write_text("default: {disk_bytes: 100GB, net_in_bytes_per_sec: 100MB/s, "
                    "net_out_bytes_per_sec: 100MB/s}\n")
    shown = run_cli("show", str(out), "--capacities", str(caps))
    assert shown.returncode == 0, shown.stderr

    with_caps = tmp_path / "with-caps.json"
    result = run_cli("snapshot", "--bootstrap", sandbox.bootstrap, "--capacities", str(caps),
                     "--out", str(with_caps))
    assert result.returncode == 0, result.stderr
    capacities = [b["capacity"] for b in json.loads(with_caps.read_text())["brokers"]]
    assert capacities and all(c == {"disk_bytes": 100 * 10**9,
                                    "net_in_bytes_per_sec": 100 * 10**6,
                                    "net_out_bytes_per_sec": 100 * 10**6} for c in capacities)
    assert run_cli("show", str(with_caps)).returncode == 0


def _prometheus_rate(sandbox: SandboxInfo, metric: str, topic: str, fn: str = "rate") -> float:
    query = f'sum({fn}({metric}{{topic="{topic}"}}[1m]))'
    answer = requests.get(f"{sandbox.prometheus_url}/api/v1/query", params={"query": query},
                          timeout=10).json()
    result = answer["data"]["result"]
    return float(result[0]["value"][1]) if result else 0.0


def _wait_for_rate(sandbox: SandboxInfo, metric: str, topic: str, timeout_s: float = 60,
                   fn: str = "rate") -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if _prometheus_rate(sandbox, metric, topic, fn) > 0:
            return
        time.sleep(1)
    raise AssertionError(f"Prometheus shows no {metric} rate for {topic} after {timeout_s} s")


def _consume(consumer: Consumer, expected: int) -> None:
    seen, deadline = 0, time.monotonic() + 60
    while seen < expected and time.monotonic() < deadline:
        batch = consumer.consume(500, timeout=1)
        seen += sum(1 for m in batch if m.error() is None)
    assert seen >= expected, f"consumed {seen} of {expected} records"
    consumer.commit(asynchronous=False)


def test_snapshot_with_prometheus_has_split_rates(sandbox: SandboxInfo, tmp_path: Path) -> None:
    ids = sorted(b.id for b in sandbox.brokers)[:4]
    topic = f"rate-{uuid.uuid4().hex[:8]}"
    create_topic(sandbox.bootstrap, topic, [[ids[0], ids[1]], [ids[2], ids[3]]])
    consumer = Consumer({"bootstrap.servers": sandbox.bootstrap, "group.id": f"g-{topic}",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    try:
        consumer.subscribe([topic])
        # Two bursts: the per-topic series appear with the first, rise with the second.
        produce(sandbox.bootstrap, topic, {0: 300, 1: 100})
        _consume(consumer, 400)
        for metric in ("kafka_topic_bytes_in_total", "kafka_topic_bytes_out_total"):
            _wait_for_rate(sandbox, metric, topic, fn="max_over_time")  # series scraped
        produce(sandbox.bootstrap, topic, {0: 900, 1: 300})
        _consume(consumer, 1200)
    finally:
        consumer.close()
    _wait_for_rate(sandbox, "kafka_topic_bytes_in_total", topic)
    _wait_for_rate(sandbox, "kafka_topic_bytes_out_total", topic)

    out = tmp_path / "rates.json"
    result = run_cli("snapshot", "--bootstrap", sandbox.bootstrap, "--prometheus",
                     sandbox.prometheus_url, "--out", str(out))
    assert result.returncode == 0, result.stderr
    doc = json.loads(out.read_text())
    parts = topic_partitions(doc, topic)
    assert all(p["bytes_in_per_sec"] > 0 and p["bytes_out_per_sec"] > 0 for p in parts.values())
    size_ratio = parts[0]["size_bytes"] / parts[1]["size_bytes"]
    assert parts[0]["bytes_in_per_sec"] / parts[1]["bytes_in_per_sec"] == pytest.approx(
        size_ratio)
    assert any("in proportion to partition size" in note for note in doc["notes"])
    assert doc["source"]["prometheus"] == sandbox.prometheus_url
    offsets = [p for p in doc["partitions"] if p["topic"] == "__consumer_offsets"]
    assert offsets and all(p["internal"] is True for p in offsets)


def test_unreachable_bootstrap_is_a_one_line_cluster_error(tmp_path: Path) -> None:
    address = f"127.0.0.1:{free_port()}"
    started = time.monotonic()
    result = run_cli("snapshot", "--bootstrap", address, "--timeout", "3",
                     "--out", str(tmp_path / "never.json"))
    assert time.monotonic() - started < 60
    assert result.returncode == ClusterError.exit_code
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(f"error: cannot reach Kafka at {address}")
    assert not (tmp_path / "never.json").exists()


def test_secrets_stay_out_of_output_when_the_handshake_fails(
    sandbox: SandboxInfo, tmp_path: Path
) -> None:
    password = "never-print-" + uuid.uuid4().hex
    env = {**_base_env(), "REBALANCE_SECURITY_PROTOCOL": "SASL_PLAINTEXT",
           "REBALANCE_SASL_MECHANISM": "SCRAM-SHA-256", "REBALANCE_SASL_USERNAME": "admin",
           "REBALANCE_SASL_PASSWORD": password}
    result = run_cli("snapshot", "--bootstrap", sandbox.bootstrap, "--timeout", "3",
                     "--out", str(tmp_path / "s.json"), env=env)
    assert result.returncode == ClusterError.exit_code
    assert password not in result.stdout + result.stderr
    assert "Traceback" not in result.stderr


def _base_env() -> dict[str, str]:
    """The environment without any REBALANCE_* security variables of the caller."""
    return {k: v for k, v in os.environ.items() if k not in ENV_KEYS}


# Series another exporter provides (kafka_exporter's consumer lag), or brokers report only with
# tiered storage (the session sandbox has none; test_tiered_storage has): the query is valid on
# the sandbox's Prometheus and finds nothing, which the SLO guard reads as "not guarded on" and
# the snapshot as "nothing in remote storage".
NOT_ON_SANDBOX = {"consumer_lag", "topic_remote_log_size_bytes"}


@pytest.mark.parametrize("name", sorted(promql.TEMPLATES))
def test_default_promql_templates_answer_per_broker_or_topic(sandbox: SandboxInfo,
                                                             name: str) -> None:
    """Each default query returns finite samples from the sandbox's real Prometheus."""
    metrics = PrometheusMetrics(sandbox.prometheus_url)
    first = sorted(b.id for b in sandbox.brokers)[0]
    for selector in ("", f'broker_id="{first}"'):
        samples = metrics.query(promql.render(promql.TEMPLATES[name], "1m", selector))
        if name in NOT_ON_SANDBOX:
            assert samples == [], (name, samples)  # answered (no MetricsError), no series
            continue
        assert samples, f"{name} returned no series (selector {selector!r})"
        if name.startswith(("broker_", "under_", "produce_", "fetch_", "log_flush")):
            brokers = {labels["broker_id"] for labels, _ in samples}
            assert brokers == {str(first)} if selector else str(first) in brokers


def test_a_partition_being_reassigned_is_recorded_at_its_target(sandbox: SandboxInfo,
                                                                 tmp_path: Path) -> None:
    """A copy held in flight by a 1 kB/s throttle: Kafka lists RF 3 for an RF 2 partition
    (old and new replicas together); the snapshot records the replicas it is moving to."""
    from topology.kafka_admin import KafkaClusterAdmin
    from topology.model import TopicPartition

    ids = sorted(b.id for b in sandbox.brokers)[:3]
    topic = f"snap-moving-{uuid.uuid4().hex[:8]}"
    create_topic(sandbox.bootstrap, topic, [[ids[0], ids[1]]])
    produce(sandbox.bootstrap, topic, {0: 2000})
    wait_in_sync(sandbox.bootstrap, topic, 1)
    tp = TopicPartition(topic, 0)
    admin = KafkaClusterAdmin(sandbox.bootstrap, timeout_s=10)
    rate = "follower.replication.throttled.rate"
    admin.alter_broker_configs({ids[2]: {rate: "1000"}})
    admin.alter_topic_configs({topic: {"follower.replication.throttled.replicas":
                                       f"0:{ids[2]}"}})
    try:
        admin.alter_partition_reassignments({tp: [ids[0], ids[2]]})
        assert tp in admin.list_partition_reassignments()
        # what Kafka lists meanwhile, once the answering broker's metadata has the change
        wait_for("the partition listed with its old and new replicas",
                 lambda: len(admin.partitions([topic])[0].replicas) == 3, timeout_s=30)
        out = tmp_path / "snapshot.json"
        result = run_cli("snapshot", "--bootstrap", sandbox.bootstrap, "--out", str(out))
        assert result.returncode == 0, result.stderr
        doc = json.loads(out.read_text())
        assert topic_partitions(doc, topic)[0]["replicas"] == [ids[0], ids[2]]
        assert topic_partitions(doc, topic)[0]["size_bytes"] >= 2000 * 1000
        assert any("being reassigned" in n and topic in n for n in doc["notes"])
    finally:
        admin.alter_partition_reassignments({tp: None})
        deadline = time.monotonic() + 60
        while tp in admin.list_partition_reassignments() and time.monotonic() < deadline:
            time.sleep(0.5)
        admin.alter_broker_configs({ids[2]: {rate: None}})
        admin.alter_topic_configs({topic: {"follower.replication.throttled.replicas": None}})
        admin.close()
