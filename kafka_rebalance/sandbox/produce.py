"""`sandbox produce`: create a topic on the sandbox (if missing) and fill it with N MB.

For trying the tool without writing a producer: the data is incompressible (random bytes) and
spread evenly over the partitions, so partition sizes, rates and moves are what they look like.
`check_request` is pure and runs before the sandbox is looked up; `produce` is the adapter (it
imports the Kafka client when it runs, so the CLI starts without it).
"""

from __future__ import annotations

import math
import os
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kafka_rebalance.core.errors import ClusterError, InputError
from kafka_rebalance.sandbox.state import SandboxInfo
from topology.model import is_topic_name
from topology.units import size_text

MB = 1_000_000
"""--mb counts 10^6 bytes, as the tool's other MB units do."""
MESSAGE_BYTES = 100_000
"""Value size of each message: well under the brokers' 1 MB message limit."""
MAX_MB = 1_000_000
MAX_PARTITIONS = 1000
DEFAULT_PARTITIONS = 6
_RANDOM_POOL = 1 << 20
_ADMIN_TIMEOUT_S = 30.0


@dataclass(frozen=True)
class ProduceRequest:
    """What to produce: the topic, how much, and the layout of a topic created for it
    (None: the default partitions, and replication factor min(3, brokers))."""

    topic: str
    mb: int
    partitions: int | None = None
    replication_factor: int | None = None

    @property
    def total_bytes(self) -> int:
        return self.mb * MB


@dataclass(frozen=True)
class ProduceResult:
    """What `produce` did."""

    topic: str
    created: bool
    partitions: int
    replication_factor: int
    bytes_sent: int
    messages: int
    seconds: float
    notes: tuple[str, ...] = ()


def check_request(request: ProduceRequest) -> None:
    """The flags on their own (no sandbox needed): a topic name Kafka accepts, sizes in range."""
    topic = request.topic
    if not is_topic_name(topic):
        raise InputError(f"topic {topic!r} is not a name Kafka accepts: 1-249 characters of "
                         "a-z A-Z 0-9 . _ -, not '.' or '..'")
    if topic.startswith("__"):
        raise InputError(f"topic {topic!r}: names starting with '__' are Kafka's and this "
                         "tool's internal topics; choose another name")
    if not 1 <= request.mb <= MAX_MB:
        raise InputError(f"--mb must be between 1 and {MAX_MB}, got {request.mb}")
    if request.partitions is not None and not 1 <= request.partitions <= MAX_PARTITIONS:
        raise InputError(f"--partitions must be between 1 and {MAX_PARTITIONS}, "
                         f"got {request.partitions}")
    if request.replication_factor is not None and request.replication_factor < 1:
        raise InputError(f"--replication-factor must be at least 1, "
                         f"got {request.replication_factor}")


def message_sizes(total_bytes: int, message_bytes: int = MESSAGE_BYTES) -> list[int]:
    """Value sizes that add up to total_bytes exactly: full messages, then the remainder."""
    full, rest = divmod(total_bytes, message_bytes)
    return [message_bytes] * full + ([rest] if rest else [])


def needed_disk_bytes(total_bytes: int, replication_factor: int) -> int:
    """Disk the data takes on the sandbox's brokers: every replica stores every byte."""
    return total_bytes * replication_factor


def _layout(request: ProduceRequest, brokers: int) -> tuple[int, int]:
    partitions = request.partitions or DEFAULT_PARTITIONS
    rf = request.replication_factor or min(3, brokers)
    if rf > brokers:
        raise InputError(f"--replication-factor {rf} needs at least {rf} brokers; the sandbox "
                         f"has {brokers} (add some with `rebalance sandbox add-broker`)")
    return partitions, rf


def _existing(admin: Any, topic: str) -> tuple[int, int] | None:
    """(partitions, replication factor) of the topic, or None when it does not exist."""
    from confluent_kafka import KafkaException

    try:
        metadata = admin.list_topics(topic=topic, timeout=_ADMIN_TIMEOUT_S)
    except KafkaException as exc:
        raise ClusterError(f"cannot read the sandbox's topics: {exc}") from None
    found = metadata.topics.get(topic)
    if found is None or found.error is not None or not found.partitions:
        return None
    rf = max(len(p.replicas) for p in found.partitions.values())
    return len(found.partitions), rf


