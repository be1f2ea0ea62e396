"""Topic helpers shared by the integration tests: create a topic with an explicit replica
assignment (deleted again when the test module ends), produce to it, wait for a full ISR, read
replica sizes from the brokers' log files.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Callable

from confluent_kafka import KafkaError, KafkaException, Producer
from confluent_kafka.admin import AdminClient, ConfigResource, ConfigSource, NewTopic, ResourceType

from kafka_rebalance.sandbox.state import SandboxInfo

RECORD = b"v" * 1000

CREATED: list[tuple[str, str]] = []
"""(bootstrap, topic) of every topic create_topic made; conftest deletes them per module."""


def delete_created_topics() -> None:
    """Leave the shared sandbox as found: later tests validate every partition on it."""
    by_bootstrap: dict[str, list[str]] = {}
    for bootstrap, topic in CREATED:
        by_bootstrap.setdefault(bootstrap, []).append(topic)
    for bootstrap, topics in by_bootstrap.items():
        client = AdminClient({"bootstrap.servers": bootstrap})  # alive until answered
        for future in client.delete_topics(topics, operation_timeout=30).values():
            future.result(timeout=60)
    CREATED.clear()


def wait_for(what: str, check: Callable[[], bool], timeout_s: float = 90,
             every_s: float = 0.25) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        assert time.monotonic() < deadline, f"timed out after {timeout_s} s waiting for {what}"
        time.sleep(every_s)


def raw_config(bootstrap: str, resource: ConfigResource, name: str) -> tuple[str | None, int]:
    """(value, source) of one config straight from the broker, bypassing the adapter."""
    raw = AdminClient({"bootstrap.servers": bootstrap})
    entries = raw.describe_configs([resource])[resource].result(timeout=30)
    entry = entries.get(name)
    if entry is None:
        return None, ConfigSource.UNKNOWN_CONFIG.value
    source = entry.source.value if isinstance(entry.source, ConfigSource) else entry.source
    return entry.value, int(source)


def create_topics(bootstrap: str, topics: list[NewTopic], attempts: int = 3) -> None:
    """Create `topics` and wait for the controller's answer. A request the client itself lost
    (a local error, such as librdkafka dropping a bootstrap connection the request was on:
    "broker handle destroyed", seen once on a sandbox just started) is sent again from a new
    client; a topic the lost request did create counts as created."""
    for attempt in range(1, attempts + 1):
        raw = AdminClient({"bootstrap.servers": bootstrap})
        futures = raw.create_topics(topics)
        lost = []
        for name, future in futures.items():
            try:
                future.result(timeout=30)
            except KafkaException as exc:
                error = exc.args[0] if exc.args else None
                local = isinstance(error, KafkaError) and error.code() < 0
                exists = (isinstance(error, KafkaError)
                          and error.code() == KafkaError.TOPIC_ALREADY_EXISTS and attempt > 1)
                if exists:
                    continue
                if not local or attempt == attempts:
                    raise
                lost.append(name)
        if not lost:
            return
        topics = [t for t in topics if t.topic in lost]
        time.sleep(1)


def create_topic(bootstrap: str, topic: str, assignment: list[list[int]]) -> None:
    """Create `topic` with an explicit replica assignment; wait for a full ISR and until every
    broker can describe it."""
    create_topics(bootstrap, [NewTopic(topic, len(assignment), replica_assignment=assignment)])
    CREATED.append((bootstrap, topic))
    wait_in_sync(bootstrap, topic, len(assignment))
    wait_for(f"every broker to know {topic}", lambda: _describable(bootstrap, topic), 30)


def _describable(bootstrap: str, topic: str) -> bool:
    """Whether the topic's configs can be described (brokers learn new topics a bit later)."""
    try:
        raw_config(bootstrap, ConfigResource(ResourceType.TOPIC, topic), "retention.ms")
    except KafkaException:
        return False
    return True


def wait_in_sync(bootstrap: str, topic: str, partitions: int) -> None:
    """Wait until every partition of `topic` has a leader and a full ISR."""
    raw = AdminClient({"bootstrap.servers": bootstrap})

    def in_sync() -> bool:
        meta = raw.list_topics(topic=topic, timeout=10).topics.get(topic)
        parts = meta.partitions.values() if meta is not None else []
        return len(parts) == partitions and all(
            p.leader >= 0 and sorted(p.isrs) == sorted(p.replicas) for p in parts)

    wait_for(f"a full ISR on {topic}", in_sync, 30)


def produce(bootstrap: str, topic: str, counts: dict[int, int]) -> None:
    """Produce counts[p] 1000-byte records to partition p, acknowledged by all replicas."""
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5})
    for partition, count in counts.items():
        for _ in range(count):
            producer.produce(topic, value=RECORD, partition=partition)
            producer.poll(0)
    assert producer.flush(30) == 0, "records were left unacknowledged"


def disk_size(sandbox: SandboxInfo, broker_id: int, topic: str, partition: int) -> int:
    """The replica's size as its broker keeps it: the sum of its segment files."""
    log_dir = sandbox.dir / f"broker-{broker_id}" / "data" / f"{topic}-{partition}"
    return sum(f.stat().st_size for f in log_dir.glob("*.log"))


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
