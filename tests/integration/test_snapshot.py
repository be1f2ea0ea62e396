"""`rebalance snapshot` against the real sandbox: replicas, racks, sizes and rates as reported.

Sizes are checked against the brokers' own log files on disk, rates against Prometheus; the
CLI runs in a subprocess exactly as a user runs it.
"""

from __future__ import annotations

import base64
import json
import os
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import requests
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from sandbox.state import SandboxInfo
from topology import promql
from topology.errors import ClusterError
from topology.kafka_admin import KafkaClusterAdmin
from topology.prom_source import PrometheusMetrics
from topology.security import ENV_KEYS, load_security

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
VALUE = b"v" * 1000


_CREATED: list[tuple[str, str]] = []  # (bootstrap, topic) to delete when the module ends


@pytest.fixture(scope="module", autouse=True)
def _delete_created_topics() -> Iterator[None]:
    """Leave the shared sandbox as found: later tests validate every partition on it."""
    yield
    by_bootstrap: dict[str, list[str]] = {}
    for bootstrap, topic in _CREATED:
        by_bootstrap.setdefault(bootstrap, []).append(topic)
    for bootstrap, topics in by_bootstrap.items():
        client = AdminClient({"bootstrap.servers": bootstrap})  # alive until answered
        for future in client.delete_topics(topics, operation_timeout=30).values():
            future.result(timeout=60)
    _CREATED.clear()


def create_topic(bootstrap: str, topic: str, assignment: list[list[int]]) -> None:
    """Create `topic` with an explicit replica assignment and wait until it is usable."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics([NewTopic(topic, len(assignment),
                                            replica_assignment=assignment)])
    futures[topic].result(timeout=30)
    _CREATED.append((bootstrap, topic))
    wait_in_sync(bootstrap, topic, len(assignment))


def wait_in_sync(bootstrap: str, topic: str, partitions: int, timeout_s: float = 30) -> None:
    """Wait until every partition of `topic` has a leader and a full ISR."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        meta = admin.list_topics(topic=topic, timeout=10).topics.get(topic)
        parts = meta.partitions if meta is not None else {}
        if len(parts) == partitions and all(
            p.leader >= 0 and sorted(p.isrs) == sorted(p.replicas) for p in parts.values()
        ):
            return
        time.sleep(0.3)
    raise AssertionError(f"{topic} did not get a full ISR within {timeout_s} s")


def produce(bootstrap: str, topic: str, counts: dict[int, int]) -> None:
    """Produce counts[p] 1000-byte records to partition p, acknowledged by all replicas."""
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5})
    for partition, count in counts.items():
        for _ in range(count):
            producer.produce(topic, value=VALUE, partition=partition)
            producer.poll(0)
    assert producer.flush(30) == 0, "records were left unacknowledged"


def disk_size(sandbox: SandboxInfo, broker_id: int, topic: str, partition: int) -> int:
    """The replica's size as its broker keeps it: the sum of its segment files."""
    log_dir = sandbox.dir / f"broker-{broker_id}" / "data" / f"{topic}-{partition}"
    return sum(f.stat().st_size for f in log_dir.glob("*.log"))


def run_cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "cli", *args], cwd=REPO, capture_output=True,
                          text=True, timeout=180, env=env)


def topic_partitions(doc: dict[str, Any], topic: str) -> dict[int, dict[str, Any]]:
    return {p["partition"]: p for p in doc["partitions"] if p["topic"] == topic}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


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


# -- a secured single-node cluster: SASL (PLAIN, SCRAM-SHA-256/512) and TLS listeners --------

SCRAM_USERS = {"SCRAM-SHA-256": ("app256", "app256-secret-pw"),
               "SCRAM-SHA-512": ("app512", "app512-secret-pw")}
PLAIN_USER = ("admin", "admin-secret-pw")


@dataclass(frozen=True)
class SecuredNode:
    sasl_bootstrap: str
    ssl_bootstrap: str
    ca_file: Path


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True, timeout=60)


