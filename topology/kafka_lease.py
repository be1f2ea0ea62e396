"""The run lease's home in the cluster: a compacted one-partition topic, claimed under one
Kafka transactional id.

Every claimant uses the same transactional id, so `init_transactions` fences every earlier
claimant and aborts its open transaction; the claimant then reads the latest lease value
(read_committed) and writes its claim in a transaction. Of two claims racing, the later
`init_transactions` fences the earlier, whose commit fails: it never believes it holds the
lease. Heartbeats and the release are claims too, that write only while the lease is still the
holder's own (a compare-and-set). The topic stamps each record with the broker's append time,
and each claim first writes a probe record in its transaction: the lease's age is the probe's
append time less the lease's, both on the cluster's clock, never the claimant's against the
holder's. A Kafka primitive rather than a lock file: the lease holds
against a second run on another machine too.
"""

from __future__ import annotations

import contextlib
import logging
import time
from typing import Any

from confluent_kafka import (
    OFFSET_BEGINNING,
    TIMESTAMP_LOG_APPEND_TIME,
    Consumer,
    KafkaError,
    KafkaException,
    Message,
    Producer,
)
from confluent_kafka import TopicPartition as CkTopicPartition
from confluent_kafka.admin import (  # type: ignore[attr-defined]
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewTopic,
)
from tenacity import (
    Retrying,
    retry_if_exception,
    retry_if_exception_type,
    retry_if_result,
    stop_after_attempt,
    stop_after_delay,
    wait_fixed,
    wait_random_exponential,
)

from kafka_rebalance.core.errors import ClusterError, LeaseRefused
from kafka_rebalance.core.ports import LeaseDecision
from topology.bootstrap import bootstrap_string, parse_bootstrap, refused_everywhere
from topology.security import SecuritySettings

LEASE_TOPIC = "__kafka_rebalance_lease"
LEASE_KEY = b"cluster"
PROBE_KEY = b"clock"  # the claim's probe: its append time is the cluster's "now"
APPEND_TIME = {"message.timestamp.type": "LogAppendTime"}


def _may_pass(exc: BaseException) -> bool:
    """A config change refused for now: retriable, or a topic the broker does not know yet."""
    if not isinstance(exc, KafkaException):
        return False
    error = exc.args[0]
    return bool(error.retriable()) or error.code() == KafkaError.UNKNOWN_TOPIC_OR_PART
TRANSACTIONAL_ID = "kafka-rebalance-lease"
# librdkafka reports a fenced claimant as a FATAL log line on stderr; the claim's outcome is
# what the operator reads, so the lease's clients log nowhere.
_QUIET = logging.getLogger("kafka_rebalance.lease.librdkafka")
_QUIET.addHandler(logging.NullHandler())
_QUIET.propagate = False
_FENCED = {KafkaError._FENCED, KafkaError.PRODUCER_FENCED, KafkaError.INVALID_PRODUCER_EPOCH}
_NOT_READY = {KafkaError._TIMED_OUT, KafkaError.CONCURRENT_TRANSACTIONS,
              KafkaError.COORDINATOR_LOAD_IN_PROGRESS, KafkaError.COORDINATOR_NOT_AVAILABLE,
              KafkaError.NOT_COORDINATOR, KafkaError.UNKNOWN_TOPIC_OR_PART,
              KafkaError.LEADER_NOT_AVAILABLE, KafkaError.NOT_LEADER_FOR_PARTITION}
CLAIM_ATTEMPTS = 4


class _Busy(Exception):
    """The broker asked to try the claim again (a transaction of a racing claimant still
    ending, a coordinator or a new topic's leader not ready yet); nothing was written."""


def _refusal_or_busy(error: KafkaError) -> Exception:
    """What an error of init_transactions means for the claim: fenced by a racing claimant
    (refused), worth another try, or a cluster error."""
    if error.code() in _FENCED:
        return _raced()
    if error.retriable() or error.code() in _NOT_READY:
        return _Busy(error.str())
    return ClusterError(f"cannot take the cluster's run lease: {error.str()}")


def _raced() -> LeaseRefused:
    return LeaseRefused("another run claimed this cluster at the same moment; nothing was "
                        "changed. Try again when it ends")


def _append_time(msg: Message) -> int | None:
    kind, at = msg.timestamp()
    return at if kind == TIMESTAMP_LOG_APPEND_TIME else None


