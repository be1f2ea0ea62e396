"""A lease commit that fails without naming why: the committed lease decides who holds it."""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaError, KafkaException

from core.errors import LeaseRefused
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


def test_an_error_that_needs_no_abort_aborts_nothing() -> None:
    producer = Producer()
    plain = KafkaError(KafkaError._TIMED_OUT, "commit timed out", retriable=True)
    with pytest.raises(LeaseRefused):
        store(None)._settle(producer, plain, b"ours")  # type: ignore[arg-type]
    assert producer.aborted == 0
