"""The real sandbox: brokers on racks, Prometheus with the contract series, lifecycle commands."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from kafka_rebalance.sandbox import classdata, cluster, process
from kafka_rebalance.sandbox.process import port_in_use
from kafka_rebalance.sandbox.state import SandboxInfo
from tests.integration.kafka_topics import create_topics
from tests.integration.prometheus_query import prom_query

pytestmark = pytest.mark.integration

REBALANCE = str(Path(sys.executable).parent / "rebalance")
PROBE_TOPIC = "sandbox-probe"
PROBE_MESSAGES = 400
PROBE_VALUE = b"x" * 1000


def admin(bootstrap: str) -> AdminClient:
    return AdminClient({"bootstrap.servers": bootstrap})


def racks_in_metadata(bootstrap: str) -> dict[int, str | None]:
    client = admin(bootstrap)  # keep the client alive until its future resolves
    description = client.describe_cluster(request_timeout=10).result(timeout=15)
    return {int(node.id): node.rack for node in description.nodes}


def eventually(check: Callable[[], bool], timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        if time.monotonic() > deadline:
            pytest.fail(f"not true after {timeout_s}s: {what}")
        time.sleep(0.5)


def run_cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([REBALANCE, *args], capture_output=True, text=True, timeout=240,
                          env=env, check=False)


# --- the shared session sandbox --------------------------------------------------------------


def test_brokers_registered_with_their_racks(sandbox: SandboxInfo) -> None:
    seen = racks_in_metadata(sandbox.bootstrap)
    for broker in sandbox.brokers:
        assert seen.get(broker.id) == broker.rack
    assert {b.rack for b in sandbox.brokers} == {"a", "b"}
    assert len(sandbox.brokers) == 4


def test_prometheus_scrapes_every_broker_with_labels(sandbox: SandboxInfo) -> None:
    up = prom_query(sandbox.prometheus_url, 'up{job="kafka"}')
    by_broker = {r["metric"]["broker_id"]: r for r in up}
    for broker in sandbox.brokers:
        series = by_broker[str(broker.id)]
        assert series["metric"]["rack"] == broker.rack
        assert series["value"][1] == "1"


@pytest.fixture(scope="module")
def probe_traffic(sandbox: SandboxInfo) -> int:
    """Create a replicated topic, produce and consume a little data; return bytes produced."""
    create_topics(sandbox.bootstrap,
                  [NewTopic(PROBE_TOPIC, num_partitions=2, replication_factor=3)])
    producer = Producer({"bootstrap.servers": sandbox.bootstrap, "acks": "all"})
    for i in range(PROBE_MESSAGES):
        producer.produce(PROBE_TOPIC, value=PROBE_VALUE, key=str(i).encode())
    assert producer.flush(30) == 0
    consumer = Consumer({"bootstrap.servers": sandbox.bootstrap, "group.id": "sandbox-probe",
                         "auto.offset.reset": "earliest"})
    consumer.subscribe([PROBE_TOPIC])
    received = 0
    deadline = time.monotonic() + 60
    while received < PROBE_MESSAGES and time.monotonic() < deadline:
        message = consumer.poll(1.0)
        if message is not None and message.error() is None:
            received += 1
    consumer.close()
    assert received == PROBE_MESSAGES
    return PROBE_MESSAGES * len(PROBE_VALUE)


BROKER_SERIES = [
    "kafka_broker_bytes_in_total", "kafka_broker_bytes_out_total",
    "kafka_broker_replication_bytes_in_total", "kafka_broker_replication_bytes_out_total",
    "kafka_broker_reassignment_bytes_in_total", "kafka_broker_reassignment_bytes_out_total",
    "kafka_under_replicated_partitions",
]


@pytest.mark.parametrize("name", BROKER_SERIES)
def test_broker_series_exist_for_every_broker(
    sandbox: SandboxInfo, probe_traffic: int, name: str
) -> None:
    wanted = {str(b.id) for b in sandbox.brokers}

    def present() -> bool:
        series = prom_query(sandbox.prometheus_url, name)
        return wanted <= {s["metric"].get("broker_id") for s in series if "rack" in s["metric"]}

    eventually(present, 30, f"{name} for brokers {sorted(wanted)}")


def test_topic_series_count_the_probe_traffic(sandbox: SandboxInfo, probe_traffic: int) -> None:
    url = sandbox.prometheus_url

    def total(promql: str) -> float:
        return sum(float(s["value"][1]) for s in prom_query(url, promql))

    topic = f'topic="{PROBE_TOPIC}"'
    eventually(lambda: total(f"kafka_topic_bytes_in_total{{{topic}}}") >= probe_traffic, 30,
               "per-topic bytes in cover what was produced")
    eventually(lambda: total(f"kafka_topic_bytes_out_total{{{topic}}}") >= probe_traffic, 30,
               "per-topic bytes out cover what was consumed")
    eventually(lambda: total("kafka_broker_replication_bytes_in_total") >= 2 * probe_traffic,
               30, "followers replicated the data (RF 3)")
    # Every replica's log holds the data: 3 replicas x 2 partitions, labelled per partition.
    eventually(lambda: len(prom_query(url, f"kafka_log_size_bytes{{{topic}}}")) == 6, 30,
               "one kafka_log_size_bytes series per replica")
    eventually(lambda: total(f"kafka_log_size_bytes{{{topic}}}") >= 3 * probe_traffic, 30,
               "log sizes sum to at least RF x bytes produced")
    partitions = {s["metric"]["partition"]
                  for s in prom_query(url, f"kafka_log_size_bytes{{{topic}}}")}
    assert partitions == {"0", "1"}
    assert prom_query(url, 'kafka_log_size_bytes{topic="__cluster_metadata"}') == []


def test_request_latency_percentiles_exist(sandbox: SandboxInfo, probe_traffic: int) -> None:
    def requests_seen() -> set[str]:
        series = prom_query(sandbox.prometheus_url,
                            'kafka_request_total_time_ms{quantile="0.99"}')
        return {s["metric"]["request"] for s in series}

    eventually(lambda: requests_seen() == {"Produce", "FetchConsumer", "FetchFollower"}, 30,
               "p99 latency of Produce, FetchConsumer and FetchFollower")


# --- lifecycle on a small sandbox of its own ------------------------------------------------


def _sandbox_pids(sandbox_dir: Path) -> list[int]:
    return cluster._stray_pids(sandbox_dir)


@pytest.fixture(scope="module")
def small_sandbox(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Dir of a 2-broker sandbox that the lifecycle tests start, grow and stop themselves."""
    sandbox_dir = tmp_path_factory.mktemp("small-sandbox")
    yield sandbox_dir
    cluster.down(sandbox_dir)