class KafkaLeaseStore:
    """The LeaseStore of executor.lease on a real cluster."""

    def __init__(self, bootstrap: str, security: SecuritySettings | None = None,
                 timeout_s: float = 15.0, topic: str = LEASE_TOPIC) -> None:
        self._servers = parse_bootstrap(bootstrap)
        self._bootstrap = bootstrap_string(self._servers)
        self._conf: dict[str, Any] = {
            "bootstrap.servers": self._bootstrap, "log_level": 0, "logger": _QUIET,
            **(security or SecuritySettings()).confluent_config()}
        self._timeout = timeout_s
        self._topic = topic
        self._ready = False  # the topic is known to exist, stamped with append time

    def _ensure_topic(self) -> None:
        """The lease topic, compacted and stamped with the broker's append time (a topic made
        by an older version is switched to append time once)."""
        if self._ready:
            return
        refused = refused_everywhere(self._servers)
        if refused is not None:
            raise ClusterError(f"cannot reach the cluster at {self._bootstrap} to take its run "
                               f"lease: {refused}")
        admin = AdminClient(self._conf)
        try:
            metadata = admin.list_topics(timeout=self._timeout)
        except KafkaException as exc:
            raise ClusterError(f"cannot reach the cluster at {self._bootstrap} to take its run "
                               f"lease: {exc.args[0]}") from None
        if self._topic in metadata.topics:
            self._stamp_append_time(admin)
            self._ready = True
            return
        replicas = max(1, min(3, len(metadata.brokers)))
        topic = NewTopic(self._topic, 1, replicas,
                         config={"cleanup.policy": "compact", **APPEND_TIME})
        try:
            admin.create_topics([topic])[self._topic].result(self._timeout)
        except KafkaException as exc:
            if exc.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
                raise ClusterError(f"cannot create the run lease topic {self._topic}: "
                                   f"{exc.args[0]}") from None
            # the metadata answered did not list it yet (made moments ago, maybe by an older
            # version, with create time): stamped as any existing one
            self._stamp_append_time(admin)
        self._ready = True

    def _stamp_append_time(self, admin: AdminClient) -> None:
        """Set the existing topic to append time unless it is, and wait (up to the timeout)
        until a broker reads it back: KRaft brokers apply a config change after the
        controller acknowledges it, and a record written before then is stamped with its
        producer's clock. Where that is not allowed, the lease's age falls back to the
        holder's clock (the claim still works)."""
        resource = ConfigResource(ConfigResource.Type.TOPIC, self._topic)
        ((name, value),) = APPEND_TIME.items()
        try:
            if self._reads_append_time(admin):
                return
            entry = ConfigEntry(name, value, incremental_operation=AlterConfigOpType.SET)
            # a topic made moments ago may not be known yet to the broker asked: again
            Retrying(retry=retry_if_exception(_may_pass), stop=stop_after_delay(self._timeout),
                     wait=wait_fixed(0.2), reraise=True)(
                lambda: admin.incremental_alter_configs([ConfigResource(
                    ConfigResource.Type.TOPIC, self._topic, incremental_configs=[entry])]
                )[resource].result(self._timeout))
            Retrying(retry=retry_if_result(lambda applied: not applied),
                     stop=stop_after_delay(self._timeout), wait=wait_fixed(0.2),
                     retry_error_callback=lambda _: False)(self._reads_append_time, admin)
        except KafkaException:
            return

    def _reads_append_time(self, admin: AdminClient) -> bool:
        """Does the broker that answers say the topic is stamped with append time?"""
        resource = ConfigResource(ConfigResource.Type.TOPIC, self._topic)
        ((name, value),) = APPEND_TIME.items()
        configs = admin.describe_configs([resource])[resource].result(self._timeout)
        return configs.get(name) is not None and configs[name].value == value

    def _latest(self) -> bytes | None:
        """The newest committed lease value (None on an empty topic)."""
        return self._latest_stamped()[0]

    def _latest_stamped(self) -> tuple[bytes | None, int | None]:
        """The newest committed lease value and its broker append time in ms (None: empty
        topic, or a record not stamped by the broker)."""
        consumer = Consumer({**self._conf, "group.id": "kafka-rebalance-lease-reader",
                             "enable.auto.commit": False, "isolation.level": "read_committed"})
        try:
            whole = CkTopicPartition(self._topic, 0, OFFSET_BEGINNING)
            low, high = consumer.get_watermark_offsets(whole, timeout=self._timeout,
                                                       cached=False)
            if high <= low:
                return None, None
            consumer.assign([whole])
            latest: bytes | None = None
            stamped: int | None = None
            deadline = time.monotonic() + self._timeout
            while True:
                msg = consumer.poll(0.2)
                if msg is not None and msg.error() is None and msg.key() == LEASE_KEY:
                    latest, stamped = msg.value(), _append_time(msg)
                position = consumer.position([CkTopicPartition(self._topic, 0)])[0].offset
                if position >= high:
                    return latest, stamped
                if time.monotonic() > deadline:
                    raise ClusterError(f"cannot read the run lease topic {self._topic} to its "
                                       f"end within {self._timeout:g} s; retry")
        finally:
            consumer.close()

    def claim(self, decide: LeaseDecision) -> None:
        self._ensure_topic()
        try:
            for attempt in Retrying(retry=retry_if_exception_type(_Busy), reraise=True,
                                    stop=stop_after_attempt(CLAIM_ATTEMPTS),
                                    wait=wait_random_exponential(multiplier=0.5, max=4)):
                with attempt:
                    self._claim_once(decide)
        except _Busy as busy:
            raise ClusterError(f"cannot take the cluster's run lease: {busy}; nothing "
                               "was changed, try again") from None

    def _claim_once(self, decide: LeaseDecision) -> None:
        """One claim: fence every earlier claimant, read the lease, stamp the cluster's time
        with a probe and write ours in a transaction. _Busy when the broker said to try again
        before anything was committed."""
        producer = Producer({**self._conf, "transactional.id": TRANSACTIONAL_ID,
                             "transaction.timeout.ms": int(self._timeout * 2000)})
        try:
            producer.init_transactions(self._timeout)
        except KafkaException as exc:
            raise _refusal_or_busy(exc.args[0]) from None
        try:
            latest, written = self._latest_stamped()
        except (KafkaException, ClusterError) as exc:
            raise _Busy(str(exc)) from None
        try:
            producer.begin_transaction()
            now = self._probe(producer)
        except KafkaException as exc:
            self._abort(producer)
            error = exc.args[0]
            raise (_raced() if error.code() in _FENCED else _Busy(error.str())) from None
        try:
            value = decide(latest, None if now is None or written is None
                           else (now - written) / 1000.0)
        except BaseException:
            self._abort(producer)
            raise
        try:
            producer.produce(self._topic, key=LEASE_KEY, value=value, partition=0)
            producer.commit_transaction(self._timeout)
        except KafkaException as exc:
            error = exc.args[0]
            if error.code() in _FENCED:
                raise _raced() from None
            self._settle(producer, error, value)

    def _probe(self, producer: Producer) -> int | None:
        """Write the probe in the open transaction and wait for it: its broker append time in
        ms (None when the broker does not stamp it). KafkaException when it was not written."""
        stamps: list[Message] = []
        producer.produce(self._topic, key=PROBE_KEY, value=b"", partition=0,
                         on_delivery=lambda error, msg: stamps.append(msg))
        try:
            producer.flush(self._timeout)
        except SystemError as exc:
            # fenced mid-flush, confluent-kafka reports the fatal error beside the delivery
            # callback and Python sees a SystemError whose context is the KafkaException
            if isinstance(exc.__context__, KafkaException):
                raise exc.__context__ from None
            raise
        if not stamps:
            raise KafkaException(KafkaError(KafkaError._TIMED_OUT, "clock probe not written"))
        if stamps[0].error() is not None:
            raise KafkaException(stamps[0].error())
        return _append_time(stamps[0])

    def _abort(self, producer: Producer) -> None:
        with contextlib.suppress(KafkaException):
            producer.abort_transaction(self._timeout)

    def _settle(self, producer: Producer, error: KafkaError, value: bytes) -> None:
        """A commit whose outcome the broker did not tell (a racing claimant's fence can end
        ours with an unnamed broker error): end what is still open, then the committed
        lease says who holds it. Ours only if it is byte for byte the claim we wrote."""
        retry = error.retriable() and not error.txn_requires_abort()
        if not (retry and self._committed_again(producer)):
            with contextlib.suppress(KafkaException):
                # fenced meanwhile: the fencing claimant aborted it for us; else abort it here
                producer.abort_transaction(self._timeout)
        try:
            held = self._latest()
        except (KafkaException, ClusterError) as exc:
            raise ClusterError(f"the run lease's claim ended with {error.str()} and the lease "
                               f"could not be read back ({exc}); nothing else was changed. "
                               "Run `rebalance status`, then try again") from None
        if held != value:
            raise LeaseRefused(f"the run lease was not taken ({error.str()}): most likely "
                               "another run claimed this cluster at the same moment. Nothing "
                               "was changed; try again when it ends") from None

    def _committed_again(self, producer: Producer) -> bool:
        """A second commit after a retriable error (it may go through now)."""
        try:
            producer.commit_transaction(self._timeout)
        except KafkaException:
            return False
        return True

    def close(self) -> None:
        """Nothing stays open between claims (each claim makes and drops its producer)."""
