"""Creating the produce topic: a topic another client created since we looked is not an
error (the sandbox tests create a topic, then produce to it at once from two threads)."""

from __future__ import annotations

from concurrent.futures import Future
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException

from kafka_rebalance.core.errors import ClusterError
from kafka_rebalance.sandbox.produce import _create


class Admin:
    def __init__(self, error: int | None) -> None:
        self.error = error

    def create_topics(self, topics: list[Any], request_timeout: float) -> dict[str, Future[None]]:
        future: Future[None] = Future()
        if self.error is None:
            future.set_result(None)
        else:
            future.set_exception(KafkaException(KafkaError(self.error)))
        return {topics[0].topic: future}


def test_created_already_exists_and_other_errors() -> None:
    assert _create(Admin(None), "t", 1, 1) is True
    assert _create(Admin(KafkaError.TOPIC_ALREADY_EXISTS), "t", 1, 1) is False
    with pytest.raises(ClusterError, match="cannot create topic 't' on the sandbox"):
        _create(Admin(KafkaError.INVALID_REPLICATION_FACTOR), "t", 1, 3)