def _create(admin: Any, topic: str, partitions: int, rf: int) -> bool:
    """Create the topic; False when another client created it since we looked (the metadata
    we read may also lag a creation that just happened)."""
    from confluent_kafka import KafkaError, KafkaException
    from confluent_kafka.admin import NewTopic  # type: ignore[attr-defined]

    futures = admin.create_topics([NewTopic(topic, num_partitions=partitions,
                                            replication_factor=rf)],
                                  request_timeout=_ADMIN_TIMEOUT_S)
    try:
        futures[topic].result(timeout=_ADMIN_TIMEOUT_S)
    except KafkaException as exc:
        if exc.args and exc.args[0].code() == KafkaError.TOPIC_ALREADY_EXISTS:
            return False
        raise ClusterError(f"cannot create topic {topic!r} on the sandbox: {exc}") from None
    return True


def _existing_soon(admin: Any, topic: str) -> tuple[int, int] | None:
    """`_existing`, waiting a little for metadata to show a topic Kafka says exists."""
    deadline = time.monotonic() + _ADMIN_TIMEOUT_S
    while (found := _existing(admin, topic)) is None and time.monotonic() < deadline:
        time.sleep(0.2)
    return found


def _prepare(info: SandboxInfo, request: ProduceRequest) -> tuple[int, int, bool, list[str]]:
    """Create the topic when missing: (partitions, replication factor, created, notes)."""
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": info.bootstrap})
    existing = _existing(admin, request.topic)
    if existing is None:
        partitions, rf = _layout(request, len(info.brokers))
        _check_disk(info, request, rf)
        if _create(admin, request.topic, partitions, rf):
            return partitions, rf, True, []
        existing = _existing_soon(admin, request.topic) or (partitions, rf)
    partitions, rf = existing
    _check_disk(info, request, rf)
    notes = []
    if request.partitions not in (None, partitions):
        notes.append(f"topic {request.topic} exists with {partitions} partitions: "
                     f"--partitions {request.partitions} is not applied")
    if request.replication_factor not in (None, rf):
        notes.append(f"topic {request.topic} exists with replication factor {rf}: "
                     f"--replication-factor {request.replication_factor} is not applied")
    return partitions, rf, False, notes


def _check_disk(info: SandboxInfo, request: ProduceRequest, rf: int) -> None:
    needed = needed_disk_bytes(request.total_bytes, rf)
    free = shutil.disk_usage(info.dir).free
    if needed > 0.9 * free:
        raise InputError(f"--mb {request.mb} with replication factor {rf} needs about "
                         f"{size_text(needed)} in {info.dir}, and {size_text(free)} are "
                         "free; produce less")


def _send(producer: Any, topic: str, partition: int, value: bytes) -> None:
    """Queue one message, waiting for room when the local queue is full."""
    while True:
        try:
            producer.produce(topic, value=value, partition=partition)
            return
        except BufferError:
            producer.poll(0.5)


def produce(info: SandboxInfo, request: ProduceRequest,
            progress: Callable[[int, int], None] | None = None) -> ProduceResult:
    """Create the topic if missing, then produce request.mb MB of random bytes spread evenly
    over its partitions (acks=all); progress(bytes sent, total) every tenth or so."""
    from confluent_kafka import Producer

    check_request(request)
    started = time.monotonic()
    partitions, rf, created, notes = _prepare(info, request)
    producer = Producer({"bootstrap.servers": info.bootstrap, "acks": "all",
                         "linger.ms": 50, "compression.type": "none",
                         "queue.buffering.max.kbytes": 65536})
    failures: list[str] = []

    def delivered(error: Any, _message: Any) -> None:
        if error is not None and len(failures) < 3:
            failures.append(str(error))

    pool = os.urandom(_RANDOM_POOL + MESSAGE_BYTES)
    sizes = message_sizes(request.total_bytes)
    step = max(1, math.ceil(len(sizes) / 10))
    sent = 0
    for index, size in enumerate(sizes):
        offset = (index * 7919) % _RANDOM_POOL
        _send(producer, request.topic, index % partitions, pool[offset:offset + size])
        producer.poll(0)
        sent += size
        if progress is not None and (index + 1) % step == 0:
            progress(sent, request.total_bytes)
    left = producer.flush(max(60.0, request.total_bytes / (2 * MB)))
    if left or failures:
        reason = "; ".join(failures) or f"{left} message(s) not delivered in time"
        raise ClusterError(f"producing to {request.topic} on the sandbox failed: {reason}")
    return ProduceResult(request.topic, created, partitions, rf, sent, len(sizes),
                         time.monotonic() - started, tuple(notes))
