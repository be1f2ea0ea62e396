"""Model validation: constructors reject inconsistent values with actionable messages."""

from __future__ import annotations

import pytest

from kafka_rebalance.core.errors import InputError
from topology.model import (
    Broker,
    Capacity,
    Partition,
    TopicPartition,
    Topology,
    replace_replicas,
)

CAP = Capacity(1.0, 1.0, 1.0)


def test_topology_sorts_brokers_and_partitions() -> None:
    t = Topology(
        (Broker(3, "a", CAP), Broker(1, "b", CAP)),
        (Partition("b", 0, (1,)), Partition("a", 1, (3,)), Partition("a", 0, (1,))),
    )
    assert t.broker_ids == (1, 3)
    assert [p.name for p in t.partitions] == ["a-0", "a-1", "b-0"]


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: Partition("t", 0, (1, 1)), "repeats a broker"),
        (lambda: Partition("t", 0, ()), "empty"),
        (lambda: Partition("t", 0, (1,), size_bytes=-1), "negative"),
        (lambda: Partition("t", 0, (1,), bytes_in_per_sec=-1.0), "must not be negative"),
        (lambda: Capacity(0.0, 1.0, 1.0), "disk_bytes must be a positive"),
        (lambda: Partition("a b", 0, (1,)), "the topic must be a Kafka topic name"),
        (lambda: Partition("..", 0, (1,)), "the topic must be a Kafka topic name"),
        (lambda: Partition("\udc80", 0, (1,)), "the topic must be a Kafka topic name"),
        (lambda: Partition("x" * 250, 0, (1,)), "the topic must be a Kafka topic name"),
        (lambda: Partition("t", 2**31, (1,)), "index must be an integer from 0 to 2147483647"),
        (lambda: Partition("t", True, (1,)), "index must be an integer"),
        (lambda: Broker(2**63, "a", CAP), "broker id must be an integer from 0 to 2147483647"),
        (lambda: Broker(True, "a", CAP), "broker id must be an integer"),
        (lambda: Topology((Broker(1, "a", CAP),), (Partition("t", 0, (2,)),)), "unknown broker 2"),
        (lambda: Topology((Broker(1, "a", CAP), Broker(1, "b", CAP)), ()), "more than once"),
        (
            lambda: Topology((Broker(1, "a", CAP),), (Partition("t", 0, (1,)),) * 2),
            "t-0 is listed more than once",
        ),
        (lambda: Topology((), ()), "no brokers"),
    ],
)
def test_invalid_values_are_rejected(build: object, message: str) -> None:
    with pytest.raises(InputError, match=message):
        build()  # type: ignore[operator]


def test_fingerprint_tracks_replicas_not_sizes() -> None:
    brokers = (Broker(1, "a", CAP), Broker(2, "b", CAP))
    t1 = Topology(brokers, (Partition("t", 0, (1, 2), size_bytes=5),))
    t2 = Topology(brokers, (Partition("t", 0, (1, 2), size_bytes=99),))
    t3 = Topology(brokers, (Partition("t", 0, (2, 1), size_bytes=5),))
    assert t1.fingerprint() == t2.fingerprint()
    assert t1.fingerprint() != t3.fingerprint()


def test_replace_replicas_returns_new_topology() -> None:
    brokers = (Broker(1, "a", CAP), Broker(2, "b", CAP), Broker(3, "c", CAP))
    t = Topology(brokers, (Partition("t", 0, (1, 2), size_bytes=5),))
    moved = replace_replicas(t, {TopicPartition("t", 0): (3, 2)})
    assert moved.partitions[0].replicas == (3, 2)
    assert moved.partitions[0].size_bytes == 5
    assert t.partitions[0].replicas == (1, 2)


def test_every_topology_problem_is_named() -> None:
    with pytest.raises(InputError) as caught:
        Topology((Broker(1, "a", CAP), Broker(1, "b", CAP)),
                 (Partition("t", 0, (2,)), Partition("t", 0, (3,))))
    assert str(caught.value) == ("4 problems: broker 1 is listed more than once; partition t-0: "
                                 "replica on unknown broker 2; partition t-0 is listed more than "
                                 "once; partition t-0: replica on unknown broker 3")


def test_the_fingerprint_of_a_valid_topology_encodes() -> None:
    """Topic names are ASCII by Kafka's rule, so the fingerprint (UTF-8) never fails."""
    topology = Topology((Broker(2**31 - 1, "a", CAP),),
                        (Partition("x" * 249, 2**31 - 1, (2**31 - 1,)),))
    assert topology.fingerprint().startswith("sha256:")
