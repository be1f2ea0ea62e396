"""Client security against a real secured Kafka node: SASL PLAIN/SCRAM-SHA-256/512 and TLS.

One combined KRaft node (the sandbox's jars) listens with SASL_PLAINTEXT and SSL; both client
libraries and `rebalance snapshot` must authenticate, and no secret may reach the output.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from kafka_rebalance.core.errors import ClusterError
from kafka_rebalance.sandbox.cluster import new_cluster_id
from kafka_rebalance.sandbox.state import SandboxInfo
from topology.kafka_admin import KafkaClusterAdmin
from topology.security import ENV_KEYS, load_security

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def run_cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "cli", *args], cwd=REPO, capture_output=True,
                          text=True, timeout=180, env=env)


def _base_env() -> dict[str, str]:
    """The environment without any REBALANCE_* security variables of the caller."""
    return {k: v for k, v in os.environ.items() if k not in ENV_KEYS}


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
    subprocess.run(["java", "-cp", classpath, "kafka.tools.StorageTool", "format", "--cluster-id",
                    new_cluster_id(), "-c", str(config), *scram],
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


