"""`sandbox up` prints the loop, `sandbox produce` fills a topic, `sandbox down --purge` deletes
the data: on a real 2-broker sandbox of its own (started and stopped by the CLI here)."""

from __future__ import annotations

import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient

from kafka_rebalance.sandbox import cluster
from kafka_rebalance.sandbox.state import MARKER_FILE

pytestmark = pytest.mark.integration

REBALANCE = str(Path(sys.executable).parent / "rebalance")


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([REBALANCE, *args], capture_output=True, text=True, timeout=600,
                          check=False)


def _bytes_in_topic(bootstrap: str, topic: str, partitions: int) -> tuple[int, int]:
    """(messages, value bytes) in the topic, read back with a consumer."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"probe-{uuid.uuid4()}",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    ends = {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=30)[1]
            for p in range(partitions)}
    messages = value_bytes = 0
    while messages < sum(ends.values()):
        message = consumer.poll(10.0)
        assert message is not None, f"read {messages} of {sum(ends.values())} messages"
        assert message.error() is None, message.error()
        messages += 1
        value_bytes += len(message.value() or b"")
    consumer.close()
    return messages, value_bytes


@pytest.fixture(scope="module")
def own_sandbox(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A dir `up` creates (inside a temp dir that also holds a file of the user's)."""
    parent = tmp_path_factory.mktemp("produce-purge")
    (parent / "mine.txt").write_text("not the sandbox's")
    sandbox_dir = parent / "sb"
    yield sandbox_dir
    cluster.down(sandbox_dir)


def test_up_produce_and_purge(own_sandbox: Path) -> None:
    base = cluster.free_base_port(26090, 4)
    started = run_cli("sandbox", "up", "--brokers", "2", "--racks", "2", "--base-port",
                      str(base), "--dir", str(own_sandbox))
    assert started.returncode == 0, started.stderr
    bootstrap = f"127.0.0.1:{base + 2},127.0.0.1:{base + 3}"
    # The loop, with this sandbox's own ports, dir and capacities file.
    assert f"rebalance sandbox produce orders --mb 100 --partitions 12 --dir {own_sandbox}" \
        in started.stdout
    assert (f"rebalance snapshot --bootstrap {bootstrap} --prometheus http://127.0.0.1:{base} "
            f"--capacities {own_sandbox / 'capacities.yaml'} --out cluster.json") in started.stdout
    assert "rebalance plan --snapshot cluster.json --add-broker 3 --out plan.json" \
        in started.stdout
    assert f"rebalance sandbox down --dir {own_sandbox}" in started.stdout
    assert (own_sandbox / "capacities.yaml").is_file()

    produced = run_cli("sandbox", "produce", "orders", "--mb", "3", "--partitions", "4",
                       "--replication-factor", "2", "--dir", str(own_sandbox))
    assert produced.returncode == 0, produced.stderr
    assert "produced 3.0MB in 30 messages to orders (created, 4 partitions" in produced.stdout
    admin = AdminClient({"bootstrap.servers": bootstrap})
    topic = admin.list_topics(topic="orders", timeout=30).topics["orders"]
    assert len(topic.partitions) == 4
    assert all(len(p.replicas) == 2 for p in topic.partitions.values())
    assert _bytes_in_topic(bootstrap, "orders", 4) == (30, 3_000_000)

    # Again into the existing topic: more data, the differing flag is named, not applied.
    again = run_cli("sandbox", "produce", "orders", "--mb", "1", "--partitions", "8",
                    "--dir", str(own_sandbox))
    assert again.returncode == 0, again.stderr
    assert "exists with 4 partitions: --partitions 8 is not applied" in again.stderr
    assert _bytes_in_topic(bootstrap, "orders", 4) == (40, 4_000_000)

    # A mistyped dir is an error while this sandbox runs, and names it.
    wrong = run_cli("sandbox", "down", "--dir", str(own_sandbox.parent / "sbx"))
    assert wrong.returncode == 7, wrong.stderr
    assert "; running: " in wrong.stderr  # this sandbox (and any other on the machine)
    assert cluster.sandbox_pids(own_sandbox)

    data_bytes = sum(f.stat().st_size for f in own_sandbox.rglob("*") if f.is_file())
    assert data_bytes > 2 * 4_000_000  # every replica of the data
    purged = run_cli("sandbox", "down", "--purge", "--dir", str(own_sandbox))
    assert purged.returncode == 0, purged.stderr
    assert "stopped broker-1, broker-2, controller, prometheus" in purged.stdout
    assert "(removed)" in purged.stdout
    assert cluster.sandbox_pids(own_sandbox) == []
    assert not own_sandbox.exists()  # `up` created it: nothing of it is left
    assert sorted(p.name for p in own_sandbox.parent.iterdir()) == ["mine.txt"]
    assert not (own_sandbox.parent / MARKER_FILE).exists()
    # Nothing left to take down.
    assert run_cli("sandbox", "down", "--dir", str(own_sandbox)).returncode == 7