def test_lifecycle_up_idempotent_add_broker_down(small_sandbox: Path) -> None:
    base = cluster.free_base_port(27090, 6)
    first = run_cli("sandbox", "up", "--brokers", "2", "--racks", "2", "--base-port", str(base),
                    "--dir", str(small_sandbox), "--json")
    assert first.returncode == 0, first.stderr
    started = json.loads(first.stdout)
    assert started["already_running"] is False
    assert started["bootstrap"] == f"127.0.0.1:{base + 2},127.0.0.1:{base + 3}"
    assert started["prometheus_url"] == f"http://127.0.0.1:{base}"

    again = json.loads(run_cli("sandbox", "up", "--dir", str(small_sandbox), "--json").stdout)
    assert again["already_running"] is True
    assert again["brokers"] == started["brokers"]

    added = cluster.add_broker(small_sandbox, "a")
    assert added.id == 3
    assert racks_in_metadata(started["bootstrap"]) == {1: "a", 2: "b", 3: "a"}
    topics = admin(started["bootstrap"]).list_topics(timeout=10).topics
    replicas = {r for t in topics.values() for p in t.partitions.values() for r in p.replicas}
    assert 3 not in replicas

    def new_target_up() -> bool:
        up = prom_query(started["prometheus_url"], 'up{broker_id="3"}')
        return [(s["metric"]["rack"], s["value"][1]) for s in up] == [("a", "1")]

    eventually(new_target_up, 30, "Prometheus scrapes broker 3 with rack a")

    pids = _sandbox_pids(small_sandbox)
    assert len(pids) == 5  # controller, 3 brokers, Prometheus
    # every Kafka JVM maps its classes from the class-data archive the first `up` made
    archive = classdata.present(cluster.running(small_sandbox).jar_dir).server
    assert archive is not None
    jvms = [pid for pid in pids if b"kafka.Kafka" in Path(f"/proc/{pid}/cmdline").read_bytes()]
    assert len(jvms) == 4
    for pid in jvms:
        assert str(archive) in Path(f"/proc/{pid}/maps").read_text(), pid
    stopped = run_cli("sandbox", "down", "--dir", str(small_sandbox))
    assert stopped.returncode == 0, stopped.stderr
    assert _sandbox_pids(small_sandbox) == []
    assert not any(process.is_ours(pid, f"{small_sandbox.resolve()}/") for pid in pids)
    assert not any(port_in_use(p) for p in (base, base + 1, base + 2, base + 3, base + 4))
    status = run_cli("sandbox", "status", "--dir", str(small_sandbox))
    assert status.returncode != 0


def _one_line_error(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 7, (result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.stderr
    return lines[0]


def test_taken_port_fails_clearly(tmp_path: Path) -> None:
    base = cluster.free_base_port(25090, 4)
    with socket.socket() as blocker:
        blocker.bind(("127.0.0.1", base + 3))  # broker 2's port
        blocker.listen()
        result = run_cli("sandbox", "up", "--base-port", str(base), "--dir", str(tmp_path))
    message = _one_line_error(result)
    assert f"port {base + 3} (broker 2) is already in use" in message
    assert _sandbox_pids(tmp_path) == []


def _path_with(tmp_path: Path, tools: list[str]) -> dict[str, str]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in tools:
        real = subprocess.run(["which", tool], capture_output=True, text=True, check=True)
        (bin_dir / tool).symlink_to(real.stdout.strip())
    return {**os.environ, "PATH": str(bin_dir)}


def test_missing_java_fails_clearly(tmp_path: Path) -> None:
    env = _path_with(tmp_path, ["prometheus", "mvn"])
    result = run_cli("sandbox", "up", "--dir", str(tmp_path / "sb"), env=env)
    assert "'java' is not on PATH" in _one_line_error(result)


def test_missing_maven_with_empty_jar_cache_fails_clearly(tmp_path: Path) -> None:
    env = _path_with(tmp_path, ["java", "prometheus"])
    env["REBALANCE_JAR_CACHE"] = str(tmp_path / "empty-cache")
    base = cluster.free_base_port(23090, 4)
    result = run_cli("sandbox", "up", "--base-port", str(base), "--dir", str(tmp_path / "sb"),
                     env=env)
    assert "'mvn' is not on PATH" in _one_line_error(result)