def _make_certificates(directory: Path) -> None:
    """A throwaway CA and a server certificate for 127.0.0.1, as a PEM keystore."""
    _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out",
             "ca.pem", "-days", "2", "-subj", "/CN=rebalance-test-ca", cwd=directory)
    _openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "server.key", "-out",
             "server.csr", "-subj", "/CN=127.0.0.1", cwd=directory)
    (directory / "san.ext").write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    _openssl("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
             "-CAcreateserial", "-out", "server.crt", "-days", "2", "-extfile", "san.ext",
             cwd=directory)
    (directory / "keystore.pem").write_text(
        (directory / "server.key").read_text() + (directory / "server.crt").read_text())


def _secured_properties(directory: Path, sasl: int, ssl: int, controller: int) -> str:
    plain_users = f'username="{PLAIN_USER[0]}" password="{PLAIN_USER[1]}" ' \
                  f'user_{PLAIN_USER[0]}="{PLAIN_USER[1]}"'
    scram = "org.apache.kafka.common.security.scram.ScramLoginModule required;"
    lines = {
        "process.roles": "broker,controller", "node.id": "1",
        "controller.quorum.voters": f"1@127.0.0.1:{controller}",
        "listeners": f"SASL_PLAINTEXT://127.0.0.1:{sasl},SSL://127.0.0.1:{ssl},"
                     f"CONTROLLER://127.0.0.1:{controller}",
        "advertised.listeners": f"SASL_PLAINTEXT://127.0.0.1:{sasl},SSL://127.0.0.1:{ssl}",
        "listener.security.protocol.map":
            "SASL_PLAINTEXT:SASL_PLAINTEXT,SSL:SSL,CONTROLLER:PLAINTEXT",
        "controller.listener.names": "CONTROLLER",
        "inter.broker.listener.name": "SASL_PLAINTEXT",
        "sasl.mechanism.inter.broker.protocol": "PLAIN",
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config":
            f"org.apache.kafka.common.security.plain.PlainLoginModule required {plain_users};",
        "listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config": scram,
        "listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config": scram,
        "ssl.keystore.type": "PEM", "ssl.keystore.location": str(directory / "keystore.pem"),
        "log.dirs": str(directory / "data"), "offsets.topic.replication.factor": "1",
        "num.io.threads": "2", "num.network.threads": "2",
    }
    return "".join(f"{key}={value}\n" for key, value in lines.items())


def _wait_for_port(port: int, process: subprocess.Popen[bytes], timeout_s: float = 180) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        assert process.poll() is None, "the secured Kafka node exited; see its log"
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.5)
    raise AssertionError(f"the secured Kafka node did not listen on {port} in {timeout_s} s")


def _cluster_id() -> str:
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")


@pytest.fixture(scope="module")
def secured_node(sandbox: SandboxInfo, tmp_path_factory: pytest.TempPathFactory
                 ) -> Iterator[SecuredNode]:
    """One combined KRaft node with SASL_PLAINTEXT and SSL listeners, stopped afterwards."""
    directory = tmp_path_factory.mktemp("secured")
    _make_certificates(directory)
    sasl, ssl, controller = free_port(), free_port(), free_port()
    config = directory / "server.properties"
    config.write_text(_secured_properties(directory, sasl, ssl, controller))
    classpath = f"{sandbox.jar_dir}/*"
    scram = [arg for mech, (user, pw) in SCRAM_USERS.items()
             for arg in ("--add-scram", f"{mech}=[name={user},password={pw}]")]
    subprocess.run(["java", "-cp", classpath, "kafka.tools.StorageTool", "format", "-t",
                    _cluster_id(), "-c", str(config), *scram],
                   check=True, capture_output=True, timeout=120)
    with (directory / "kafka.log").open("wb") as log:
        process = subprocess.Popen(
            ["java", "-Xmx256m", "-XX:+UseSerialGC", "-cp", classpath, "kafka.Kafka",
             str(config)], stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        _wait_for_port(sasl, process)
        _wait_for_port(ssl, process)
        yield SecuredNode(f"127.0.0.1:{sasl}", f"127.0.0.1:{ssl}", directory / "ca.pem")
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)


