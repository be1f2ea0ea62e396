"""A metadata read that finds the cluster unreachable is asked again from new clients (up to
READ_TRIES in all): the client keeps asking the broker it picked, and a broker that has just
died times out a read that the live ones would answer; new clients may pick it again while
it is still registered."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException

import topology.kafka_admin as kafka_admin
from kafka_rebalance.core.errors import ClusterError
from topology.kafka_admin import KafkaClusterAdmin


class _Clients:
    """AdminClient stand-ins: the first `failing` clients time out their list_topics."""

    def __init__(self, failing: int, error: int = KafkaError._TIMED_OUT) -> None:
        self.failing, self.error, self.made, self.asked = failing, error, 0, 0

    def __call__(self, conf: dict[str, Any]) -> Any:
        self.made += 1
        number = self.made
        owner = self

        class Client:
            def list_topics(self, timeout: float) -> Any:
                owner.asked += 1
                if number <= owner.failing:
                    raise KafkaException(KafkaError(owner.error))
                partition = SimpleNamespace(id=0, replicas=[1, 2], isrs=[1, 2], leader=1)
                return SimpleNamespace(topics={"t": SimpleNamespace(error=None,
                                                                    partitions={0: partition})})

            def poll(self, timeout: float) -> int:
                return 0
        return Client()


@pytest.fixture
def quiet_network(monkeypatch: pytest.MonkeyPatch) -> None:
    """No TCP probes of the bootstrap list: every server 'accepts connections'."""
    monkeypatch.setattr(kafka_admin, "refused_everywhere", lambda servers: None)
    monkeypatch.setattr(kafka_admin, "refusing", lambda servers: ([], len(servers)))


@pytest.mark.usefixtures("quiet_network")
@pytest.mark.parametrize(("failing", "answered"), [(0, True), (1, True), (2, True), (3, False)])
def test_a_timed_out_metadata_read_is_asked_again_from_new_clients(
        monkeypatch: pytest.MonkeyPatch, failing: int, answered: bool) -> None:
    clients = _Clients(failing)
    monkeypatch.setattr(kafka_admin, "AdminClient", clients)
    admin = KafkaClusterAdmin("127.0.0.1:1,127.0.0.1:2")
    if answered:
        assert [p.partition for p in admin.partitions(["t"])] == [0]
    else:
        with pytest.raises(ClusterError, match="cannot reach Kafka"):
            admin.partitions(["t"])
    assert clients.asked == min(failing + 1, kafka_admin.READ_TRIES)  # never more


@pytest.mark.usefixtures("quiet_network")
def test_an_error_that_is_not_a_connection_failure_is_not_asked_again(
        monkeypatch: pytest.MonkeyPatch) -> None:
    clients = _Clients(1, KafkaError.TOPIC_AUTHORIZATION_FAILED)
    monkeypatch.setattr(kafka_admin, "AdminClient", clients)
    admin = KafkaClusterAdmin("127.0.0.1:1")
    with pytest.raises(ClusterError, match="could not list topics"):
        admin.partitions(["t"])
    assert clients.asked == 1
