"""A lease commit that fails without naming why: the committed lease decides who holds it."""

from __future__ import annotations

from typing import ClassVar

import pytest
from confluent_kafka import KafkaError, KafkaException

from kafka_rebalance.core.errors import LeaseRefused
from topology.kafka_lease import KafkaLeaseStore

UNNAMED = KafkaError(KafkaError.UNKNOWN, "EndTxn commit failed: Unknown broker error",
                     txn_requires_abort=True)


class Producer:
    def __init__(self, abort_fails: bool = False) -> None:
        self.aborted = 0
        self._abort_fails = abort_fails

    def abort_transaction(self, timeout: float) -> None:
        self.aborted += 1
        if self._abort_fails:
            raise KafkaException(KafkaError(KafkaError._FENCED, "fenced"))


def store(latest: bytes | None) -> KafkaLeaseStore:
    lease = KafkaLeaseStore("127.0.0.1:1")
    lease._latest = lambda: latest  # type: ignore[method-assign]
    return lease


def test_our_claim_committed_despite_the_error_is_held() -> None:
    producer = Producer()
    store(b"ours")._settle(producer, UNNAMED, b"ours")  # type: ignore[arg-type]
    assert producer.aborted == 1


@pytest.mark.parametrize("latest", [None, b"another run's claim"])
def test_a_claim_not_committed_is_refused_and_names_the_error(latest: bytes | None) -> None:
    with pytest.raises(LeaseRefused, match=r"Unknown broker error.*another run"):
        store(latest)._settle(Producer(abort_fails=True), UNNAMED, b"ours")  # type: ignore[arg-type]


def test_a_retriable_commit_error_commits_again_and_the_lease_read_back_decides() -> None:
    producer = Producer()
    lease = KafkaLeaseStore("127.0.0.1:1")
    committed: list[bytes] = []
    lease._latest = lambda: committed[-1] if committed else None  # type: ignore[method-assign]
    producer.commit_transaction = lambda timeout: committed.append(b"ours")  # type: ignore[attr-defined]
    plain = KafkaError(KafkaError._TIMED_OUT, "commit timed out", retriable=True)
    lease._settle(producer, plain, b"ours")  # type: ignore[arg-type]
    assert committed == [b"ours"]


def test_a_lease_that_cannot_be_read_back_is_a_cluster_error_not_a_claim() -> None:
    from kafka_rebalance.core.errors import ClusterError

    def unreadable() -> bytes | None:
        raise ClusterError("cannot read the run lease topic")
    lease = KafkaLeaseStore("127.0.0.1:1")
    lease._latest = unreadable  # type: ignore[method-assign]
    with pytest.raises(ClusterError, match="could not be read back"):
        lease._settle(Producer(), UNNAMED, b"ours")  # type: ignore[arg-type]


@pytest.mark.parametrize("error, outcome", [
    (KafkaError(KafkaError.PRODUCER_FENCED, "fenced", fatal=True), "LeaseRefused"),
    (KafkaError(KafkaError.CONCURRENT_TRANSACTIONS, "still ending"), "_Busy"),
    (KafkaError(KafkaError._TIMED_OUT, "timed out", retriable=True), "_Busy"),
    (KafkaError(KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, "not allowed", fatal=True),
     "ClusterError"),
])
def test_an_init_transactions_error_is_a_race_a_retry_or_a_cluster_error(
        error: KafkaError, outcome: str) -> None:
    from topology.kafka_lease import _refusal_or_busy

    found = _refusal_or_busy(error)
    assert type(found).__name__ == outcome
    if outcome == "ClusterError":
        assert "not allowed" in str(found) and "another run" not in str(found)


def test_a_lease_topic_made_moments_ago_is_switched_to_append_time(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The metadata answered does not list the topic yet (an older version made it moments
    ago, stamped with create time): the create is refused as existing, and the topic is
    switched to append time as any existing one (seen in CI: it was left on create time)."""
    from concurrent.futures import Future
    from types import SimpleNamespace

    import topology.kafka_lease as kafka_lease

    def done(value: object = None, error: KafkaError | None = None) -> Future[object]:
        future: Future[object] = Future()
        if error is None:
            future.set_result(value)
        else:
            future.set_exception(KafkaException(error))
        return future

    class Admin:
        stamp = "CreateTime"
        altered: ClassVar[list[str]] = []

        def __init__(self, conf: object) -> None:
            pass

        def list_topics(self, timeout: float) -> object:
            return SimpleNamespace(topics={}, brokers={1: None})

        def create_topics(self, topics: list[object]) -> dict[str, Future[object]]:
            return {kafka_lease.LEASE_TOPIC: done(
                error=KafkaError(KafkaError.TOPIC_ALREADY_EXISTS, "exists"))}

        def describe_configs(self, resources: list[object]) -> dict[object, Future[object]]:
            entry = SimpleNamespace(value=Admin.stamp)
            return {resources[0]: done({"message.timestamp.type": entry})}

        def incremental_alter_configs(self, resources: list[object]
                                      ) -> dict[object, Future[object]]:
            Admin.altered.append(resources[0].name)  # type: ignore[attr-defined]
            Admin.stamp = "LogAppendTime"
            return {resources[0]: done()}

    monkeypatch.setattr(kafka_lease, "AdminClient", Admin)
    monkeypatch.setattr(kafka_lease, "refused_everywhere", lambda servers: None)
    lease = KafkaLeaseStore("127.0.0.1:1")
    lease._ensure_topic()
    assert Admin.altered == [kafka_lease.LEASE_TOPIC] and Admin.stamp == "LogAppendTime"