@pytest.mark.parametrize("mechanism, user, password", [
    ("PLAIN", *PLAIN_USER), ("SCRAM-SHA-256", *SCRAM_USERS["SCRAM-SHA-256"]),
    ("SCRAM-SHA-512", *SCRAM_USERS["SCRAM-SHA-512"]),
])
def test_sasl_mechanisms_work_for_both_client_libraries(
    secured_node: SecuredNode, mechanism: str, user: str, password: str
) -> None:
    security = load_security(None, {
        "REBALANCE_SECURITY_PROTOCOL": "SASL_PLAINTEXT", "REBALANCE_SASL_MECHANISM": mechanism,
        "REBALANCE_SASL_USERNAME": user, "REBALANCE_SASL_PASSWORD": password})
    admin = KafkaClusterAdmin(secured_node.sasl_bootstrap, security, timeout_s=20)
    try:
        assert [b.id for b in admin.brokers()] == [1]  # confluent-kafka
        assert admin.list_partition_reassignments() == {}  # kafka-python
        assert isinstance(admin.log_dir_sizes([1]), dict)
    finally:
        admin.close()


def test_snapshot_over_sasl_from_a_command_config_file(
    secured_node: SecuredNode, tmp_path: Path
) -> None:
    user, password = SCRAM_USERS["SCRAM-SHA-256"]
    conf = tmp_path / "client.properties"
    conf.write_text("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-256\n"
                    "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule "
                    f'required username="{user}" password="{password}";\n')
    out = tmp_path / "secured.json"
    result = run_cli("snapshot", "--bootstrap", secured_node.sasl_bootstrap,
                     "--command-config", str(conf), "--out", str(out), env=_base_env())
    assert result.returncode == 0, result.stderr
    assert [b["id"] for b in json.loads(out.read_text())["brokers"]] == [1]
    assert password not in result.stdout + result.stderr + out.read_text()

    wrong = "wrong-" + password
    bad = run_cli("snapshot", "--bootstrap", secured_node.sasl_bootstrap, "--command-config",
                  str(conf), "--timeout", "5", "--out", str(tmp_path / "bad.json"),
                  env={**_base_env(), "REBALANCE_SASL_PASSWORD": wrong})
    assert bad.returncode == ClusterError.exit_code
    assert "refused the client" in bad.stderr and "SASL authentication" in bad.stderr
    assert wrong not in bad.stdout + bad.stderr and password not in bad.stderr


def test_tls_needs_the_ca_and_works_with_it(secured_node: SecuredNode) -> None:
    env = {"REBALANCE_SECURITY_PROTOCOL": "SSL", "REBALANCE_SSL_CAFILE": str(secured_node.ca_file)}
    admin = KafkaClusterAdmin(secured_node.ssl_bootstrap, load_security(None, env), timeout_s=20)
    try:
        assert [b.port for b in admin.brokers()] == [int(secured_node.ssl_bootstrap.split(":")[1])]
        assert admin.list_partition_reassignments() == {}
    finally:
        admin.close()
    untrusted = KafkaClusterAdmin(secured_node.ssl_bootstrap,
                                  load_security(None, {"REBALANCE_SECURITY_PROTOCOL": "SSL"}),
                                  timeout_s=5)
    with pytest.raises(ClusterError, match="certificate verify failed"):
        untrusted.brokers()


@pytest.mark.parametrize("name", sorted(promql.TEMPLATES))
def test_default_promql_templates_answer_per_broker_or_topic(sandbox: SandboxInfo,
                                                             name: str) -> None:
    """Each default query returns finite samples from the sandbox's real Prometheus."""
    metrics = PrometheusMetrics(sandbox.prometheus_url)
    first = sorted(b.id for b in sandbox.brokers)[0]
    for selector in ("", f'broker_id="{first}"'):
        samples = metrics.query(promql.render(promql.TEMPLATES[name], "1m", selector))
        assert samples, f"{name} returned no series (selector {selector!r})"
        if name.startswith(("broker_", "under_", "produce_")):
            brokers = {labels["broker_id"] for labels, _ in samples}
            assert brokers == {str(first)} if selector else str(first) in brokers
